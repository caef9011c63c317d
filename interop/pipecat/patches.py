"""Planted bugs: monkeypatches of the installed pipecat-ai, one per rejected scenario.

``PATCHES`` maps a name to a function that patches the package inside the harness process; the
harness calls it before building the pipeline, only for the scenario whose ``bug.patch`` names
it (each scenario runs in a process of its own). A patch's docstring is the one-sentence
``patch`` of the fixture's meta line. Each reproduces a public report (see the README).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

PATCHES: dict[str, Callable[[], None]] = {}


def patch(fn: Callable[[], None]) -> Callable[[], None]:
    PATCHES[fn.__name__] = fn
    return fn


@patch
def llm_not_interrupted() -> None:
    """An InterruptionFrame no longer cancels the LLM service's work: the generation in progress streams on, and its text reaches the TTS after the interruption, as in pipecat-ai/pipecat#950."""  # noqa: E501
    from pipecat.processors.frame_processor import FrameProcessor
    from pipecat.services.llm_service import LLMService

    start = FrameProcessor._start_interruption

    async def patched(self: Any) -> None:
        if isinstance(self, LLMService):
            return None
        return await start(self)

    FrameProcessor._start_interruption = patched  # type: ignore[method-assign]


@patch
def interruption_keeps_function_calls() -> None:
    """LLMService._handle_interruptions cancels nothing: a call registered with cancel_on_interruption=True, started by the generation the interruption binned, runs to its end and its result is taken, as in pipecat-ai/pipecat#4997."""  # noqa: E501
    from pipecat.services.llm_service import LLMService

    async def patched(self: Any, _frame: Any) -> None:
        return None

    LLMService._handle_interruptions = patched  # type: ignore[method-assign]


@patch
def late_results_accepted() -> None:
    """A cancelled call is never marked settled, so the result its work reports after the FunctionCallCancelFrame is broadcast, and the assistant aggregator takes a result of a cancelled call as the call's answer (over its CANCELLED placeholder) and runs the LLM on it."""  # noqa: E501
    from pipecat.processors.aggregators.llm_response_universal import LLMAssistantAggregator
    from pipecat.services.llm_service import FunctionCallRunnerItem

    # the guard of the result callback reads runner_item.settled: never settled
    FunctionCallRunnerItem.settled = property(  # type: ignore[assignment]
        lambda self: False, lambda self, value: None
    )

    cancel = LLMAssistantAggregator._handle_function_call_cancel
    result = LLMAssistantAggregator._handle_function_call_result

    async def patched_cancel(self: Any, frame: Any) -> None:
        in_progress = self._function_calls_in_progress.get(frame.tool_call_id)
        await cancel(self, frame)
        if in_progress is not None:
            self.__dict__.setdefault("_cancelled_calls", {})[frame.tool_call_id] = in_progress

    async def patched_result(self: Any, frame: Any) -> None:
        cancelled = self.__dict__.get("_cancelled_calls", {})
        if frame.tool_call_id not in self._function_calls_in_progress and frame.tool_call_id in cancelled:
            self._function_calls_in_progress[frame.tool_call_id] = cancelled.pop(frame.tool_call_id)
        await result(self, frame)

    LLMAssistantAggregator._handle_function_call_cancel = patched_cancel  # type: ignore[method-assign]
    LLMAssistantAggregator._handle_function_call_result = patched_result  # type: ignore[method-assign]
