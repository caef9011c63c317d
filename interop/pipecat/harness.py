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

import fakes  # noqa: E402
import patches  # noqa: E402
import script  # noqa: E402
from pipecat import __version__ as PIPECAT_VERSION  # noqa: E402
from pipecat.adapters.llm.schemas.function_schema import FunctionSchema  # noqa: E402
from pipecat.adapters.llm.schemas.tools_schema import ToolsSchema  # noqa: E402
from pipecat.frames.frames import EndFrame, TTSSpeakFrame  # noqa: E402
from pipecat.pipeline.pipeline import Pipeline  # noqa: E402
from pipecat.pipeline.worker import PipelineParams, PipelineWorker  # noqa: E402
from pipecat.processors.aggregators.llm_context import LLMContext  # noqa: E402
from pipecat.processors.aggregators.llm_response_universal import (  # noqa: E402
    LLMContextAggregatorPair,
    LLMUserAggregatorParams,
)
from pipecat.transports.base_transport import TransportParams  # noqa: E402
from pipecat.turns import user_mute  # noqa: E402
from pipecat.turns.user_start import (  # noqa: E402
    TranscriptionUserTurnStartStrategy,
    VADUserTurnStartStrategy,
)
from pipecat.turns.user_stop import SpeechTimeoutUserTurnStopStrategy  # noqa: E402
from pipecat.turns.user_turn_strategies import UserTurnStrategies  # noqa: E402
from pipecat.workers.runner import WorkerRunner  # noqa: E402
from turnfence_observer import TurnfenceObserver  # noqa: E402

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

    start = [
        VADUserTurnStartStrategy(enable_interruptions=sc.interruptions),
        TranscriptionUserTurnStartStrategy(enable_interruptions=sc.interruptions),
    ]
    stop = [SpeechTimeoutUserTurnStopStrategy()]
    mute = [getattr(user_mute, sc.mute)()] if sc.mute else []
    pair = LLMContextAggregatorPair(
        context,
        user_params=LLMUserAggregatorParams(
            user_turn_strategies=UserTurnStrategies(start=start, stop=stop),
            user_mute_strategies=mute,
        ),
    )

    llm = fakes.ScriptedLLM(
        sc.replies, errors, function_call_timeout_secs=sc.function_call_timeout_secs
    )
    for t in sc.tools:
        llm.register_function(
            t.name,
            _tool_handler(sc, t, clock),
            cancel_on_interruption=t.cancel_on_interruption,
            timeout_secs=t.timeout_secs,
        )

    inp = fakes.ScriptedInput(clock, sc.utterances, params=TransportParams(audio_in_enabled=False))
    stt = fakes.ScriptedSTT(clock, sc.utterances)
    tts = fakes.ScriptedTTS(sc.seconds_per_word)
    out = fakes.PlayoutOutput(
        params=TransportParams(audio_out_enabled=True, audio_out_end_silence_secs=0)
    )
    pipeline = Pipeline([inp, stt, pair.user(), llm, tts, out, pair.assistant()])

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
        "function_call_timeout_secs": sc.function_call_timeout_secs,
        "tools": {
            t.name: {
                "cancel_on_interruption": llm._functions[t.name].cancel_on_interruption,
                "timeout_secs": llm._functions[t.name].timeout_secs,
            }
            for t in sc.tools
        },
        "vad": {"start_secs": script.VAD_START_SECS, "stop_secs": script.VAD_STOP_SECS},
        "audio_out_sample_rate": 24000,
        "audio_out_10ms_chunks": out._params.audio_out_10ms_chunks,
    }
    return {"pipeline": pipeline, "llm": llm, "options": options, "out": out}


async def run(sc: script.Scenario) -> tuple[list[dict[str, Any]], dict[str, Any], list[str]]:
    errors: list[str] = []
    clock = fakes.Clock()
    built = build(sc, clock, errors)
    observer = TurnfenceObserver()
    worker = PipelineWorker(
        built["pipeline"],
        params=PipelineParams(),
        observers=[observer],
        cancel_on_idle_timeout=False,
        enable_rtvi=False,
        enable_turn_tracking=False,
    )

    @worker.event_handler("on_pipeline_started")
    async def _started(worker: Any, frame: Any) -> None:
        clock.start()

    async def act(a: script.Action) -> None:
        await clock.sleep_until(a.at)
        if a.kind == "speak":
            frame = TTSSpeakFrame(a.text)
            frame.interruptible = a.interruptible
            await worker.queue_frame(frame)
        else:
            raise ValueError(a.kind)

    async def drive() -> None:
        tasks = [asyncio.create_task(act(a)) for a in sc.actions]
        await clock.sleep_until(sc.end)
        for t in tasks:
            await t
        await worker.queue_frame(EndFrame())

    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    await asyncio.wait_for(asyncio.gather(runner.run(), drive()), timeout=sc.end + 20)
    for t in list(_detached):
        t.cancel()
    log.info("llm keys: %s", built["llm"].keys)
    return observer.lines, built["options"], errors


def meta(sc: script.Scenario, options: dict[str, Any], line: int | None) -> dict[str, Any]:
    m: dict[str, Any] = {
        "dialect": "pipecat",
        "version": PIPECAT_VERSION,
        "options": options,
        "expect": "accepted" if sc.bug is None else "rejected",
        "story": sc.story,
    }
    if sc.bug is None:
        m["source"] = f"interop/pipecat scenario {sc.name}"
    else:
        m["invariant"] = sc.bug.invariant
        m["line"] = line
        m["patch"] = patches.PATCHES[sc.bug.patch].__doc__.strip()
        m["source"] = sc.bug.source
    return {"meta": m}


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
    if sc.bug is not None:
        patches.PATCHES[sc.bug.patch]()

    lines, options, errors = asyncio.run(run(sc))

    line: int | None = None
    if sc.bug is not None:
        index = sc.bug.line(lines)
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
    """A correct scenario must not match any planted bug's predicate."""
    for b in script.SCENARIOS:
        if b.bug is not None and b.bug.line(lines) is not None:
            return f"matches the predicate of {b.name}"
    return None


if __name__ == "__main__":
    sys.exit(main())
