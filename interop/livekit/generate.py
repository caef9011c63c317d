#!/usr/bin/env python3
"""Generated sessions of LiveKit Agents, run in virtual time and judged by turnfence.

    python interop/livekit/generate.py --seed S --count N --turnfence BIN --out DIR \
        [--patch NAME | --patches all] [--no-shrink | --survey] [--cause KEY] [--no-coverage]

Draws N sessions (``strategies.sessions``) with hypothesis from seed S, runs each through the
installed livekit-agents with the fakes of ``fakes.py`` on a virtual clock (``vclock.py``),
writes its two logs (``DIR/sessions/NNNNN.events.jsonl`` and ``.report.jsonl``, each with the
harness's meta line) and judges both with ``interop/oracle.py``. By default a session that its
oracle does not accept fails the hypothesis example: hypothesis shrinks it, and the smallest
one is written to ``DIR/counterexamples/`` (both logs, and the drawn session as a scenario).
``--survey`` (or ``--no-shrink``) judges all N and tallies the verdicts by cause. ``--cause
KEY`` fails only on sessions of that cause (a key of the survey's tally), to shrink one cause.

``--patch NAME`` runs every session with one planted regression of ``patches.PATCHES``
(``--patches all``: the patch is drawn per session); the patch records its witness, the line
of the events log the patched code path first changed, and the oracle holds the session to it.

Exit 0 only if every session satisfied its oracle and, with N >= COVERAGE_MIN (or unless
``--no-coverage``), every dimension was hit.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import os  # noqa: E402

if os.environ.get("PYTHONHASHSEED") != "0":
    # one hash order for every run (the stack keeps sets and dicts of strings): same seed,
    # same sessions, same summary
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable, *sys.argv])

import random  # noqa: E402
import uuid  # noqa: E402

import vclock  # noqa: E402

vclock.install()  # before livekit is imported: its models capture time.time

_ids = random.Random(0)


def _uuid4() -> uuid.UUID:
    """The stack's random ids (shortuuid, item and speech ids) from the session's own seed."""
    return uuid.UUID(int=_ids.getrandbits(128), version=4)


uuid.uuid4 = _uuid4  # type: ignore[assignment]

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import re  # noqa: E402
from collections import Counter  # noqa: E402
from typing import Any  # noqa: E402

import fakes  # noqa: E402
import harness  # noqa: E402
import corpus  # noqa: E402
import oracle  # noqa: E402
import patches  # noqa: E402
import script  # noqa: E402
import strategies  # noqa: E402
from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.database import DirectoryBasedExampleDatabase  # noqa: E402
from livekit.agents import Agent, AgentSession, RunContext, ToolError, function_tool  # noqa: E402
from livekit.agents.voice import agent_activity, agent_session  # noqa: E402
from livekit.agents.voice.transcription import TranscriptSynchronizer  # noqa: E402
from livekit.agents.voice.transcription import synchronizer  # noqa: E402
from strategies import DAction, DReply, Drawn  # noqa: E402

LK_VERSION = harness.LK_VERSION
COVERAGE_MIN = 300
"""Below this many sessions a dimension may legitimately be unhit; coverage is then reported
but not required."""

# the rules each planted regression breaks (patches.PATCHES names)
PATCH_RULES: dict[str, str] = {
    "drop_tool_results_after_interruption": "tool_call_settled",
    "false_interruption_timer_never_resumes": "interruption_decided_once",
    "speech_interrupts_uninterruptible": "uninterruptible_output_survives",
    "resume_before_clear": "no_late_delivery",
    "commit_interrupted_reply_twice": "one_terminal_state",
}
PATCH_RULES.update(getattr(patches, "EXTRA_RULES", {}))

DIMENSIONS = (
    # user speech
    "speech_over_reply", "speech_short_over_reply", "speech_in_aec_warmup",
    "speech_in_false_interruption_window", "speech_while_thinking", "vad_missed_transcribed",
    "transcript_early", "transcript_late", "transcript_empty", "transcript_final_only",
    "transcript_interim_only", "noise",
    # what the session did
    "reply_interrupted", "false_interruption_resumed",
    "reply_empty", "aclose_mid_reply", "aclose_while_thinking",
    # tools
    "tools_parallel", "tool_slow", "tool_error", "tool_raises", "tool_reply_after",
    "tool_no_reply_after",
    # the app's calls
    "app_interrupt", "app_interrupt_while_speaking", "say_uninterruptible", "say_interruptible",
    "say_default", "generate_reply", "generate_reply_while_speaking", "update_agent",
    "commit_user_turn", "clear_user_turn",
    # options
    "interruptions_disabled", "resume_false_interruption_off", "false_interruption_timeout_set",
    "min_interruption_duration_set", "min_interruption_words_set", "turn_detection_vad",
    "turn_detection_stt", "turn_detection_manual", "preemptive_on", "preemptive_off",
    "aec_warmup_on",
)

_INTERRUPTION_KEYS = {
    "allow_interruptions": "enabled",
    "min_interruption_duration": "min_duration",
    "min_interruption_words": "min_words",
    "false_interruption_timeout": "false_interruption_timeout",
    "resume_false_interruption": "resume_false_interruption",
}


# -- the fakes a drawn session needs beyond the harness's ------------------------------------


class _DeafVAD(fakes.EnergyVAD):
    """The harness's VAD, deaf to some utterances (speech a real VAD misses, e.g. quiet)."""

    def __init__(self, deaf: set[int]) -> None:
        super().__init__()
        self._deaf = deaf

    def stream(self) -> Any:
        s = super().stream()
        push, deaf = s.push_frame, self._deaf

        def push_frame(frame: Any) -> None:
            if fakes.utterance_index(fakes._frame_value(frame)) in deaf:
                frame = fakes.rtc.AudioFrame(
                    data=bytes(len(frame.data) * 2),
                    sample_rate=frame.sample_rate,
                    num_channels=frame.num_channels,
                    samples_per_channel=frame.samples_per_channel,
                )
            push(frame)

        s.push_frame = push_frame  # type: ignore[method-assign]
        return s


FALLBACK = script.Reply("Okay.", ttft=0.2)


class _Replies(dict):
    """The LLM's script; a key nobody drew (a second reply to the same context) gets FALLBACK."""

    def __init__(self, replies: dict[str, script.Reply], asked: list[str]) -> None:
        super().__init__(replies)
        self._asked = asked

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        self._asked.append(key)
        return super().get(key) or FALLBACK


class Helper(Agent):
    """The agent ``update_agent`` switches to (its id is ``helper``)."""


def _text(prefix: str, n: int) -> str:
    words = [strategies.WORDS[(i * 7 + len(prefix)) % len(strategies.WORDS)] for i in range(n)]
    return " ".join([prefix] + words) if n else ""


def _tool(t: strategies.DTool) -> Any:
    async def tool(context: RunContext, query: str) -> str:
        await asyncio.sleep(t.duration)
        if t.outcome == "error":
            raise ToolError(f"{t.name} failed")
        if t.outcome == "raise":
            raise RuntimeError(f"{t.name} crashed")
        return f"{t.name} result"

    return function_tool(tool, name=t.name, description=f"The tool {t.name}.")


def _script_reply(r: DReply, tag: str, replies: dict[str, script.Reply]) -> script.Reply:
    calls = [script.ToolCall(t.name, f"call_{t.name}", {"query": tag}) for t in r.tools]
    if r.tools:
        key = "after:" + "+".join(sorted(t.name for t in r.tools))
        replies[key] = script.Reply(_text(f"After{tag}", r.after_words), ttft=r.after_ttft)
    return script.Reply(_text(f"Reply{tag}", r.words), tool_calls=calls, ttft=r.ttft)


def build(
    d: Drawn, keys: list[str]
) -> tuple[list[script.Utterance], dict[str, script.Reply], list[Any], set[int]]:
    """The harness's script for a drawn session; ``keys`` gets the LLM key of each drawn reply
    (``d.replies`` then ``d.gen_replies``)."""
    utterances: list[script.Utterance] = []
    replies: dict[str, script.Reply] = {}
    deaf: set[int] = set()
    for i, u in enumerate(d.utterances):
        text = _text(f"Question{i}", u.words - 1) if u.words > 1 else f"Question{i}"
        final = {"final": text, "final_only": text, "vad_missed": text, "empty": ""}.get(u.kind)
        interim = text if u.kind in ("final", "interim_only", "vad_missed") else None
        if u.kind == "vad_missed":
            deaf.add(i)
        utterances.append(
            script.Utterance(
                round(u.start, 2), round(u.start + u.duration, 2), final,
                stt_delay=u.stt_delay, interim=interim,
                interim_after=min(u.interim_after, u.duration),
            )
        )
        replies[f"user:{text}"] = _script_reply(d.replies[i], f"U{i}", replies)
        keys.append(f"user:{text}")
    for j, r in enumerate(d.gen_replies):
        replies[f"instructions:Instructions{j}"] = _script_reply(r, f"G{j}", replies)
        keys.append(f"instructions:Instructions{j}")
    tools = [_tool(t) for r in d.replies + d.gen_replies for t in r.tools]
    return utterances, replies, tools, deaf


def build_session(d: Drawn, f: fakes.Fakes) -> AgentSession:
    o = d.options
    interruption: dict[str, Any] = {"mode": "vad"}
    for name, key in _INTERRUPTION_KEYS.items():
        interruption[key] = o[name]
    turn_handling: dict[str, Any] = {
        "turn_detection": o["turn_detection"],
        "interruption": interruption,
        "preemptive_generation": {"enabled": o["preemptive_generation"]},
        "endpointing": {"min_delay": o["min_endpointing_delay"], "max_delay": 3.0},
    }
    return AgentSession(
        vad=f.vad, stt=f.stt, llm=f.llm, tts=f.tts, turn_handling=turn_handling,
        aec_warmup_duration=o["aec_warmup_duration"],
    )


# -- one session ------------------------------------------------------------------------------


class Run:
    """What one session left: its lines, report, options, and what the harness observed."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.report: Any = None
        self.options: dict[str, Any] = {}
        self.errors: list[str] = []
        self.notes: list[str] = []
        self.asked: list[str] = []
        self.keys: list[str] = []
        self.hit: set[str] = set()
        self.witness: int | None = None


async def run_session(d: Drawn, r: Run) -> None:
    clock = fakes.Clock()
    utterances, replies, tools, deaf = build(d, r.keys)
    f = fakes.Fakes(
        clock=clock,
        vad=_DeafVAD(deaf),
        stt=fakes.ScriptedSTT(clock, utterances),
        llm=fakes.ScriptedLLM(clock, _Replies(replies, r.asked), r.errors),
        tts=fakes.ScriptedTTS(seconds_per_word=d.seconds_per_word),
        audio_input=fakes.ScriptedAudioInput(clock, utterances),
        audio_sink=fakes.PlayoutSink(),
        text_sink=fakes.TextSink(),
        errors=r.errors,
    )
    session = build_session(d, f)
    r.options = harness.configured_options(session)
    # The turn detection mode, read back from the session: under manual (and realtime_llm)
    # LiveKit lets no audio activity interrupt a speech (docs/MAPPING.md).
    td = session.turn_detection
    r.options["turn_detection"] = td if isinstance(td, str) or td is None else type(td).__name__
    for event_type in harness.EVENT_TYPES:
        session.on(event_type, lambda ev, _t=event_type: r.lines.append(harness._dump(_t, ev)))
    sync = TranscriptSynchronizer(next_in_chain_audio=f.audio_sink, next_in_chain_text=f.text_sink)
    session.input.audio = f.audio_input
    session.output.audio = sync.audio_output
    session.output.transcription = sync.text_output
    agent = harness.Assistant(instructions="You are a helpful voice assistant.", tools=tools)
    await session.start(agent)
    clock.start()

    def probe(what: str, u: strategies.DUtterance | None = None) -> None:
        state = session.agent_state
        act = session._activity
        if u is not None:
            if state == "speaking":
                r.hit.add("speech_over_reply")
                if u.duration < d.options["min_interruption_duration"]:
                    r.hit.add("speech_short_over_reply")
                if session._aec_warmup_remaining > 0:
                    r.hit.add("speech_in_aec_warmup")
            if state == "thinking":
                r.hit.add("speech_while_thinking")
            if act is not None and getattr(act, "_paused_speech", None) is not None:
                r.hit.add("speech_in_false_interruption_window")
        r.notes.append(f"{clock.now():.2f} {what}: agent {state}")

    async def at_utterance(u: strategies.DUtterance) -> None:
        await clock.sleep_until(u.start)
        act = session._activity
        if act is not None and getattr(act, "_paused_speech", None) is not None:
            r.hit.add("speech_in_false_interruption_window")
        await clock.sleep_until(u.start + 0.06)  # the VAD confirms speech after 50 ms
        probe("user speaks", u)

    gen = iter(range(len(d.gen_replies)))

    async def act(a: DAction) -> None:
        await clock.sleep_until(a.at)
        state = session.agent_state
        probe(a.kind)
        kw: dict[str, Any] = {}
        if a.allow_interruptions is not None:
            kw["allow_interruptions"] = a.allow_interruptions
        try:
            if a.kind == "say":
                r.hit.add({None: "say_default", False: "say_uninterruptible",
                           True: "say_interruptible"}[a.allow_interruptions])
                session.say(_text("Said", a.words), **kw)
            elif a.kind == "generate_reply":
                r.hit.add("generate_reply")
                if state == "speaking":
                    r.hit.add("generate_reply_while_speaking")
                session.generate_reply(instructions=f"Instructions{next(gen)}", **kw)
            elif a.kind == "interrupt":
                r.hit.add("app_interrupt")
                if state == "speaking":
                    r.hit.add("app_interrupt_while_speaking")
                session.interrupt()
            elif a.kind == "update_agent":
                r.hit.add("update_agent")
                session.update_agent(Helper(instructions="You help.", tools=tools))
            elif a.kind == "commit_user_turn":
                r.hit.add("commit_user_turn")
                session.commit_user_turn()
            elif a.kind == "clear_user_turn":
                r.hit.add("clear_user_turn")
                session.clear_user_turn()
        except Exception as e:  # the app's call refused (e.g. no activity): noted, not hidden
            r.notes.append(f"{a.kind} at {a.at}: {type(e).__name__}: {e}")

    tasks = [asyncio.create_task(at_utterance(u)) for u in d.utterances]
    tasks += [asyncio.create_task(act(a)) for a in d.actions if a.at < d.end]
    await clock.sleep_until(d.end)
    for t in tasks:
        if not t.done():
            t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    state = session.agent_state
    if state == "speaking":
        r.hit.add("aclose_mid_reply")
    elif state == "thinking":
        r.hit.add("aclose_while_thinking")
    r.notes.append(f"{clock.now():.2f} aclose: agent {state}")
    await session.aclose()
    await sync.aclose()
    await f.audio_sink.aclose()
    r.report = harness.make_session_report(session)


def dimensions_of(d: Drawn, r: Run) -> set[str]:
    hit = set(r.hit)
    o = d.options
    for name, cond in (
        ("interruptions_disabled", not o["allow_interruptions"]),
        ("resume_false_interruption_off", not o["resume_false_interruption"]),
        ("false_interruption_timeout_set", o["false_interruption_timeout"] != 2.0),
        ("min_interruption_duration_set", o["min_interruption_duration"] != 0.5),
        ("min_interruption_words_set", o["min_interruption_words"] > 0),
        ("preemptive_on", o["preemptive_generation"]),
        ("preemptive_off", not o["preemptive_generation"]),
        ("aec_warmup_on", o["aec_warmup_duration"] is not None),
    ):
        if cond:
            hit.add(name)
    hit.add(f"turn_detection_{o['turn_detection']}")
    for u in d.utterances:
        hit.add({"vad_missed": "vad_missed_transcribed", "empty": "transcript_empty",
                 "final_only": "transcript_final_only", "interim_only": "transcript_interim_only",
                 "noise": "noise", "final": "transcript_interim"}[u.kind])
        if u.kind in ("final", "final_only", "vad_missed"):
            if u.stt_delay <= 0.05:
                hit.add("transcript_early")
            if u.stt_delay >= 0.8:
                hit.add("transcript_late")
    for line in r.lines:
        ev = json.loads(line)
        t = ev.get("type")
        if t == "agent_false_interruption":
            hit.add("false_interruption_resumed" if ev.get("resumed") else
                    "false_interruption_not_resumed")
        elif t == "conversation_item_added" and (ev.get("item") or {}).get("interrupted"):
            hit.add("reply_interrupted")
        elif t == "function_tools_executed":
            calls = ev.get("function_calls") or []
            if len(calls) > 1:
                hit.add("tools_parallel")
    # the drawn replies the LLM was actually asked for
    asked = set(r.asked)
    for key, rep in zip(r.keys, d.replies + d.gen_replies):
        if key not in asked:
            continue
        if rep.words == 0 and not rep.tools:
            hit.add("reply_empty")
        for t in rep.tools:
            if t.duration >= 5.0:
                hit.add("tool_slow")
            if t.outcome != "ok":
                hit.add("tool_error" if t.outcome == "error" else "tool_raises")
        if rep.tools:
            after = "after:" + "+".join(sorted(t.name for t in rep.tools))
            if after in asked:
                hit.add("tool_reply_after" if rep.after_words else "reply_empty")
            else:
                hit.add("tool_no_reply_after")
    return hit & set(DIMENSIONS)


# -- patches ----------------------------------------------------------------------------------


class _Saved:
    """Undo a patch: the attributes of the objects patches touch, restored after the session."""

    OWNERS = (
        agent_activity.AgentActivity,
        agent_session.AgentSession,
        agent_activity,
        synchronizer._SyncedAudioOutput,
    )

    def __enter__(self) -> _Saved:
        self._saved = [(o, dict(vars(o))) for o in self.OWNERS]
        return self

    def __exit__(self, *exc: Any) -> None:
        for owner, before in self._saved:
            now = vars(owner)
            for k in [k for k in now if k not in before]:
                delattr(owner, k)
            for k, v in before.items():
                if now.get(k) is not v:
                    setattr(owner, k, v)


def run_one(d: Drawn, patch: str | None) -> Run:
    r = Run()

    def witness() -> None:
        if r.witness is None:
            r.witness = len(r.lines) + 2  # the meta line is line 1

    _ids.seed(repr(d))
    random.seed(repr(d))
    with _Saved():
        if patch is not None:
            patches.PATCHES[patch]()
            patches.set_witness(witness)
        try:
            vclock.run(run_session, d, r, limit_s=d.end + 120.0)
        except Exception as e:
            r.errors.append(f"the session failed: {type(e).__name__}: {e}")
        finally:
            patches.set_witness(None)
    return r


# -- judging ----------------------------------------------------------------------------------


def cause_of(verdict: dict[str, Any], report: dict[str, Any] | None = None) -> list[str]:
    """The tally keys of a verdict: conforms, finding:RULE (one per rule), input_error:STEM."""
    if verdict["status"] == "conforms":
        return ["conforms"]
    if verdict["status"] == "input_error":
        return ["input_error:" + stem(verdict.get("error", ""))]
    rules = sorted({f.get("invariant") or f.get("kind") or "?" for f in verdict["findings"]})
    return [f"finding:{x}" for x in rules]


def stem(message: str) -> str:
    s = re.sub(r"\d+(\.\d+)?", "N", message)
    s = re.sub(r'"[^"]*"', '"…"', s)
    return s[:90]


def write_logs(base: Path, d: Drawn, r: Run, note: str, patch: str | None) -> tuple[Path, Path]:
    m: dict[str, Any] = {
        "dialect": "livekit-agents",
        "version": LK_VERSION,
        "options": r.options,
        "expect": "accepted" if r.witness is None else "rejected",
        "story": note,
        "source": "interop/livekit generate.py",
    }
    if patch is not None and r.witness is not None:
        m["invariant"] = PATCH_RULES[patch]
        m["line"] = r.witness
        m["patch"] = (patches.PATCHES[patch].__doc__ or "").strip()
    ev_path = Path(f"{base}.events.jsonl")
    rep_path = Path(f"{base}.report.jsonl")
    with open(ev_path, "w") as fh:
        fh.write(json.dumps({"meta": corpus.nest(m)}) + "\n")
        for s in r.lines:
            fh.write(s + "\n")
    with open(rep_path, "w") as fh:
        fh.write(json.dumps({"meta": corpus.nest({**m, **({"line": 2} if "line" in m else {})})}) + "\n")
        if r.report is not None:
            fh.write(json.dumps(stated_report(r), default=str) + "\n")
    return ev_path, rep_path


def stated_report(r: Run) -> dict[str, Any]:
    """The session report as ``to_dict()`` makes it, each ``speech_created`` of its events
    stating its speech's ``allow_interruptions`` as the events log's does (``dump``): the
    report's events are the same events, in the same order (``SessionReport.events``)."""
    report = r.report.to_dict()
    flags = [
        json.loads(line).get("allow_interruptions")
        for line in r.lines
        if json.loads(line).get("type") == "speech_created"
    ]
    created = [e for e in report.get("events") or [] if e.get("type") == "speech_created"]
    if len(created) == len(flags):
        for e, flag in zip(created, flags):
            e["allow_interruptions"] = flag
    return report


def judge(turnfence: str, paths: tuple[Path, Path], patch: str | None, r: Run) -> list[dict[str, Any]]:
    out = []
    forms = [("events", paths[0], r.witness)]
    if r.report is not None:  # else the session failed: its error is in r.errors
        forms.append(("report", paths[1], 2))
    for form, path, wline in forms:
        pt = None
        if patch is not None:
            pt = oracle.Patched(patch, PATCH_RULES[patch], wline if r.witness is not None else None)
        rep = oracle.check(turnfence, str(path))
        v = _verdict(rep, pt)
        v["form"] = form
        v["error"] = (rep.get("error") or {}).get("message", "") if rep.get("status") == "input_error" else ""
        v["describe"] = oracle.describe(rep)
        out.append(v)
    return out


def _verdict(report: dict[str, Any], pt: oracle.Patched | None) -> dict[str, Any]:
    """oracle.judge's verdict on a report already read (one turnfence run per log)."""
    orig = oracle.check
    try:
        oracle.check = lambda _b, _l: report  # type: ignore[assignment]
        return oracle.judge("", "", pt)
    finally:
        oracle.check = orig  # type: ignore[assignment]


# -- the driver ------------------------------------------------------------------------------


class Tally:
    def __init__(self) -> None:
        self.sessions = 0
        self.failed = 0
        self.by_form: dict[str, Counter[str]] = {"events": Counter(), "report": Counter()}
        self.hit: Counter[str] = Counter()
        self.fired: Counter[str] = Counter()
        self.caught: Counter[str] = Counter()
        self.drawn: Counter[str] = Counter()
        self.examples: dict[str, str] = {}  # cause -> first session file
        self.session_errors: Counter[str] = Counter()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--turnfence", required=True)
    ap.add_argument("--out", type=Path, required=True)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--patch", choices=sorted(patches.PATCHES))
    g.add_argument("--patches", choices=["all"])
    ap.add_argument("--no-shrink", action="store_true", help="judge all N, no shrinking")
    ap.add_argument("--survey", action="store_true", help="same as --no-shrink, with a tally")
    ap.add_argument("--cause", help="shrink only sessions of this tally key (e.g. finding:RULE)")
    ap.add_argument("--no-coverage", action="store_true", help="do not require every dimension")
    ap.add_argument("--jobs", type=int, default=1, help="accepted; sessions run in one process")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    logging.basicConfig(level=logging.DEBUG if a.verbose else logging.CRITICAL)
    logging.getLogger("livekit").setLevel(logging.DEBUG if a.verbose else logging.CRITICAL)
    logging.getLogger("livekit.agents").disabled = not a.verbose

    survey = a.survey or a.no_shrink
    sdir = a.out / "sessions"
    cdir = a.out / "counterexamples"
    sdir.mkdir(parents=True, exist_ok=True)
    tally = Tally()
    # a patch whose code path this version lacks (e.g. _interrupted_tool_output, 1.8 only) is
    # left out, and said so
    patch_names, not_applicable = [], {}
    for name in sorted(PATCH_RULES):
        with _Saved():
            try:
                patches.PATCHES[name]()
                patch_names.append(name)
            except (AttributeError, ImportError) as e:
                not_applicable[name] = f"{type(e).__name__}: {e}"
    if a.patch and a.patch in not_applicable:
        print(f"patch {a.patch}: not applicable to livekit-agents {LK_VERSION}: "
              f"{not_applicable[a.patch]}")
        return 1
    last_fail: dict[str, Any] = {}

    patch_strategy = (
        st.sampled_from(patch_names) if a.patches == "all" else st.just(a.patch)
    )

    def body(d: Drawn, patch: str | None) -> None:
        n = tally.sessions
        tally.sessions += 1
        r = run_one(d, patch)
        base = sdir / f"{n:05d}"
        paths = write_logs(base, d, r, f"generated session {n} (seed {a.seed})", patch)
        Path(f"{base}.scenario.txt").write_text(
            d.describe() + (f"\npatch: {patch}\n" if patch else "\n") + "\n".join(r.notes) + "\n")
        for e in r.errors:
            tally.session_errors[stem(e)] += 1
        verdicts = judge(a.turnfence, paths, patch, r)
        hit = dimensions_of(d, r)
        for h in hit:
            tally.hit[h] += 1
        if patch is not None:
            tally.drawn[patch] += 1
            if r.witness is not None:
                tally.fired[patch] += 1
                if all(v["ok"] for v in verdicts):
                    tally.caught[patch] += 1
        causes: list[str] = []
        for v in verdicts:
            keys = cause_of(v)
            for k in keys:
                tally.by_form[v["form"]][k] += 1
                tally.examples.setdefault(f"{v['form']} {k}", str(base) + f" ({v['describe']})")
            causes += keys
        ok = all(v["ok"] for v in verdicts) and not r.errors
        if not ok:
            tally.failed += 1
        failing = (a.cause in causes) if a.cause else not ok
        if failing and not survey:
            last_fail.update(d=d, r=r, patch=patch, verdicts=verdicts, base=base)
            raise AssertionError("; ".join(v["why"] for v in verdicts) + "; ".join(r.errors))

    db = DirectoryBasedExampleDatabase(str(a.out / "hypothesis-db"))
    phases = [Phase.explicit, Phase.reuse, Phase.generate] if survey else list(Phase)

    @seed(a.seed)
    @settings(
        max_examples=a.count,
        database=None if survey else db,
        deadline=None,
        derandomize=False,
        phases=phases,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
        report_multiple_bugs=False,
    )
    @given(d=strategies.sessions(), patch=patch_strategy)
    def test(d: Drawn, patch: str | None) -> None:
        body(d, patch)

    shrunk = None
    try:
        test()
    except AssertionError as e:
        shrunk = str(e)
    except Exception as e:  # hypothesis' own errors (e.g. Flaky) are reported, not hidden
        shrunk = f"{type(e).__name__}: {e}"

    if shrunk is not None and last_fail:
        cdir.mkdir(parents=True, exist_ok=True)
        d, r = last_fail["d"], last_fail["r"]
        base = cdir / f"{LK_VERSION}-seed{a.seed}"
        write_logs(base, d, r, "shrunk counterexample: " + shrunk[:300], last_fail["patch"])
        Path(f"{base}.scenario.txt").write_text(
            d.describe() + "\n" + "\n".join(r.notes) + "\n" + shrunk + "\n")

    # -- the summary
    print(f"livekit-agents {LK_VERSION}: {tally.sessions} sessions judged "
          f"({'survey' if survey else 'shrinking'}), {tally.failed} not accepted by the oracle")
    for form, c in tally.by_form.items():
        print(f"  {form}:")
        for k, n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"    {n:6d}  {k}")
    for k, n in sorted(tally.session_errors.items()):
        print(f"  session error {n:6d}  {k}")
    if a.patch or a.patches:
        for p, why in not_applicable.items():
            print(f"  patch {p}: not applicable to {LK_VERSION} ({why})")
        for p in patch_names if a.patches else [a.patch]:
            print(f"  patch {p}: drawn {tally.drawn[p]}, fired {tally.fired[p]}, "
                  f"caught {tally.caught[p]}")
    unhit = [x for x in DIMENSIONS if tally.hit[x] == 0]
    print("  dimensions hit: " + ", ".join(f"{x} {tally.hit[x]}" for x in DIMENSIONS if tally.hit[x]))
    print("  dimensions not hit: " + (", ".join(unhit) or "none"))
    if shrunk is not None:
        print(f"  shrunk counterexample: {cdir}/{LK_VERSION}-seed{a.seed}.* : {shrunk[:400]}")
    if survey:
        print("  first session of each cause:")
        for k, v in sorted(tally.examples.items()):
            if not k.endswith(" conforms"):
                print(f"    {k}: {v}")
    cmd = (f"{sys.executable} interop/livekit/generate.py --seed {a.seed} --count {a.count} "
           f"--turnfence {a.turnfence} --out {a.out}")
    if a.patch:
        cmd += f" --patch {a.patch}"
    if a.patches:
        cmd += " --patches all"
    if survey:
        cmd += " --survey"
    print("  reproduce: " + cmd)
    coverage_ok = a.no_coverage or a.count < COVERAGE_MIN or not unhit
    return 0 if tally.failed == 0 and shrunk is None and coverage_ok else 1


if __name__ == "__main__":
    sys.exit(main())
