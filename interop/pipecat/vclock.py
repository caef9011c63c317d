"""Virtual time for a session of Pipecat's real code: an asyncio event loop whose clock is a
number that jumps to the next scheduled timer whenever nothing is ready to run.

A session of 20 s costs what its callbacks cost, not 20 s; and since no callback ever waits on
the wall clock, the same session gives the same log every time. Nothing of Pipecat is changed:
its timers are the loop's (``asyncio.sleep``, ``wait_for``), and the few places it reads the
clock itself (the pipeline's ``SystemClock``: ``time.monotonic_ns``; the output transport's
bot-speaking detection: ``time.time``) read the ``time`` module, whose clock functions
``install`` points at the same virtual clock. Meant for a process of its own (a forked child
per session): ``install`` replaces ``time``'s functions for good.
"""

from __future__ import annotations

import asyncio
import selectors
import time as _time
from typing import Any

EPOCH = 1_800_000_000.0
"""What ``time.time()`` says at virtual 0 (``time.time() - EPOCH`` is the virtual clock) (any fixed value: the sessions never show it)."""


class VirtualClock:
    """Seconds; starts at ``START`` rather than 0, since Pipecat's ``SystemClock`` takes a start
    time of 0 for "not started"."""

    START = 1000.0

    def __init__(self) -> None:
        self.now = self.START

    def advance_to(self, t: float) -> None:
        if t > self.now:
            self.now = t


class _Selector(selectors.DefaultSelector):  # type: ignore[misc, valid-type]
    """Polls without waiting; when nothing is ready, the clock moves on by the loop's timeout
    (the time to its next timer) instead of sleeping it."""

    def __init__(self, clock: VirtualClock, stall_secs: float) -> None:
        super().__init__()
        self._clock = clock
        self._stall = stall_secs

    def select(self, timeout: float | None = None) -> list[Any]:
        ready = super().select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:
            # nothing scheduled and nothing ready: only I/O or another thread could wake the
            # loop, and a session has neither; wait a little for real, then report the stall
            ready = super().select(self._stall)
            if not ready:
                raise RuntimeError("virtual time: the loop waits on nothing (deadlock)")
            return ready
        self._clock.advance_to(self._clock.now + timeout)
        return []


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    def __init__(self, clock: VirtualClock, stall_secs: float = 5.0) -> None:
        super().__init__(selector=_Selector(clock, stall_secs))
        self.vclock = clock
        self._clock_resolution = 1e-9

    def time(self) -> float:
        return self.vclock.now


def install(clock: VirtualClock) -> None:
    """Point the ``time`` module's clocks at ``clock`` (this process, for good)."""
    _time.monotonic = lambda: clock.now  # type: ignore[assignment]
    _time.perf_counter = lambda: clock.now  # type: ignore[assignment]
    _time.monotonic_ns = lambda: int(round(clock.now * 1e9))  # type: ignore[assignment]
    _time.perf_counter_ns = lambda: int(round(clock.now * 1e9))  # type: ignore[assignment]
    _time.time = lambda: EPOCH + clock.now  # type: ignore[assignment]
    _time.time_ns = lambda: int(round((EPOCH + clock.now) * 1e9))  # type: ignore[assignment]


def run(coro: Any, stall_secs: float = 5.0) -> Any:
    """``asyncio.run`` in virtual time."""
    clock = VirtualClock()
    install(clock)
    loop = VirtualTimeLoop(clock, stall_secs)
    asyncio.set_event_loop(loop)
    try:
        return loop.run_until_complete(coro)
    finally:
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()
