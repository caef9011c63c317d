"""Virtual time for a generated session: an asyncio loop whose clock jumps to the next timer.

A session of LiveKit Agents in real time lasts as long as its timeline (the fake microphone
produces a 20 ms frame every 20 ms). Here it costs only the CPU its events take:

- ``VirtualEventLoop`` is a ``SelectorEventLoop`` whose ``time()`` is a ``VirtualClock``. Its
  selector never waits: when no file descriptor is ready and the loop would sleep until its
  next timer, the clock jumps there instead. No timer fires early and none is skipped, so what
  runs, and in which order, is what the real loop would run if every callback took no time.
- ``install()`` makes ``time.time``, ``time.monotonic``, ``time.perf_counter`` (and their
  ``_ns`` twins) read the active virtual clock while a session runs, and the real clock
  otherwise. It must run before livekit is imported: pydantic models capture
  ``default_factory=time.time`` when their class is defined.

The voice pipeline of livekit-agents 1.6.4 and 1.8.9 starts no thread and uses no executor (the
only ones are the recorder and the audio decoder, neither used here), so every wake-up is a
timer or a callback of the loop itself. A loop with nothing to run and no timer would wait for
ever: it raises ``Stalled`` instead.
"""

from __future__ import annotations

import asyncio
import selectors
import time
from typing import Any

EPOCH = 1_750_000_000.0
"""The wall-clock time a session starts at (a fixed instant, so a run is reproducible)."""

_real = {
    name: getattr(time, name)
    for name in ("time", "monotonic", "perf_counter", "time_ns", "monotonic_ns", "perf_counter_ns")
}
_active: VirtualClock | None = None


class Stalled(RuntimeError):
    """Nothing ready, no timer, no file descriptor can wake the loop: the session hangs."""


class VirtualClock:
    def __init__(self) -> None:
        self.now = 0.0  # seconds since the session's start

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def __enter__(self) -> VirtualClock:
        global _active
        _active = self
        return self

    def __exit__(self, *exc: Any) -> None:
        global _active
        _active = None


def _wall() -> float:
    return EPOCH + _active.now if _active is not None else _real["time"]()


def _mono() -> float:
    return 1000.0 + _active.now if _active is not None else _real["monotonic"]()


def _perf() -> float:
    return 1000.0 + _active.now if _active is not None else _real["perf_counter"]()


def install() -> None:
    time.time = _wall  # type: ignore[assignment]
    time.monotonic = _mono  # type: ignore[assignment]
    time.perf_counter = _perf  # type: ignore[assignment]
    time.time_ns = lambda: int(_wall() * 1e9)  # type: ignore[assignment]
    time.monotonic_ns = lambda: int(_mono() * 1e9)  # type: ignore[assignment]
    time.perf_counter_ns = lambda: int(_perf() * 1e9)  # type: ignore[assignment]


class _JumpingSelector:
    """The loop's selector: polls, and where the loop would sleep, moves the clock instead."""

    def __init__(self, clock: VirtualClock) -> None:
        self._real = selectors.DefaultSelector()
        self._clock = clock

    def select(self, timeout: float | None = None) -> list[Any]:
        ready = self._real.select(0)
        if ready:
            return ready
        if timeout is None:
            raise Stalled(f"nothing scheduled at t={self._clock.now:.3f} s")
        if timeout > 0:
            self._clock.advance(timeout)
        return []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class VirtualEventLoop(asyncio.SelectorEventLoop):
    def __init__(self, clock: VirtualClock) -> None:
        super().__init__(_JumpingSelector(clock))  # type: ignore[arg-type]
        self._vclock = clock

    def time(self) -> float:
        return 1000.0 + self._vclock.now


def run(coro_fn: Any, *args: Any, limit_s: float = 600.0) -> Any:
    """Run ``coro_fn(*args)`` on a fresh virtual loop, stopping it after ``limit_s`` of
    virtual time (a step cap: a session that never ends is a failure, not a hang)."""
    clock = VirtualClock()
    loop = VirtualEventLoop(clock)
    with clock:
        try:
            asyncio.set_event_loop(loop)
            return loop.run_until_complete(asyncio.wait_for(coro_fn(*args), limit_s))
        finally:
            try:
                _cancel_all(loop)
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                asyncio.set_event_loop(None)
                loop.close()


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for t in tasks:
        t.cancel()
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
