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

RULES: dict[str, str] = {
    "llm_not_interrupted": "no_late_delivery",
    "interruption_keeps_function_calls": "cancelled_tool_leaves_nothing",
    "late_results_accepted": "tool_call_settled",
}
"""The invariant each patch breaks where it fires (the generator's patched oracle)."""

# The witness: where a patch first changed what Pipecat did. The generator hands ``observe`` a
# function giving how many frame lines the observer has written; a patch calls ``fired()`` at
# the moment its patched code path takes a step the released code would not, and the next line
# the observer writes (1-based, the meta line is line 1) is the witness. Without ``observe``
# (the harness's scenarios) ``fired`` records nothing.
#
# A patch's step may break one rule or another depending on what the session does next (a call
# the interruption left running that reports, or never does; a generation that streams on with
# text, or with a tool call): ``fired(rule)`` and ``becomes(rule)`` then say which, and
# ``rule_of`` is the rule the log must show at or after the witness (``RULES`` otherwise).
_lines: Callable[[], int] | None = None
_witness: int | None = None
_rule: str | None = None


def observe(lines: Callable[[], int]) -> None:
    global _lines
    _lines = lines


def fired(rule: str | None = None) -> None:
    global _witness, _rule
    if _witness is None and _lines is not None:
        _witness = _lines() + 2
        _rule = rule


def becomes(rule: str) -> None:
    """What the fired patch's step turned out to break, once the session showed it."""
    global _rule
    if _witness is not None:
        _rule = rule


def witness_line() -> int | None:
    return _witness


def rule_of(name: str) -> str:
    return _rule or RULES[name]


def patch(fn: Callable[[], None]) -> Callable[[], None]:
    PATCHES[fn.__name__] = fn
    return fn


@patch
def llm_not_interrupted() -> None:
    """An InterruptionFrame no longer cancels the LLM service's work: the generation in progress streams on, and its text reaches the TTS after the interruption, as in pipecat-ai/pipecat#950."""  # noqa: E501
    from pipecat.processors.frame_processor import FrameProcessor
    from pipecat.services.llm_service import LLMService

    start = FrameProcessor._start_interruption
    push = LLMService.push_frame
    queue = LLMService.queue_frame

    async def patched(self: Any) -> None:
        if isinstance(self, LLMService):
            # witness: the generation this interruption should have stopped pushes text or a
            # tool call on, or a frame waiting in the LLM's queue (which the released code
            # drops with the process task) goes on
            self.__dict__["_tf_skipped_interruption"] = True
            ahead = self.__dict__.get("_tf_ahead")
            self.__dict__["_tf_kept"] = set(ahead if ahead is not None else self.__dict__.get("_tf_waiting", ()))
            return None
        return await start(self)

    async def patched_queue(self: Any, frame: Any, *args: Any, **kwargs: Any) -> None:
        name = type(frame).__name__
        if name == "TTSSpeakFrame":
            self.__dict__.setdefault("_tf_waiting", set()).add(id(frame))
        elif name in ("InterruptionFrame", "StartInterruptionFrame"):
            # what the released code drops: the frames that came before the interruption
            self.__dict__["_tf_ahead"] = set(self.__dict__.get("_tf_waiting", ()))
        return await queue(self, frame, *args, **kwargs)

    async def patched_push(self: Any, frame: Any, *args: Any, **kwargs: Any) -> None:
        name = type(frame).__name__
        if name == "TTSSpeakFrame":
            self.__dict__.get("_tf_waiting", set()).discard(id(frame))
            if id(frame) in self.__dict__.get("_tf_kept", ()) and getattr(frame, "interruptible", True):
                # the app's speech that waited in the LLM's queue at the interruption is spoken
                fired()
        if self.__dict__.get("_tf_skipped_interruption"):
            if name == "LLMFullResponseStartFrame":
                self.__dict__["_tf_skipped_interruption"] = False
            elif name == "FunctionCallsStartedFrame":
                # what streams on first is a tool call of the generation the interruption
                # cancelled: a child spawned after the cancel (the released code cancelled the
                # generation's task, LLMService._start_interruption, before it could start one)
                fired("cancel_tree_drained")
            elif name == "LLMTextFrame":
                fired()
            # an LLMFullResponseEndFrame alone (a reply with no text and no call streams on
            # to its end) delivers nothing: the cancelled reply's end, no rule broken
        return await push(self, frame, *args, **kwargs)

    FrameProcessor._start_interruption = patched  # type: ignore[method-assign]
    LLMService.push_frame = patched_push  # type: ignore[method-assign]
    LLMService.queue_frame = patched_queue  # type: ignore[method-assign]


@patch
def interruption_keeps_function_calls() -> None:
    """LLMService._handle_interruptions cancels nothing: a call registered with cancel_on_interruption=True, started by the generation the interruption binned, runs to its end and its result is taken, as in pipecat-ai/pipecat#4997."""  # noqa: E501
    from pipecat.services.llm_service import LLMService

    push = LLMService.push_frame
    kept: set[str] = set()

    async def patched(self: Any, _frame: Any) -> None:
        # witness: a call the released code cancels here (its FunctionCallCancelFrame) runs on.
        # Until it reports, the reply the interruption cancelled waits on it: a call whose
        # handler never returns leaves that reply open for ever (`left_open`)
        for item in list(getattr(self, "_function_call_tasks", {}).values()):
            entry = self._functions.get(item.function_name)
            if entry is not None and entry.cancel_on_interruption and not getattr(item, "settled", False):
                kept.add(item.tool_call_id)
                fired("left_open")
        return None

    async def patched_push(self: Any, frame: Any, *args: Any, **kwargs: Any) -> None:
        # a kept call that reports: its result is taken, after its reply was cancelled
        if type(frame).__name__ == "FunctionCallResultFrame" and frame.tool_call_id in kept:
            becomes("cancelled_tool_leaves_nothing")
        return await push(self, frame, *args, **kwargs)

    LLMService._handle_interruptions = patched  # type: ignore[method-assign]
    LLMService.push_frame = patched_push  # type: ignore[method-assign]


@patch
def late_results_accepted() -> None:
    """A cancelled call is never marked settled, so the result its work reports after the FunctionCallCancelFrame is broadcast, and the assistant aggregator takes a result of a cancelled call as the call's answer (over its CANCELLED placeholder) and runs the LLM on it."""  # noqa: E501
    from pipecat.processors.aggregators.llm_response_universal import LLMAssistantAggregator
    from pipecat.services.llm_service import FunctionCallRunnerItem

    # the guard of the result callback reads runner_item.settled: never settled
    FunctionCallRunnerItem.settled = property(  # type: ignore[assignment]
        lambda self: False, lambda self, value: None
    )
    _witness_results_after_cancel()

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


def _witness_results_after_cancel() -> None:
    """Witness for the patches that let a call be answered after its cancellation: the
    ``FunctionCallResultFrame`` an LLM service broadcasts for a call it already broadcast a
    ``FunctionCallCancelFrame`` for (the released code rejects that result)."""
    from pipecat.services.llm_service import LLMService

    broadcast = LLMService.broadcast_frame

    async def patched(self: Any, frame_cls: Any, *args: Any, **kwargs: Any) -> Any:
        cancelled = self.__dict__.setdefault("_tf_cancelled_calls", set())
        call = kwargs.get("tool_call_id")
        if frame_cls.__name__ == "FunctionCallCancelFrame":
            cancelled.add(call)
        elif frame_cls.__name__ == "FunctionCallResultFrame" and call in cancelled:
            fired()
        return await broadcast(self, frame_cls, *args, **kwargs)

    LLMService.broadcast_frame = patched  # type: ignore[method-assign]


@patch
def output_keeps_interrupted_audio() -> None:
    """The output transport no longer drops the audio queued when an interruption arrives: the interrupted reply's synthesized audio still plays, as before pipecat-ai/pipecat#165 ("clear audio output buffer if interrupted")."""  # noqa: E501
    from pipecat.transports.base_output import BaseOutputTransport

    sender = BaseOutputTransport.MediaSender if hasattr(BaseOutputTransport, "MediaSender") else None
    if sender is None:  # pragma: no cover - every pinned version has MediaSender
        raise RuntimeError("no BaseOutputTransport.MediaSender")

    handle = sender.handle_interruptions

    async def patched(self: Any, frame: Any) -> None:
        queue = getattr(self, "_audio_queue", None)
        # what the released code drops: interruptible audio waiting in the queue (1.x keeps
        # uninterruptible frames through an interruption anyway)
        waiting = list(getattr(queue, "_queue", ())) if queue is not None else []
        pending = any(hasattr(x, "audio") and getattr(x, "interruptible", True) for x in waiting)
        if not hasattr(queue, "reset"):
            # before 1.x the interruption cancels and recreates the audio task and its queue:
            # keep both, and only say the bot stopped
            if not self._transport.interruptions_allowed:
                return await handle(self, frame)
            if pending:
                fired()
            await self._bot_stopped_speaking()
            return None
        # 1.x: everything but the queue's reset
        reset = queue.reset
        queue.reset = lambda: None  # type: ignore[method-assign]
        runs = list(getattr(self, "_audio_runs", []))
        try:
            await handle(self, frame)
        finally:
            queue.reset = reset  # type: ignore[method-assign]
        if runs:
            from collections import deque

            self._audio_runs = deque(runs)
        if pending or any(flag is False for _, flag in runs):
            fired()

    sender.handle_interruptions = patched  # type: ignore[method-assign]


@patch
def tts_keeps_interrupted_synthesis() -> None:
    """The TTS service keeps an interrupted reply's synthesis when the bot has not started speaking yet (an interruption that comes while its audio is still being synthesized or on its way to the output), and that audio is played after the interruption, as in pipecat-ai/pipecat#3986."""  # noqa: E501
    from pipecat.services.tts_service import TTSService

    process = TTSService.process_frame
    handle = TTSService._handle_interruption

    async def patched_process(self: Any, frame: Any, direction: Any) -> None:
        name = type(frame).__name__
        if name == "BotStartedSpeakingFrame":
            self.__dict__["_tf_bot_speaking"] = True
        elif name == "BotStoppedSpeakingFrame":
            self.__dict__["_tf_bot_speaking"] = False
        return await process(self, frame, direction)

    async def patched_handle(self: Any, frame: Any, direction: Any) -> None:
        if self.__dict__.get("_tf_bot_speaking"):
            return await handle(self, frame, direction)
        if hasattr(self, "get_audio_contexts") and self.get_audio_contexts():
            fired()
        # the guard of #3986: nothing of the interruption reaches the synthesis in progress
        await self.push_frame(frame, direction)

    TTSService.process_frame = patched_process  # type: ignore[method-assign]
    TTSService._handle_interruption = patched_handle  # type: ignore[method-assign]


@patch
def uninterruptible_speech_dropped() -> None:
    """An interruption drops the TTS service's uninterruptible contexts with the interruptible ones: the rest of a TTSSpeakFrame(interruptible=False) is never synthesized or played, as in pipecat-ai/pipecat#4260 and #4420 (fixed by #4435)."""  # noqa: E501
    from pipecat.services.tts_service import TTSService

    interrupt = TTSService._interrupt_audio_contexts

    async def patched(self: Any) -> None:
        kept = [c for c in self._tts_contexts.values() if not c.interruptible]
        if kept:
            fired()
            for c in kept:
                c.interruptible = True
        return await interrupt(self)

    TTSService._interrupt_audio_contexts = patched  # type: ignore[method-assign]


@patch
def timeout_leaves_handler_running() -> None:
    """A call's timeout tells the pipeline the call is cancelled (FunctionCallCancelFrame, run_llm) but neither cancels its handler nor settles it: the handler runs on and its result is broadcast after the cancellation, as in pipecat-ai/pipecat#4936 (fixed by #5291)."""  # noqa: E501
    from pipecat.services.llm_service import FunctionCallRunnerItem, LLMService

    def get(self: Any) -> bool:
        return self.__dict__.get("_tf_settled", False)

    def set_(self: Any, value: bool) -> None:
        import sys

        # the timeout handler settles the call before cancelling it: not here
        if value and sys._getframe(1).f_code.co_name == "timeout_handler":
            self.__dict__["_tf_timed_out"] = True
            return
        self.__dict__["_tf_settled"] = value

    FunctionCallRunnerItem.settled = property(get, set_)  # type: ignore[assignment]

    async def patched(self: Any, runner_item: Any) -> None:
        await self._broadcast_function_call_cancelled(runner_item, run_llm=True)

    LLMService._timeout_function_call = patched  # type: ignore[method-assign]
    _witness_results_after_cancel()


@patch
def progress_disarms_timeout() -> None:
    """An intermediate result (is_final=False) of an async call disarms the call's timeout: a call that reported progress is never cancelled at its deadline and runs past it, as in pipecat-ai/pipecat#5481 (fixed by #5491)."""  # noqa: E501
    from pipecat.services.llm_service import LLMService

    broadcast = LLMService.broadcast_frame
    timeout = LLMService._timeout_function_call

    async def patched_broadcast(self: Any, frame_cls: Any, *args: Any, **kwargs: Any) -> Any:
        props = kwargs.get("properties")
        if frame_cls.__name__ == "FunctionCallResultFrame" and props is not None and not props.is_final:
            self.__dict__.setdefault("_tf_disarmed", set()).add(kwargs.get("tool_call_id"))
        return await broadcast(self, frame_cls, *args, **kwargs)

    async def patched_timeout(self: Any, runner_item: Any) -> None:
        if runner_item.tool_call_id in self.__dict__.get("_tf_disarmed", set()):
            # the released code cancels the call here; the disarmed timer never fired
            runner_item.settled = False
            fired()
            return None
        return await timeout(self, runner_item)

    LLMService.broadcast_frame = patched_broadcast  # type: ignore[method-assign]
    LLMService._timeout_function_call = patched_timeout  # type: ignore[method-assign]


RULES.update(
    {
        "output_keeps_interrupted_audio": "no_late_delivery",
        "tts_keeps_interrupted_synthesis": "no_late_delivery",
        "uninterruptible_speech_dropped": "uninterruptible_output_survives",
        "timeout_leaves_handler_running": "tool_call_settled",
        "progress_disarms_timeout": "deadline_respected",
    }
)

# the oldest Pipecat each patch applies to (what it patches exists there)
MIN_VERSION: dict[str, tuple[int, ...]] = {
    "late_results_accepted": (1, 8, 0),
    "uninterruptible_speech_dropped": (1, 11, 0),
    "timeout_leaves_handler_running": (1, 8, 0),
    "progress_disarms_timeout": (1, 8, 0),
    "tts_keeps_interrupted_synthesis": (1, 0, 0),
}
