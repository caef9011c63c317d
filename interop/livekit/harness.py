#!/usr/bin/env python3
"""Run one scripted scenario against the installed livekit-agents, offline, and record it.

    python interop/livekit/harness.py --scenario NAME --out DIR
    python interop/livekit/harness.py --list

Writes ``DIR/livekit-agents@VERSION/NAME.events.jsonl`` (a meta line, then every event the
``AgentSession`` emitted, one ``json.dumps(ev.model_dump(mode="json"))`` per line, in emission
order) and ``NAME.report.jsonl`` (a meta line, then the ``SessionReport`` as
``JobContext.make_session_report`` builds it, ``json.dumps(report.to_dict(), default=str)``).

One scenario per process: a planted bug's patch (``patches.PATCHES``) stays inside it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import types
import typing
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import corpus  # noqa: E402
import fakes  # noqa: E402
import patches  # noqa: E402
import script  # noqa: E402
from livekit.agents import Agent, AgentSession, RunContext, function_tool  # noqa: E402,F401
from livekit.agents import __version__ as LK_VERSION  # noqa: E402
from livekit.agents.job import JobContext  # noqa: E402
from livekit.agents.voice import events as lk_events  # noqa: E402
from livekit.agents.voice.transcription import TranscriptSynchronizer  # noqa: E402

log = logging.getLogger("interop.harness")

# every event type the version's AgentSession declares
EVENT_TYPES: tuple[str, ...] = typing.get_args(lk_events.EventTypes)

# LiveKit's legacy flat option names -> keys of TurnHandlingOptions["interruption"]
_INTERRUPTION_KEYS = {
    "allow_interruptions": "enabled",
    "min_interruption_duration": "min_duration",
    "min_interruption_words": "min_words",
    "false_interruption_timeout": "false_interruption_timeout",
    "resume_false_interruption": "resume_false_interruption",
    "discard_audio_if_uninterruptible": "discard_audio_if_uninterruptible",
}


def version_tuple(v: str = LK_VERSION) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split(".")[:3] if p.isdigit())


# -- agents and tools ----------------------------------------------------------------------


class Assistant(Agent):
    """The agent every scenario starts with (its id is ``assistant``)."""


def _agent_class(name: str) -> type[Agent]:
    spec = script.AGENTS[name]

    def __init__(self: Agent) -> None:
        Agent.__init__(self, instructions=spec["instructions"])

    async def on_enter(self: Agent) -> None:
        self.session.generate_reply(instructions=spec["on_enter"])

    return type(spec["class_name"], (Agent,), {"__init__": __init__, "on_enter": on_enter})


def _build_tool(spec: script.Tool) -> Any:
    async def tool(context: RunContext, query: str) -> Any:
        await asyncio.sleep(spec.duration)
        if spec.handoff_to is not None:
            return _agent_class(spec.handoff_to)()
        return spec.result

    return function_tool(tool, name=spec.name, description=spec.description)


# -- the session ---------------------------------------------------------------------------


def build_session(sc: script.Scenario, f: fakes.Fakes) -> AgentSession:
    interruption: dict[str, Any] = {"mode": "vad"}
    kwargs: dict[str, Any] = {}
    for name, value in sc.options.items():
        if name in _INTERRUPTION_KEYS:
            interruption[_INTERRUPTION_KEYS[name]] = value
        elif name == "user_away_timeout":
            kwargs["user_away_timeout"] = value
        elif name == "aec_warmup_duration":
            pass
        else:
            raise ValueError(f"{sc.name}: unknown option {name}")
    # no echo reaches this harness's microphone: the AEC warm-up (which ignores the user for
    # the first seconds of agent speech) is off unless a scenario keeps the default
    aec = sc.options.get("aec_warmup_duration")
    if aec != "default":
        kwargs["aec_warmup_duration"] = aec

    return AgentSession(
        vad=f.vad,
        stt=f.stt,
        llm=f.llm,
        tts=f.tts,
        turn_handling={"turn_detection": "vad", "interruption": interruption},
        **kwargs,
    )


def configured_options(session: AgentSession) -> dict[str, Any]:
    """The interruption options the session runs with, read back from it."""
    i = session.options.interruption
    return {
        "allow_interruptions": i["enabled"],
        "min_interruption_duration": i["min_duration"],
        "min_interruption_words": i["min_words"],
        "false_interruption_timeout": i["false_interruption_timeout"],
        "resume_false_interruption": i["resume_false_interruption"],
        "discard_audio_if_uninterruptible": i["discard_audio_if_uninterruptible"],
        "user_away_timeout": session.options.user_away_timeout,
        "aec_warmup_duration": session.options.aec_warmup_duration,
    }


def make_session_report(session: AgentSession) -> Any:
    """Call the version's own ``JobContext.make_session_report`` on a stand-in job context.

    There is no job here: the job id, room sid and room name are fixed placeholders, the
    agent name is empty and there are no tags; everything else comes from the session, as
    in a worker.
    """
    room = types.SimpleNamespace(sid="RM_interop", name="interop-room")
    job = types.SimpleNamespace(id="AJ_interop", room=room, agent_name="")
    ctx = types.SimpleNamespace(
        job=job,
        _tagger=types.SimpleNamespace(tags=set()),
        _primary_agent_session=session,
    )
    return JobContext.make_session_report(ctx, session)  # type: ignore[arg-type]


def _dump(event_type: str, ev: Any) -> str:
    """An event's line, and on ``speech_created`` the speech's own ``allow_interruptions``, which
    ``model_dump`` leaves out (``SpeechCreatedEvent.speech_handle`` is ``exclude=True``), as an
    app that logs it states it (README, docs/MAPPING.md). The flag is the handle's at its
    creation: ``say()``/``generate_reply()``'s argument, else the agent's or the session's
    (``AgentActivity.say``, ``_generate_reply``); no scenario changes it later (no tool calls
    ``RunContext.disallow_interruptions()``)."""
    if hasattr(ev, "model_dump"):
        line = ev.model_dump(mode="json")
        if event_type == "speech_created":
            line["allow_interruptions"] = ev.speech_handle.allow_interruptions
        return json.dumps(line)
    # debug_message carries a protobuf, not a pydantic model (never seen offline)
    from google.protobuf.json_format import MessageToDict

    return json.dumps({"type": event_type, "protobuf": MessageToDict(ev)})


async def run(sc: script.Scenario) -> tuple[list[str], Any, dict[str, Any], list[str]]:
    errors: list[str] = []
    clock = fakes.Clock()
    f = fakes.Fakes(
        clock=clock,
        vad=fakes.EnergyVAD(),
        stt=fakes.ScriptedSTT(clock, sc.utterances),
        llm=fakes.ScriptedLLM(clock, sc.replies, errors),
        tts=fakes.ScriptedTTS(seconds_per_word=sc.seconds_per_word),
        audio_input=fakes.ScriptedAudioInput(clock, sc.utterances),
        audio_sink=fakes.PlayoutSink(),
        text_sink=fakes.TextSink(),
        errors=errors,
    )

    session = build_session(sc, f)
    options = configured_options(session)

    lines: list[str] = []
    for event_type in EVENT_TYPES:
        session.on(event_type, lambda ev, _t=event_type: lines.append(_dump(_t, ev)))

    # a room's audio output with synchronized transcription, as RoomIO sets it up by default
    sync = TranscriptSynchronizer(next_in_chain_audio=f.audio_sink, next_in_chain_text=f.text_sink)
    session.input.audio = f.audio_input
    session.output.audio = sync.audio_output
    session.output.transcription = sync.text_output

    agent = Assistant(
        instructions="You are a helpful voice assistant.",
        tools=[_build_tool(t) for t in sc.tools],
    )
    await session.start(agent)
    clock.start()

    async def act(a: script.Action) -> None:
        await clock.sleep_until(a.at)
        kw: dict[str, Any] = {}
        if a.allow_interruptions is not None:
            kw["allow_interruptions"] = a.allow_interruptions
        if a.kind == "say":
            session.say(a.text, **kw)
        elif a.kind == "generate_reply":
            session.generate_reply(instructions=a.text, **kw)
        else:
            raise ValueError(a.kind)

    action_tasks = [asyncio.create_task(act(a)) for a in sc.actions]
    await clock.sleep_until(sc.end)
    for t in action_tasks:
        await t

    if session.agent_state != "listening" or session.user_state == "speaking":
        errors.append(
            f"not idle at the scripted end ({sc.end} s): agent {session.agent_state}, "
            f"user {session.user_state}"
        )

    await session.aclose()
    await sync.aclose()
    await f.audio_sink.aclose()

    report = make_session_report(session)
    log.info("llm keys: %s", f.llm.keys)
    log.info("sink journal: %s", f.audio_sink.journal)
    log.info("text journal: %s", f.text_sink.journal)
    return lines, report, options, errors


def meta(sc: script.Scenario, options: dict[str, Any], line: int | None) -> dict[str, Any]:
    """The meta line of a log of `sc`; `line` None for a bug's session report that cannot show
    it (`Bug.report_shows`): accepted, the bug's rule not judged."""
    shown = sc.bug is not None and line is not None
    m: dict[str, Any] = {
        "dialect": "livekit-agents",
        "version": LK_VERSION,
        "options": options,
        "expect": "rejected" if shown else "accepted",
        "story": sc.story,
    }
    if not shown:
        m["source"] = f"interop/livekit scenario {sc.name}"
    else:
        m["invariant"] = sc.bug.invariant
        m["line"] = line
        m["patch"] = patches.PATCHES[sc.bug.patch].__doc__.strip()
        m["source"] = sc.bug.source
    return {"meta": corpus.nest(m)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--scenario")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--list", action="store_true", help="print the scenario names")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()

    if args.list:
        for sc in script.SCENARIOS:
            print(sc.name)
        return 0
    if not args.scenario or not args.out:
        ap.error("--scenario and --out are required")

    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    if args.verbose:
        logging.getLogger("interop").setLevel(logging.DEBUG)

    sc = script.by_name(args.scenario)
    if sc.requires_event is not None and sc.requires_event not in EVENT_TYPES:
        print(f"harness: {sc.name}@{LK_VERSION}: skipped, no {sc.requires_event} event here")
        return 0
    if sc.bug is not None:
        patches.PATCHES[sc.bug.patch]()

    lines, report, options, errors = asyncio.run(run(sc))

    line: int | None = None
    if sc.bug is not None:
        index = sc.bug.line([json.loads(s) for s in lines])
        if index is None:
            errors.append(f"the bug's predicate found no event in {sc.name}")
        else:
            line = index + 2  # the meta line is line 1

    out = args.out / f"livekit-agents@{LK_VERSION}"
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"{sc.name}.events.jsonl", "w") as fh:
        fh.write(json.dumps(meta(sc, options, line)) + "\n")
        for s in lines:
            fh.write(s + "\n")
    with open(out / f"{sc.name}.report.jsonl", "w") as fh:
        shows = sc.bug is not None and sc.bug.report_shows
        fh.write(json.dumps(meta(sc, options, 2 if shows else None)) + "\n")
        fh.write(json.dumps(report.to_dict(), default=str) + "\n")

    for e in errors:
        print(f"harness: {sc.name}@{LK_VERSION}: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
