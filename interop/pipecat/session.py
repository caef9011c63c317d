"""Run one generated session (``strategies.Session``) through a real Pipecat pipeline in
virtual time, and write its log as the harness writes a scenario's.

The pipeline is the harness's (``[input, (STTMuteFilter), stt, user aggregator, llm, tts,
output, assistant aggregator]`` under Pipecat's own ``PipelineWorker``/``PipelineTask``), with
the same fakes; what the generator adds is configuration the scripted scenarios do not draw
(turn start strategies and their ``enable_interruptions``, stop timeout, mute strategies,
several tools, parallel calls, timeouts, calls whose work never ends or reports late, the
application's frames, an ``EndFrame`` or a cancel at any moment). Meant to run in a process of
its own (``generate.py`` forks one per session): ``vclock`` replaces the ``time`` module's
clocks and a planted patch stays in the process.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import harness  # noqa: I001  (first: its import makes 0.0.84's offline Punkt data)
import corpus
import fakes
import known_bugs
import patches
import script
import vclock
from fakes import V1, version_tuple
from pipecat import __version__ as PIPECAT_VERSION
from pipecat.frames.frames import EndFrame, TTSSpeakFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import LLMContextAggregatorPair
from pipecat.transports.base_transport import TransportParams
from strategies import ReplySpec, Session, sentence_text
from turnfence_observer import TurnfenceObserver

if V1:
    from pipecat.adapters.llm.schemas.function_schema import FunctionSchema
    from pipecat.adapters.llm.schemas.tools_schema import ToolsSchema
else:
    from pipecat.adapters.schemas.function_schema import FunctionSchema  # type: ignore[no-redef]
    from pipecat.adapters.schemas.tools_schema import ToolsSchema  # type: ignore[no-redef]

log = logging.getLogger("interop.session")

# virtual seconds an EndFrame may take to drain before the session is cancelled (a pipeline
# that never ends is a finding of the generator's own, reported as "hung")
END_GRACE_SECS = 60.0


class ReplyBook(dict):
    """The scripted LLM's replies, handed out in order: the n-th user turn gets the n-th
    reply of ``Session.replies`` (the last repeats), a tool's result or cancellation the next
    of ``Session.tool_replies``. Each reply's calls get fresh ids, so parallel and repeated
    calls of one tool stay distinct."""

    def __init__(self, s: Session) -> None:
        super().__init__()
        self._s = s
        self._n_user = 0
        self._n_tool = 0
        self._n_call = 0

    def _make(self, spec: ReplySpec, seed: int) -> script.Reply:
        text = " ".join(sentence_text(n, seed + i) for i, n in enumerate(spec.sentences))
        calls = []
        for ti in spec.calls:
            t = self._s.tools[ti]
            self._n_call += 1
            calls.append(script.ToolCall(t.name, f"call_{self._n_call}", {"query": f"q{self._n_call}"}))
        return script.Reply(text, calls, ttft=spec.ttft_ms / 1000, word_gap=spec.word_gap_ms / 1000)

    def get(self, key: str, default: Any = None) -> script.Reply:  # type: ignore[override]
        if key.startswith("user:"):
            spec = self._s.replies[min(self._n_user, len(self._s.replies) - 1)]
            self._n_user += 1
            return self._make(spec, 11 * self._n_user)
        spec = self._s.tool_replies[min(self._n_tool, len(self._s.tool_replies) - 1)]
        self._n_tool += 1
        return self._make(spec, 101 + 13 * self._n_tool)


_detached: set[asyncio.Task] = set()


def _handler(spec: Any) -> Any:
    result = {"tool": spec.name, "ok": True}

    async def handler(params: Any) -> None:
        if spec.ends == "never":
            await asyncio.Event().wait()
        elif spec.ends == "progress" and V1:
            from pipecat.frames.frames import FunctionCallResultProperties

            await asyncio.sleep(spec.duration_ms / 2000)
            await params.result_callback(
                {"tool": spec.name, "progress": 50},
                properties=FunctionCallResultProperties(is_final=False),
            )
            await asyncio.sleep(spec.duration_ms / 2000)
            await params.result_callback(result)
        elif spec.ends == "silent":
            await asyncio.sleep(spec.duration_ms / 1000)
        elif spec.ends == "late":

            async def work() -> None:
                await asyncio.sleep(spec.duration_ms / 1000)
                await params.result_callback(result)

            task = asyncio.get_running_loop().create_task(work())
            _detached.add(task)
            await asyncio.shield(task)
        else:
            await asyncio.sleep(spec.duration_ms / 1000)
            await params.result_callback(result)

    return handler


def _user_side_v1(s: Session) -> tuple[Any, list[Any], dict[str, Any]]:
    from pipecat.processors.aggregators.llm_response_universal import LLMUserAggregatorParams
    from pipecat.turns import user_mute
    from pipecat.turns.user_start import (
        MinWordsUserTurnStartStrategy,
        TranscriptionUserTurnStartStrategy,
        VADUserTurnStartStrategy,
    )
    from pipecat.turns.user_stop import SpeechTimeoutUserTurnStopStrategy
    from pipecat.turns.user_turn_strategies import UserTurnStrategies

    start = []
    for name, inter in zip(s.start, s.start_interrupts, strict=True):
        if name == "vad":
            start.append(VADUserTurnStartStrategy(enable_interruptions=inter))
        elif name == "transcription":
            start.append(TranscriptionUserTurnStartStrategy(enable_interruptions=inter))
        else:
            n = int(name.split(":")[1])
            start.append(MinWordsUserTurnStartStrategy(min_words=n, enable_interruptions=inter))
    stop = [SpeechTimeoutUserTurnStopStrategy(user_speech_timeout=s.speech_timeout_ms / 1000)]
    mute_classes = {
        "always": user_mute.AlwaysUserMuteStrategy,
        "first_speech": user_mute.FirstSpeechUserMuteStrategy,
        "function_call": user_mute.FunctionCallUserMuteStrategy,
        "until_first_bot_complete": user_mute.MuteUntilFirstBotCompleteUserMuteStrategy,
    }
    mute = [mute_classes[m]() for m in s.mute]
    params = LLMUserAggregatorParams(
        user_turn_strategies=UserTurnStrategies(start=start, stop=stop),
        user_mute_strategies=mute,
    )
    options = {
        "allow_interruptions": all(x._enable_interruptions for x in start),
        "user_turn_start_strategies": [
            {
                "strategy": type(x).__name__,
                "enable_interruptions": x._enable_interruptions,
                **({"min_words": x._min_words} if hasattr(x, "_min_words") else {}),
            }
            for x in start
        ],
        "user_turn_stop_strategies": [type(x).__name__ for x in stop],
        "user_mute_strategies": [type(x).__name__ for x in mute],
    }
    return params, [], options


def _user_side_legacy(s: Session) -> tuple[Any, list[Any], dict[str, Any]]:
    from pipecat.processors.aggregators.llm_response import LLMUserAggregatorParams

    filters: list[Any] = []
    strategies: list[str] = []
    if s.mute:
        from pipecat.processors.filters.stt_mute_filter import (
            STTMuteConfig,
            STTMuteFilter,
            STTMuteStrategy,
        )

        chosen = {getattr(STTMuteStrategy, m.upper().replace("UNTIL_FIRST", "MUTE_UNTIL_FIRST")) for m in s.mute}
        filters.append(STTMuteFilter(config=STTMuteConfig(strategies=chosen)))
        strategies = sorted(x.name for x in chosen)
    params = LLMUserAggregatorParams()
    options = {
        "allow_interruptions": s.interruptions,
        "stt_mute_filter": strategies,
        "aggregation_timeout": params.aggregation_timeout,
    }
    return params, filters, options


def _utterances(s: Session) -> list[script.Utterance]:
    out = []
    for i, u in enumerate(s.utterances):
        text = sentence_text(u.words, 3 + i) if u.words else None
        interim = " ".join(text.split()[:2]) if (text and u.interim) else None
        out.append(
            script.Utterance(
                start=u.start_ms / 1000,
                end=(u.start_ms + u.dur_ms) / 1000,
                transcript=text,
                stt_delay=u.stt_delay_ms / 1000,
                interim=interim,
                interim_after=min(0.5, u.dur_ms / 2000),
            )
        )
    return out


def build(s: Session, clock: fakes.Clock, errors: list[str]) -> dict[str, Any]:
    tools = [
        FunctionSchema(
            name=t.name,
            description=f"Tool {t.name}.",
            properties={"query": {"type": "string"}},
            required=["query"],
        )
        for t in s.tools
    ]
    messages: list[Any] = [{"role": "system", "content": harness.SYSTEM}]
    if tools:
        context = LLMContext(messages=messages, tools=ToolsSchema(standard_tools=tools))
    else:
        context = LLMContext(messages=messages)
    user_params, filters, options = (_user_side_v1 if V1 else _user_side_legacy)(s)
    pair = LLMContextAggregatorPair(context, user_params=user_params)

    llm_kwargs: dict[str, Any] = {}
    if version_tuple() >= (0, 0, 101):
        llm_kwargs["function_call_timeout_secs"] = (
            None if s.function_call_timeout_ms is None else s.function_call_timeout_ms / 1000
        )
    llm = fakes.ScriptedLLM(ReplyBook(s), errors, **llm_kwargs)
    for t in s.tools:
        kw: dict[str, Any] = {"cancel_on_interruption": t.cancel_on_interruption}
        if version_tuple() >= (0, 0, 105):
            kw["timeout_secs"] = None if t.timeout_ms is None else t.timeout_ms / 1000
        llm.register_function(t.name, _handler(t), **kw)

    utts = _utterances(s)
    inp = fakes.ScriptedInput(clock, utts, params=TransportParams(audio_in_enabled=False))
    # After 0.0.84 the STTMuteFilter pushes no STTMuteFrame: the fake STT asks the filter for
    # the state it keeps (`_is_muted`, set by `_handle_mute_state`; its `is_muted` property went).
    muted_by = None
    if filters and version_tuple() > (0, 0, 84):
        muted_by = lambda f=filters[0]: f._is_muted is True  # noqa: E731
    stt = fakes.ScriptedSTT(clock, utts, muted_by=muted_by)
    tts = fakes.ScriptedTTS(0.3)
    out_params: dict[str, Any] = {"audio_out_enabled": True}
    if "audio_out_end_silence_secs" in TransportParams.model_fields:
        out_params["audio_out_end_silence_secs"] = 0
    out = fakes.PlayoutOutput(params=TransportParams(**out_params))
    pipeline = Pipeline([inp, *filters, stt, pair.user(), llm, tts, out, pair.assistant()])

    if hasattr(llm, "_function_call_timeout_secs"):
        options["function_call_timeout_secs"] = llm._function_call_timeout_secs
    options["tools"] = {
        t.name: {
            "cancel_on_interruption": llm._functions[t.name].cancel_on_interruption,
            **(
                {"timeout_secs": llm._functions[t.name].timeout_secs}
                if hasattr(llm._functions[t.name], "timeout_secs")
                else {}
            ),
        }
        for t in s.tools
    }
    options["vad"] = {"start_secs": script.VAD_START_SECS, "stop_secs": script.VAD_STOP_SECS}
    options["audio_out_sample_rate"] = 24000
    options["audio_out_10ms_chunks"] = out._params.audio_out_10ms_chunks
    return {"pipeline": pipeline, "llm": llm, "options": options}


async def run(s: Session, observer: TurnfenceObserver) -> tuple[dict[str, Any], list[str], list[str]]:
    """Run the session; returns (options, errors, notes). ``notes`` name what happened that the
    generator's coverage counts but the log cannot show (a pipeline that had to be cancelled
    because its EndFrame never drained)."""
    errors: list[str] = []
    notes: list[str] = []
    clock = fakes.Clock()
    built = build(s, clock, errors)
    worker = harness.make_worker(built["pipeline"], observer, s.interruptions)
    if V1:
        from pipecat.frames.frames import InterruptionFrame as AppInterruption
        from pipecat.workers.runner import WorkerRunner
    else:
        from pipecat.frames.frames import StartInterruptionFrame as AppInterruption  # type: ignore
        from pipecat.pipeline.runner import PipelineRunner

    @worker.event_handler("on_pipeline_started")
    async def _started(worker: Any, frame: Any) -> None:
        clock.start()

    async def act(a: Any) -> None:
        await clock.sleep_until(a.at_ms / 1000)
        if a.kind in ("speak", "speak_uninterruptible"):
            frame = TTSSpeakFrame(sentence_text(a.words, 57 + a.at_ms))
            if a.kind == "speak_uninterruptible":
                frame.interruptible = False
            await worker.queue_frame(frame)
        elif a.kind == "interrupt":
            await worker.queue_frame(AppInterruption())
        else:
            raise ValueError(a.kind)

    done = asyncio.Event()

    async def drive() -> None:
        tasks = [asyncio.create_task(act(a)) for a in s.actions]
        if s.ending == "drain":
            await clock.sleep_until((s.last_scripted_ms() + s.end_ms) / 1000)
        else:
            await clock.sleep_until(s.end_ms / 1000)
        for t in tasks:
            if not t.done():
                t.cancel()
        if s.ending == "cancel":
            await worker.cancel()
            return
        await worker.queue_frame(EndFrame())
        try:
            await asyncio.wait_for(done.wait(), timeout=END_GRACE_SECS)
        except asyncio.TimeoutError:
            notes.append("end_hung")
            errors.append(f"the EndFrame did not end the pipeline within {END_GRACE_SECS:.0f} s")
            await worker.cancel()

    async def main_and_flag(main: Any) -> None:
        try:
            await main
        finally:
            done.set()

    if V1:
        runner = WorkerRunner(handle_sigint=False)
        await runner.add_workers(worker)
        main = runner.run()
    else:
        main = PipelineRunner(handle_sigint=False).run(worker)
    budget = (max(s.end_ms, s.last_scripted_ms() + s.end_ms) / 1000) + END_GRACE_SECS + 60
    try:
        await asyncio.wait_for(asyncio.gather(main_and_flag(main), drive()), timeout=budget)
    except asyncio.TimeoutError:
        errors.append("the session did not finish within its budget")
    for t in list(_detached):
        t.cancel()
    return built["options"], errors, notes


def _deterministic_ids() -> None:
    """Pipecat names each TTS context with ``uuid.uuid4()``: drawn from a seeded generator
    here, so the same session writes the same log byte for byte."""
    import random
    import uuid

    rng = random.Random(0)
    uuid.uuid4 = lambda: uuid.UUID(int=rng.getrandbits(128), version=4)  # type: ignore[assignment]
    random.seed(0)


def run_to_file(s: Session, path: Path, result_path: Path) -> None:
    """Child process entry: apply the session's patch, run it in virtual time, write the log
    and a result file (options, errors, notes, witness)."""
    from loguru import logger

    logger.remove()
    logging.basicConfig(level=logging.ERROR)
    _deterministic_ids()
    if s.patch:
        patches.PATCHES[s.patch]()
    observer = TurnfenceObserver()
    patches.observe(lambda: len(observer.lines))
    watch = known_bugs.Watch(lambda: len(observer.lines))
    watch.install()
    options, errors, notes = vclock.run(run(s, observer))
    witness = patches.witness_line()
    known = watch.witnesses()
    m: dict[str, Any] = {
        "dialect": "pipecat",
        "version": PIPECAT_VERSION,
        "options": options,
        "expect": "accepted",
        "story": "a generated session (interop/pipecat/generate.py)",
        "source": "interop/pipecat/generate.py",
    }
    if s.patch:
        # the planted regression and its rule; where it fired (its witness, the first line it
        # made differ) the log must have that rule at or after the line (interop/oracle.py)
        m["patch"] = s.patch
        m["invariant"] = patches.rule_of(s.patch)
        if witness is not None:
            m["expect"] = "rejected"
            m["line"] = witness
    if known:
        # Pipecat's own bugs as released that this run witnessed (known_bugs.py): each one's
        # rule is expected at or after its line
        m["expect"] = "rejected"
        m["known_bugs"] = known
    meta = {"meta": corpus.nest(m)}
    with open(path, "w") as fh:
        fh.write(json.dumps(meta) + "\n")
        for ln in observer.lines:
            fh.write(json.dumps(ln) + "\n")
    result_path.write_text(
        json.dumps(
            {
                "errors": errors,
                "notes": notes,
                "witness": witness,
                "rule": patches.rule_of(s.patch) if s.patch else None,
                "known_bugs": known,
            }
        )
    )


def preload() -> None:
    """Import, in the parent, every module a session imports lazily (Pipecat's workers, turn
    strategies, mute filters, and what they import), so that each forked child starts with
    them loaded instead of importing them again (most of a session's CPU otherwise)."""
    import importlib

    names = (
        [
            "pipecat.pipeline.worker",
            "pipecat.workers.runner",
            "pipecat.processors.aggregators.llm_response_universal",
            "pipecat.turns.user_mute",
            "pipecat.turns.user_start",
            "pipecat.turns.user_stop",
            "pipecat.turns.user_turn_strategies",
        ]
        if V1
        else [
            "pipecat.pipeline.runner",
            "pipecat.pipeline.task",
            "pipecat.processors.aggregators.llm_response",
            "pipecat.processors.filters.stt_mute_filter",
            "pipecat.audio.vad.vad_analyzer",
        ]
    )
    for n in names:
        importlib.import_module(n)
    import loguru  # noqa: F401


def warm_up() -> None:
    """Build one pipeline here, in the parent, without running it, so that the lazy imports
    Pipecat makes while building (services, settings, adapters) are done once; then reset
    Pipecat's per-class instance counters, so a session's processors are named ``#0`` as in
    the harness's scenarios."""
    from strategies import Features, ToolSpec, Utterance

    s = Session(
        interruptions=True, start=["vad", "transcription", "min_words:2"] if V1 else [],
        start_interrupts=[True, True, True] if V1 else [], speech_timeout_ms=600,
        mute=["always", "first_speech", "function_call"], function_call_timeout_ms=None,
        tools=[ToolSpec("tool_0", True, None, 100, "result")],
        utterances=[Utterance(100, 500, 3, 100, True)], replies=[ReplySpec([2], 5, 100, [0])],
        tool_replies=[ReplySpec([2], 5, 100, [])], actions=[], ending="drain", end_ms=1000,
    )
    del Features
    build(s, fakes.Clock(), [])
    from pipecat.utils import utils as pipecat_utils

    pipecat_utils._COUNTS.clear()
