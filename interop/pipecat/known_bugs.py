"""Witnesses of Pipecat's own bugs: where a documented bug of the pinned Pipecat as released
(BUGS.md, "The stack's own bugs") runs in a generated session, the line where it first showed,
the way a planted patch records its witness (``patches.fired``).

Every hook here only observes: it wraps a method of ``LLMService``
(``pipecat/services/llm_service.py``), calls it unchanged with the same arguments and returns
what it returned, and notes which calls the service answered (a final
``FunctionCallResultFrame``) or cancelled (a ``FunctionCallCancelFrame``). What each witness
stands for is Pipecat's code path, never what the checker said:

- ``late_result_after_cancel`` (``tool_call_settled``; before 1.8.0): the result callback
  ``_run_function_call`` hands the handler pushes its ``FunctionCallResultFrame`` with no
  settled guard (added by pipecat commit 1933578), so a handler whose work outlives the
  cancellation of its task still reports: the LLM service pushes a result for a call it has
  already pushed a ``FunctionCallCancelFrame`` for. Witness: that result's line.
- ``handler_returns_without_result`` (``tool_call_settled``): ``_run_function_call`` returned
  (the handler ended, neither cancelled nor raising) and nothing answered the call: no final
  result, no cancel, and (1.x) the call not ``settled``. Nothing settles it for the handler
  (1.14.0 settles on the handler's behalf only when it raises; its timeout task is cancelled in
  the ``finally``). A log shows it only where the released code would have settled a handler
  still running: at the call's timeout (1.x; 0.0.84 has none), where ``timeout_handler`` would
  have cancelled it. Witness: the next line at that deadline, if the log goes on past it (else
  the pipeline ended first, and its cleanup cancels a running handler without a frame too).
- ``interruption_skips_returned_call`` (``left_open``): an interruption reaches
  ``_handle_interruptions`` while such a call is unanswered and its function is
  ``cancel_on_interruption``: ``_cancel_function_call`` cancels only the tasks still in
  ``_function_call_tasks``, which ``_function_call_task_finished`` emptied of it, so no
  ``FunctionCallCancelFrame`` is pushed, and the reply the interruption cancelled waits on the
  call for ever. Witness: the next line.

``session.py`` opens a ``Watch`` in each session's process; the witnesses go to the log's meta
as ``known_bugs`` (``interop/corpus.py``), and ``interop/oracle.py`` judges them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from fakes import version_tuple

RULES = {
    "late_result_after_cancel": "tool_call_settled",
    "handler_returns_without_result": "tool_call_settled",
    "interruption_skips_returned_call": "left_open",
}

# the Pipecat releases a bug is in, where not all (the first release with the fix)
FIXED_IN: dict[str, tuple[int, ...]] = {"late_result_after_cancel": (1, 8, 0)}


class Watch:
    """One session's witnesses. ``lines`` gives how many frame lines the observer has written
    (the meta line is line 1, so the next line is ``lines() + 2``)."""

    def __init__(self, lines: Callable[[], int]) -> None:
        self.lines = lines
        self.found: dict[str, int] = {}
        self.answered: set[str] = set()
        self.cancelled: set[str] = set()
        self.returned: dict[str, str] = {}  # call id -> function name: handler returned, unanswered
        v = version_tuple()
        self.active = {n for n in RULES if v < FIXED_IN.get(n, (10**6,))}

    def record(self, name: str) -> None:
        if name in self.active and name not in self.found:
            self.found[name] = self.lines() + 2

    def witnesses(self) -> list[dict[str, Any]]:
        """The witnesses, once the session is over: each at a line the log has (a witness due
        after the last line showed nothing)."""
        last = self.lines() + 1
        return [
            {"name": n, "rule": RULES[n], "line": ln}
            for n, ln in sorted(self.found.items(), key=lambda x: (x[1], x[0]))
            if ln <= last
        ]

    def install(self) -> None:
        """Wrap the methods, after any planted patch (which then is the code path watched)."""
        from pipecat.processors.frame_processor import FrameDirection
        from pipecat.services.llm_service import LLMService

        watch = self
        push = LLMService.push_frame
        run = LLMService._run_function_call
        interruptions = LLMService._handle_interruptions

        async def push_frame(self: Any, frame: Any, direction: Any = FrameDirection.DOWNSTREAM) -> None:
            name = type(frame).__name__
            if direction == FrameDirection.DOWNSTREAM and name == "FunctionCallResultFrame":
                props = getattr(frame, "properties", None)
                if props is None or getattr(props, "is_final", True):
                    if frame.tool_call_id in watch.cancelled:
                        watch.record("late_result_after_cancel")
                    watch.answered.add(frame.tool_call_id)
            elif direction == FrameDirection.DOWNSTREAM and name == "FunctionCallCancelFrame":
                watch.cancelled.add(frame.tool_call_id)
            return await push(self, frame, direction)

        async def run_function_call(self: Any, runner_item: Any) -> None:
            loop = asyncio.get_running_loop()
            started = loop.time()
            result = await run(self, runner_item)
            call = runner_item.tool_call_id
            done = watch.answered | watch.cancelled
            if call not in done and not getattr(runner_item, "settled", False):
                watch.returned[call] = runner_item.function_name
                entry = self._functions.get(runner_item.function_name) or self._functions.get(None)
                timeout = getattr(entry, "timeout_secs", None) or getattr(self, "_function_call_timeout_secs", None)
                if timeout:
                    # where the released code's timeout_handler would have cancelled it
                    def due(call: str = call) -> None:
                        if call not in watch.answered and call not in watch.cancelled:
                            watch.record("handler_returns_without_result")

                    loop.call_at(max(started + timeout, loop.time()), due)
            return result

        async def handle_interruptions(self: Any, frame: Any) -> None:
            for call, fn in watch.returned.items():
                entry = self._functions.get(fn) or self._functions.get(None)
                unanswered = call not in watch.answered and call not in watch.cancelled
                if entry is not None and entry.cancel_on_interruption and unanswered:
                    watch.record("interruption_skips_returned_call")
            return await interruptions(self, frame)

        LLMService.push_frame = push_frame  # type: ignore[method-assign]
        LLMService._run_function_call = run_function_call  # type: ignore[method-assign]
        LLMService._handle_interruptions = handle_interruptions  # type: ignore[method-assign]
