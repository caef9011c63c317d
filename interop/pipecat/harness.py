#!/usr/bin/env python3
"""Run one scripted scenario through a real Pipecat pipeline, offline, and record it.

    python interop/pipecat/harness.py --scenario NAME --out DIR [--verbose]
    python interop/pipecat/harness.py --list

Writes ``DIR/pipecat@VERSION/NAME.jsonl``: the meta line, then what ``TurnfenceObserver``
(``turnfence_observer.py``, the module users copy) logged, one frame a line, in push order.

The pipeline is the usual voice pipeline, ``[input, stt, user aggregator, llm, tts, output,
assistant aggregator]``, run by Pipecat's ``PipelineWorker`` under a ``WorkerRunner`` in real
time; the aggregators are Pipecat's ``LLMContextAggregatorPair``, the services and transports
the scripted fakes of ``fakes.py``. One scenario per process: a planted bug's patch
(``patches.PATCHES``) stays inside it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))


def _offline_punkt() -> None:
    """Pipecat before 1.0 splits sentences with NLTK's Punkt and downloads its ``punkt_tab``
    data at import when it is missing, which fails offline. Punkt with empty parameters (no
    abbreviations, collocations or sentence starters learned) splits these scripts' plain
    sentences exactly as the trained English model does, so the harness makes that data
    itself and points NLTK_DATA at it."""
    import os
    import tempfile
    from importlib.metadata import version

    if int(version("pipecat-ai").split(".")[0]) >= 1:
        return
    root = Path(tempfile.gettempdir()) / "interop-pipecat-nltk"
    english = root / "tokenizers" / "punkt_tab" / "english"
    english.mkdir(parents=True, exist_ok=True)
    for name in ("collocations.tab", "sent_starters.txt", "abbrev_types.txt", "ortho_context.tab"):
        (english / name).touch()
    os.environ["NLTK_DATA"] = str(root)


_offline_punkt()

import corpus  # noqa: E402
import fakes  # noqa: E402
import patches  # noqa: E402
import script  # noqa: E402
from fakes import V1, version_tuple  # noqa: E402
from pipecat import __version__ as PIPECAT_VERSION  # noqa: E402
from pipecat.frames.frames import EndFrame, TTSSpeakFrame  # noqa: E402
from pipecat.pipeline.pipeline import Pipeline  # noqa: E402
from pipecat.processors.aggregators.llm_context import LLMContext  # noqa: E402
from pipecat.processors.aggregators.llm_response_universal import (  # noqa: E402
    LLMContextAggregatorPair,
)
from pipecat.transports.base_transport import TransportParams  # noqa: E402
from turnfence_observer import TurnfenceObserver  # noqa: E402

if V1:
    from pipecat.adapters.llm.schemas.function_schema import FunctionSchema
    from pipecat.adapters.llm.schemas.tools_schema import ToolsSchema
else:
    from pipecat.adapters.schemas.function_schema import FunctionSchema  # type: ignore[no-redef]
    from pipecat.adapters.schemas.tools_schema import ToolsSchema  # type: ignore[no-redef]

log = logging.getLogger("interop.harness")

SYSTEM = "You are a helpful voice assistant."


def _tool_handler(sc: script.Scenario, spec: script.Tool, clock: fakes.Clock):
    async def handler(params: Any) -> None:
        if not spec.outlives_cancel:
            await asyncio.sleep(spec.duration)
            await params.result_callback(spec.result)
            return

        # the work runs on its own; the handler only waits for it, so cancelling the
        # handler leaves the work running, and the work still reports through the callback
        async def work() -> None:
            await asyncio.sleep(spec.duration)
            log.info("%s: work done at %.2f s, reporting", spec.name, clock.now())
            await params.result_callback(spec.result)

        task = asyncio.get_running_loop().create_task(work())
        _detached.add(task)
        await asyncio.shield(task)

    return handler


_detached: set[asyncio.Task] = set()


def _user_side_v1(sc: script.Scenario) -> tuple[Any, list[Any], dict[str, Any]]:
    """1.x: the user aggregator's turn strategies decide interruptions, its mute strategies
    mute the user."""
    from pipecat.processors.aggregators.llm_response_universal import LLMUserAggregatorParams
    from pipecat.turns import user_mute
    from pipecat.turns.user_start import (
        TranscriptionUserTurnStartStrategy,
        VADUserTurnStartStrategy,
    )
    from pipecat.turns.user_stop import SpeechTimeoutUserTurnStopStrategy
    from pipecat.turns.user_turn_strategies import UserTurnStrategies

    start = [
        VADUserTurnStartStrategy(enable_interruptions=sc.interruptions),
        TranscriptionUserTurnStartStrategy(enable_interruptions=sc.interruptions),
    ]
    stop = [SpeechTimeoutUserTurnStopStrategy()]
    mute = {"always": [user_mute.AlwaysUserMuteStrategy()], None: []}[sc.mute]
    params = LLMUserAggregatorParams(
        user_turn_strategies=UserTurnStrategies(start=start, stop=stop),
        user_mute_strategies=mute,
    )
    options = {
        # what Pipecat < 1.0 called PipelineParams(allow_interruptions=...): here, whether
        # every user turn start strategy broadcasts an interruption
        "allow_interruptions": all(s._enable_interruptions for s in start),
        "user_turn_start_strategies": [
            {"strategy": type(s).__name__, "enable_interruptions": s._enable_interruptions}
            for s in start
        ],
        "user_turn_stop_strategies": [type(s).__name__ for s in stop],
        "user_mute_strategies": [type(s).__name__ for s in mute],
    }
    return params, [], options


def _user_side_legacy(sc: script.Scenario) -> tuple[Any, list[Any], dict[str, Any]]:
    """Before 1.0: PipelineParams(allow_interruptions=...) and an STTMuteFilter before the STT."""
    from pipecat.processors.aggregators.llm_response import LLMUserAggregatorParams

    filters: list[Any] = []
    strategies: list[str] = []
    if sc.mute == "always":
        from pipecat.processors.filters.stt_mute_filter import (
            STTMuteConfig,
            STTMuteFilter,
            STTMuteStrategy,
        )

        filters.append(STTMuteFilter(config=STTMuteConfig(strategies={STTMuteStrategy.ALWAYS})))
        strategies = ["ALWAYS"]
    params = LLMUserAggregatorParams()
    options = {
        "allow_interruptions": sc.interruptions,
        "stt_mute_filter": strategies,
        "aggregation_timeout": params.aggregation_timeout,
    }
    return params, filters, options


def build(sc: script.Scenario, clock: fakes.Clock, errors: list[str]) -> dict[str, Any]:
    tools = [
        FunctionSchema(
            name=t.name,
            description=t.description,
            properties={"query": {"type": "string"}},
            required=["query"],
        )
        for t in sc.tools
    ]
    messages: list[Any] = [{"role": "system", "content": SYSTEM}]
    if tools:
        context = LLMContext(messages=messages, tools=ToolsSchema(standard_tools=tools))
    else:
        context = LLMContext(messages=messages)

    user_params, filters, options = (_user_side_v1 if V1 else _user_side_legacy)(sc)
    pair = LLMContextAggregatorPair(context, user_params=user_params)

    llm_kwargs: dict[str, Any] = {}
    if version_tuple() >= (0, 0, 101):  # function_call_timeout_secs (default 10 s until 1.0)
        llm_kwargs["function_call_timeout_secs"] = sc.function_call_timeout_secs
    llm = fakes.ScriptedLLM(sc.replies, errors, **llm_kwargs)
    for t in sc.tools:
        kw: dict[str, Any] = {"cancel_on_interruption": t.cancel_on_interruption}
        if version_tuple() >= (0, 0, 105):  # per-tool timeout_secs
            kw["timeout_secs"] = t.timeout_secs
        llm.register_function(t.name, _tool_handler(sc, t, clock), **kw)

    inp = fakes.ScriptedInput(clock, sc.utterances, params=TransportParams(audio_in_enabled=False))
    stt = fakes.ScriptedSTT(clock, sc.utterances)
    tts = fakes.ScriptedTTS(sc.seconds_per_word)
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
        for t in sc.tools
    }
    options["vad"] = {"start_secs": script.VAD_START_SECS, "stop_secs": script.VAD_STOP_SECS}
    options["audio_out_sample_rate"] = 24000
    options["audio_out_10ms_chunks"] = out._params.audio_out_10ms_chunks
    return {"pipeline": pipeline, "llm": llm, "options": options, "out": out}


async def run(sc: script.Scenario) -> tuple[list[dict[str, Any]], dict[str, Any], list[str]]:
    errors: list[str] = []
    clock = fakes.Clock()
    built = build(sc, clock, errors)
    observer = TurnfenceObserver()
    worker = make_worker(built["pipeline"], observer, sc.interruptions)
    if V1:
        from pipecat.workers.runner import WorkerRunner
    else:
        from pipecat.pipeline.runner import PipelineRunner

    @worker.event_handler("on_pipeline_started")
    async def _started(worker: Any, frame: Any) -> None:
        clock.start()

    async def act(a: script.Action) -> None:
        await clock.sleep_until(a.at)
        if a.kind == "speak":
            frame = TTSSpeakFrame(a.text)
            if not a.interruptible:
                frame.interruptible = False
            await worker.queue_frame(frame)
        else:
            raise ValueError(a.kind)

    async def drive() -> None:
        tasks = [asyncio.create_task(act(a)) for a in sc.actions]
        await clock.sleep_until(sc.end)
        for t in tasks:
            await t
        await worker.queue_frame(EndFrame())

    if V1:
        runner = WorkerRunner(handle_sigint=False)
        await runner.add_workers(worker)
        main = runner.run()
    else:
        main = PipelineRunner(handle_sigint=False).run(worker)
    await asyncio.wait_for(asyncio.gather(main, drive()), timeout=sc.end + 20)
    for t in list(_detached):
        t.cancel()
    log.info("llm keys: %s", built["llm"].keys)
    return observer.lines, built["options"], errors


def make_worker(pipeline: Any, observer: Any, interruptions: bool) -> Any:
    """The pipeline's worker as the version makes one (a `PipelineWorker` from 1.0, else a
    `PipelineTask`, which takes `allow_interruptions`), observed, never cancelled for idling, with
    RTVI and turn tracking off: the harness's and the generator's alike."""
    if V1:
        from pipecat.pipeline.worker import PipelineParams, PipelineWorker

        return PipelineWorker(
            pipeline,
            params=PipelineParams(),
            observers=[observer],
            cancel_on_idle_timeout=False,
            enable_rtvi=False,
            enable_turn_tracking=False,
        )
    from pipecat.pipeline.task import PipelineParams, PipelineTask  # type: ignore[no-redef]

    return PipelineTask(
        pipeline,
        params=PipelineParams(allow_interruptions=interruptions),
        observers=[observer],
        cancel_on_idle_timeout=False,
        enable_turn_tracking=False,
    )


def the_bug(sc: script.Scenario) -> script.Bug | None:
    """The scenario's planted bug, or the bug this Pipecat version has itself."""
    if sc.bug is not None:
        return sc.bug
    v = version_tuple()
    for lo, below, b in sc.native:
        if lo <= v < below:
            return b
    return None


def meta(sc: script.Scenario, options: dict[str, Any], line: int | None) -> dict[str, Any]:
    bug = the_bug(sc)
    m: dict[str, Any] = {
        "dialect": "pipecat",
        "version": PIPECAT_VERSION,
        "options": options,
        "expect": "accepted" if bug is None else "rejected",
        "story": sc.story,
    }
    if bug is None:
        m["source"] = f"interop/pipecat scenario {sc.name}"
    else:
        m["invariant"] = bug.invariant
        m["line"] = line
        if bug.patch is None:
            m["patch"] = "none: unpatched Pipecat, this version has the bug itself"
        else:
            m["patch"] = patches.PATCHES[bug.patch].__doc__.strip()
        m["source"] = bug.source if bug.patch is not None else f"interop/pipecat scenario {sc.name}; {bug.source}"
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
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    from loguru import logger

    logger.remove()
    if args.verbose:
        logger.add(sys.stderr, level="DEBUG")
    else:
        logger.add(sys.stderr, level="ERROR")

    sc = script.by_name(args.scenario)
    if version_tuple() < sc.min_version:
        need = ".".join(map(str, sc.min_version))
        print(f"harness: {sc.name}@{PIPECAT_VERSION}: skipped, needs Pipecat {need} ({sc.needs})")
        return 0
    if sc.bug is not None and sc.bug.patch is not None:
        patches.PATCHES[sc.bug.patch]()

    lines, options, errors = asyncio.run(run(sc))

    line: int | None = None
    bug = the_bug(sc)
    if bug is not None:
        index = bug.line(lines)
        if index is None:
            errors.append(f"the bug's predicate found no line in {sc.name}")
        else:
            line = index + 2  # the meta line is line 1
    elif (
        script_check := _accepted_check(sc, lines)
    ) is not None:
        errors.append(script_check)

    out = args.out / f"pipecat@{PIPECAT_VERSION}"
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"{sc.name}.jsonl", "w") as fh:
        fh.write(json.dumps(meta(sc, options, line)) + "\n")
        for ln in lines:
            fh.write(json.dumps(ln) + "\n")

    for e in errors:
        print(f"harness: {sc.name}@{PIPECAT_VERSION}: {e}", file=sys.stderr)
    return 1 if errors else 0


def _accepted_check(sc: script.Scenario, lines: list[dict[str, Any]]) -> str | None:
    """A correct scenario must not match any planted bug's predicate, and must have run (the
    user's turns reached the LLM)."""
    if sc.replies and not any(ln["frame"] == "LLMFullResponseStartFrame" for ln in lines):
        return "the LLM never responded: the pipeline did not run the scenario"
    for b in script.SCENARIOS:
        if b.bug is not None and b.bug.line(lines) is not None:
            return f"matches the predicate of {b.name}"
        for lo, below, native in b.native:
            if native.line(lines) is not None and not lo <= version_tuple() < below:
                return f"matches the predicate of {b.name}'s native bug"
    return None


if __name__ == "__main__":
    sys.exit(main())
