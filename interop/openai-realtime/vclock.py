"""Virtual time for a generated session: an asyncio event loop whose clock jumps to the next
timer when nothing is ready, and an in-memory websocket in place of the loopback socket.

A session of the SDK against the scripted server costs what its Python code costs, not the
seconds it lasts, and the same drawn session gives the same log on every run: every timer fires
at its exact virtual instant, and what is ready at one instant runs in the loop's FIFO order.

- ``VirtualLoop``: ``asyncio.SelectorEventLoop`` with ``time()`` a counter. Its selector polls
  the real one without waiting (the loop's self-pipe, so a callback from another thread is still
  seen); when nothing is ready it advances the counter by the timeout the loop asked to wait,
  which is the delay to the loop's next timer. A loop with nothing ready and no timer is stuck:
  ``Stuck`` is raised rather than waiting for ever.
- ``Pipe``: one direction of the websocket, in order, each message delivered ``latency_ms``
  (plus a drawn jitter, never reordering) after it was sent.
- ``VirtualWebSocket``: the pair of pipes the SDK's ``OpenAIRealtimeWebSocketModel`` and the
  scripted server each see as their websocket (``send``, ``async for``, ``close``). Everything
  the SDK does above its ``_create_websocket_connection`` runs as released.
- ``use_virtual_monotonic``: the SDK's wall-clock fallback (``time.monotonic`` in
  ``agents.realtime.openai_realtime`` and ``agents.realtime._default_tracker``) reads the loop's
  virtual clock: the SDK's logic is unchanged, only the clock it reads.
"""

from __future__ import annotations

import asyncio
import collections
import random
import selectors
import types
from typing import Any


class Stuck(RuntimeError):
    """The loop has nothing ready and no timer: the session would wait for ever."""


class _VirtualSelector(selectors.BaseSelector):
    def __init__(self) -> None:
        self._real = selectors.DefaultSelector()
        self.now = 0.0

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._real.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.modify(fileobj, events, data)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = self._real.select(0)
        if ready:
            return ready
        if timeout is None:
            raise Stuck("virtual time: nothing is ready and no timer is set")
        if timeout > 0:
            self.now += timeout
        return []

    def close(self) -> None:
        self._real.close()

    def get_map(self) -> Any:
        return self._real.get_map()


class VirtualLoop(asyncio.SelectorEventLoop):
    """An event loop on a virtual clock (seconds from 0)."""

    def __init__(self) -> None:
        self._vsel = _VirtualSelector()
        super().__init__(selector=self._vsel)

    def time(self) -> float:
        return self._vsel.now


class VirtualClock:
    """The harness's ``Clock`` on the loop's virtual time: ms since the session's start."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.t0 = loop.time()

    def now_ms(self) -> float:
        # rounded to the µs: the float sums of the loop's timeouts must not make 340 ms 339.999
        return round((self.loop.time() - self.t0) * 1000, 3)

    def until(self, ms: float) -> float:
        return (ms - self.now_ms()) / 1000

    @staticmethod
    def grid_after(ms: float, offset: int = 0) -> int:
        import harness

        return harness.Clock.grid_after(ms, offset)

    async def sleep_until(self, ms: float) -> None:
        delay = self.until(ms)
        if delay > 0:
            await asyncio.sleep(delay)


class Closed(Exception):
    pass


_END = object()


class Pipe:
    """One direction of the connection: messages in order, each ``latency_ms`` (+ jitter) late."""

    def __init__(self, clock: VirtualClock, latency_ms: int, jitter_ms: int, rnd: random.Random):
        self.clock = clock
        self.latency_ms = latency_ms
        self.jitter_ms = jitter_ms
        self.rnd = rnd
        self.queue: collections.deque[tuple[float, Any]] = collections.deque()
        self.ready = asyncio.Event()
        self.last_due = 0.0
        self.closed = False

    def put(self, message: Any) -> None:
        if self.closed:
            return
        jitter = self.rnd.randint(0, self.jitter_ms) if self.jitter_ms else 0
        due = max(self.clock.now_ms() + self.latency_ms + jitter, self.last_due)
        self.last_due = due
        self.queue.append((due, message))
        self.ready.set()

    def close(self) -> None:
        if not self.closed:
            self.queue.append((self.last_due, _END))
            self.closed = True
            self.ready.set()

    async def get(self) -> Any:
        while not self.queue:
            self.ready.clear()
            await self.ready.wait()
        due, message = self.queue[0]
        if message is not _END:
            await self.clock.sleep_until(due)
        self.queue.popleft()
        return message


class VirtualWebSocket:
    """One end of the in-memory connection: sends into one pipe, reads the other."""

    def __init__(self, outgoing: Pipe, incoming: Pipe) -> None:
        self.outgoing = outgoing
        self.incoming = incoming

    async def send(self, message: str) -> None:
        if self.outgoing.closed:
            import websockets

            raise websockets.exceptions.ConnectionClosedOK(None, None)
        self.outgoing.put(message)

    def __aiter__(self) -> Any:
        return self._messages()

    async def _messages(self) -> Any:
        while True:
            message = await self.incoming.get()
            if message is _END:
                return
            yield message

    async def close(self, *args: Any, **kw: Any) -> None:
        self.outgoing.close()
        self.incoming.close()


def connection(
    clock: VirtualClock, up_ms: int, down_ms: int, jitter_ms: int, seed: int
) -> tuple[VirtualWebSocket, VirtualWebSocket]:
    """(the client's end, the server's end): ``up_ms`` client to server, ``down_ms`` back."""
    rnd = random.Random(seed)
    up = Pipe(clock, up_ms, jitter_ms, rnd)
    down = Pipe(clock, down_ms, jitter_ms, rnd)
    return VirtualWebSocket(up, down), VirtualWebSocket(down, up)


def use_virtual_monotonic(loop: asyncio.AbstractEventLoop) -> None:
    """The SDK's modules read ``time.monotonic`` from the loop's virtual clock."""
    import time as real_time

    from agents.realtime import _default_tracker, openai_realtime

    shim = types.SimpleNamespace(**{k: getattr(real_time, k) for k in dir(real_time) if not k.startswith("__")})
    shim.monotonic = loop.time
    openai_realtime.time = shim
    _default_tracker.time = shim
