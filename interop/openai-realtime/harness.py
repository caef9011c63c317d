#!/usr/bin/env python3
"""Run one scripted scenario: the OpenAI Agents SDK's realtime client against the scripted server.

    python interop/openai-realtime/harness.py --scenario NAME --out DIR [--verbose]
    python interop/openai-realtime/harness.py --list

Writes ``DIR/openai-realtime@VERSION/NAME.jsonl`` (VERSION: the installed openai-agents): a meta
line, then what the app saw and did, in the order it happened:

- ``{"t_ms", "dir": "client", "event"}``: every client event the SDK sent on the websocket, as
  sent (the JSON text parsed);
- ``{"t_ms", "dir": "server", "event"}``: every server event the SDK received, as received;
- ``{"t_ms", "dir": "app", "event"}``: the app's player: ``playback.started``,
  ``playback.played`` (each time an item's position passes a multiple of 100 ms, and at its
  end), ``playback.cleared``
  (told to stop: the position it stopped at and the ms of queued audio it dropped), and
  ``session.closed`` last.

The app is built the way the SDK's documentation and its own demo (examples/realtime/cli) build
one: ``RealtimeRunner(agent, model=...)``, ``runner.run(model_config=...)`` with a
``RealtimePlaybackTracker``, ``async for event in session``, audio events queued to a player that
plays them in real time and tells the tracker what it played, ``audio_interrupted`` flushing
the player. The model is the SDK's ``OpenAIRealtimeWebSocketModel`` pointed at the local server
by ``model_config["url"]``; the one thing added to it is a wire tap on its websocket (the
connection its ``_create_websocket_connection`` opens, wrapped) so the app can log every event
as sent and received: the SDK has no public hook for the events it sends.

One scenario per process: a planted bug's patch (``patches.PATCHES``) stays inside it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import os
import sys
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import corpus  # noqa: E402
import patches  # noqa: E402
import script  # noqa: E402
import server as fake_server  # noqa: E402
import websockets  # noqa: E402
from agents import FunctionTool  # noqa: E402
from agents.realtime import (  # noqa: E402
    RealtimeAgent,
    RealtimeModelSendRawMessage,
    RealtimePlaybackTracker,
    RealtimeRunner,
)
from agents.realtime.openai_realtime import OpenAIRealtimeWebSocketModel  # noqa: E402
from agents.version import __version__ as AGENTS_VERSION  # noqa: E402

log = logging.getLogger("interop.harness")

BYTES_PER_MS = fake_server.BYTES_PER_MS
TICK = script.TICK_MS
PREBUFFER_MS = 200
"""The player waits for this much of an item's audio (or its end) before it starts playing it
from idle: a jitter buffer, as the SDK's demo keeps one (PREBUFFER_CHUNKS)."""


class Clock:
    """Milliseconds since the session's start, on the monotonic clock."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()

    def now_ms(self) -> float:
        return (time.monotonic() - self.t0) * 1000

    def until(self, ms: float) -> float:
        return (ms - self.now_ms()) / 1000

    @staticmethod
    def grid_after(ms: float, offset: int = 0) -> int:
        k = math.ceil((ms - offset) / TICK)
        return k * TICK + offset

    async def sleep_until(self, ms: float) -> None:
        delay = self.until(ms)
        if delay > 0:
            await asyncio.sleep(delay)


class Log:
    """The app's log: one writer, one lock, lines in the order they happened."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.lines: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def write(self, direction: str, event: dict[str, Any]) -> None:
        with self.lock:
            self.lines.append({"t_ms": int(self.clock.now_ms()), "dir": direction, "event": event})


class WireTap:
    """The SDK's websocket, logging each event it sends and receives."""

    def __init__(self, ws: Any, wire: Log) -> None:
        self._ws = ws
        self._log = wire

    async def send(self, message: str) -> None:
        self._log.write("client", json.loads(message))
        await self._ws.send(message)

    def __aiter__(self) -> Any:
        return self._receive()

    async def _receive(self) -> Any:
        async for message in self._ws:
            self._log.write("server", json.loads(message))
            yield message

    async def close(self) -> None:
        await self._ws.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ws, name)


class TappedModel(OpenAIRealtimeWebSocketModel):
    def __init__(self, wire: Log) -> None:
        super().__init__()
        self._wire = wire

    async def _create_websocket_connection(self, url: str, headers: dict[str, str], transport_config: Any = None) -> Any:
        ws = await super()._create_websocket_connection(url, headers, transport_config)
        return WireTap(ws, self._wire)


class Player:
    """A loudspeaker fed by the session's audio events, playing in 40 ms periods.

    Like the SDK's demo player, it is one queue of chunks played in arrival order, whatever item
    they belong to. From idle it starts once ``PREBUFFER_MS`` is queued or the head item's audio
    is complete (a jitter buffer); after that it plays on without a gap. Each period it plays 40
    ms and reports them to the playback tracker (``on_play_bytes``), as an app is told to. Told to
    stop (``audio_interrupted``) it drops everything queued.
    """

    def __init__(self, applog: Log, tracker: RealtimePlaybackTracker) -> None:
        self.log = applog
        self.tracker = tracker
        self.queue: deque[list[Any]] = deque()  # [item_id, response_id, content_index, bytes]
        self.playing = False
        self.current: str | None = None  # the item last played
        self.pos: dict[str, int] = {}
        self.response: dict[str, str | None] = {}
        self.done: set[str] = set()
        self.finished: set[str] = set()
        self.started: list[str] = []  # items in the order they first played

    def enqueue(self, item_id: str, response_id: str | None, content_index: int, data: bytes) -> None:
        self.response.setdefault(item_id, response_id)
        self.finished.discard(item_id)
        self.queue.append([item_id, response_id, content_index, bytes(data)])

    def audio_done(self, item_id: str) -> None:
        self.done.add(item_id)

    def queued_ms(self) -> int:
        return sum(len(c[3]) for c in self.queue) // BYTES_PER_MS

    def idle(self) -> bool:
        return not self.queue

    def _event(self, kind: str, item_id: str, **kw: Any) -> dict[str, Any]:
        e: dict[str, Any] = {"type": kind, "item_id": item_id}
        if self.response.get(item_id) is not None:
            e["response_id"] = self.response[item_id]
        e.update(kw)
        return e

    def tick(self) -> None:
        if not self.queue:
            self.playing = False
            return
        if not self.playing:
            if self.queued_ms() < PREBUFFER_MS and self.queue[0][0] not in self.done:
                return
            self.playing = True
        want = TICK * BYTES_PER_MS
        while want and self.queue:
            chunk = self.queue[0]
            item, content_index = chunk[0], chunk[2]
            if item != self.current or item not in self.pos:
                self.current = item
                if item not in self.pos:
                    self.pos[item] = 0
                    self.started.append(item)
                    self.log.write("app", self._event("playback.started", item, content_index=content_index))
            take = chunk[3][:want]
            chunk[3] = chunk[3][len(take) :]
            if not chunk[3]:
                self.queue.popleft()
            want -= len(take)
            self.pos[item] += len(take) // BYTES_PER_MS
            self.tracker.on_play_bytes(item, content_index, take)
            last = item in self.done and not any(c[0] == item for c in self.queue)
            crossed = self.pos[item] // 100 != (self.pos[item] - len(take) // BYTES_PER_MS) // 100
            if crossed or last:
                self.log.write("app", self._event("playback.played", item, audio_end_ms=self.pos[item]))
            if last:
                self.finished.add(item)

    def clear(self, item_id: str) -> None:
        # the item it was playing; else the next one queued; else the one the SDK named
        if self.current is not None and self.current not in self.finished:
            item = self.current
        elif self.queue:
            item = self.queue[0][0]
        else:
            item = item_id
        dropped = self.queued_ms()
        self.log.write(
            "app",
            self._event("playback.cleared", item, audio_end_ms=self.pos.get(item, 0), cleared_ms=dropped),
        )
        self.queue.clear()
        self.playing = False


class Mic:
    """The user's microphone: what the user says, appended one device period (40 ms) at a time,
    as the SDK demo sends it (a voiced sound while speaking, then silence)."""

    def __init__(self) -> None:
        self.chunks: deque[bytes] = deque()

    def speak(self, tick: int, speech_ms: int, silence_ms: int) -> None:
        audio = fake_server.voice(speech_ms, f0=210.0, level=5000) + fake_server.silence(silence_ms)
        step = TICK * BYTES_PER_MS
        self.chunks.extend(audio[k : k + step] for k in range(0, len(audio), step))

    async def tick(self, tick: int, session: Any) -> None:
        if self.chunks:
            await session.send_audio(self.chunks.popleft())


def build_tool(clock: Clock, name: str, ms: int, result: str, called_on: int) -> FunctionTool:
    """A function tool that returns ``result`` ``ms`` after the moment that made the SDK call
    it: the call comes some ms after a device period (``called_on`` 0) or a server event
    (``called_on`` 20, 20 ms off the periods), and the tool counts from that grid point (the
    call's time less up to 35 ms, rounded down to it), so that when it returns does not depend
    on how soon the SDK got round to the call."""

    async def invoke(ctx: Any, arguments: str) -> str:
        origin = (int(clock.now_ms()) + 5 - called_on) // TICK * TICK + called_on
        await clock.sleep_until(origin + ms)
        return result

    return FunctionTool(
        name=name,
        description=f"Look something up ({name}).",
        params_json_schema={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
        on_invoke_tool=invoke,
    )


class App:
    def __init__(self, sc: script.Scenario, clock: Clock, applog: Log) -> None:
        self.sc = sc
        self.clock = clock
        self.log = applog
        self.tracker = RealtimePlaybackTracker()
        self.player = Player(applog, self.tracker)
        self.mic = Mic()
        self.errors: list[str] = []
        self.seen_errors: list[tuple[float, str | None]] = []
        self.agent_ends: list[float] = []
        self.pending = list(sc.actions)
        self.closing = False
        self.session: Any = None

    def due(self, a: script.Action, now: float) -> bool:
        w = a.when
        if isinstance(w, script.At):
            return now >= w.ms
        if isinstance(w, script.Heard):
            if len(self.player.started) <= w.n:
                return False
            return self.player.pos[self.player.started[w.n]] >= w.ms
        if isinstance(w, script.AfterError):
            seen = [t for t, code in self.seen_errors if code == w.code]
            if not seen:
                return False
            ends = [t for t in self.agent_ends if t >= seen[0]]
            return bool(ends) and now >= ends[0] + w.delay_ms
        raise TypeError(w)

    async def act(self, a: script.Action, tick: int) -> None:
        log.info("t=%d action %s %r", tick * TICK, a.do, a.arg)
        s = self.session
        if a.do == "speak":
            self.mic.speak(tick, a.speech_ms, a.silence_ms)
            await self.mic.tick(tick, s)
        elif a.do == "text":
            await s.send_message(a.arg)
        elif a.do == "interrupt":
            await s.interrupt()
        elif a.do == "out_of_band":
            await s.model.send_event(
                RealtimeModelSendRawMessage(
                    message={
                        "type": "response.create",
                        "other_data": {
                            "response": {
                                "conversation": "none",
                                "metadata": a.arg,
                                "output_modalities": ["audio"],
                                "instructions": "Announce the reminder in one sentence.",
                            }
                        },
                    }
                )
            )
        elif a.do == "create":
            await s.model.send_event(RealtimeModelSendRawMessage(message={"type": "response.create"}))
        else:
            raise ValueError(a.do)

    async def device(self) -> None:
        tick = 0
        while not self.closing:
            tick += 1
            await self.clock.sleep_until(tick * TICK)
            if self.closing:
                return
            self.player.tick()
            await self.mic.tick(tick, self.session)
            now = tick * TICK
            for a in list(self.pending):
                if self.due(a, now):
                    self.pending.remove(a)
                    await self.act(a, tick)

    async def events(self) -> None:
        async for ev in self.session:
            t = ev.type
            if t == "audio":
                self.player.enqueue(ev.item_id, ev.audio.response_id, ev.content_index, ev.audio.data)
            elif t == "audio_interrupted":
                self.player.clear(ev.item_id)
            elif t == "audio_end":
                self.player.audio_done(ev.item_id)
            elif t == "error":
                err = ev.error
                code = getattr(err, "code", None) if not isinstance(err, dict) else err.get("code")
                self.seen_errors.append((self.clock.now_ms(), code))
                if code is None:
                    self.errors.append(f"the SDK reported an error with no code: {err!r}")
                log.info("error event: %r", err)
            elif t == "agent_end":
                self.agent_ends.append(self.clock.now_ms())
            elif t in ("tool_start", "tool_end", "agent_start", "handoff"):
                log.info("session event %s", t)
            elif t == "raw_model_event" and ev.data.type == "exception":
                self.errors.append(f"the SDK raised: {ev.data.exception!r} ({ev.data.context})")

    def prepare(self, url: str) -> None:
        """Build the agent, the runner, the model and the session (not yet connected)."""
        td = self.sc.turn_detection
        settings: dict[str, Any] = {
            "model_name": "gpt-realtime",
            "voice": "marin",
            "input_audio_format": "pcm16",
            "output_audio_format": "pcm16",
            "turn_detection": td,
        }
        agent = RealtimeAgent(
            name="Assistant",
            instructions="You are a helpful voice assistant.",
            tools=[
                build_tool(self.clock, n, ms, r, self.sc.tool_called_on)
                for n, (ms, r) in self.sc.tools.items()
            ],
        )
        runner = RealtimeRunner(agent, model=TappedModel(self.log), config={"tracing_disabled": True})
        model_config: Any = {
            "url": url,
            "api_key": "sk-interop-offline",
            "playback_tracker": self.tracker,
            "initial_model_settings": settings,
        }
        self.runner = runner
        self.model_config = model_config

    async def run(self) -> None:
        self.session = await self.runner.run(model_config=self.model_config)
        async with self.session:
            events = asyncio.create_task(self.events())
            device = asyncio.create_task(self.device())
            await self.clock.sleep_until(self.sc.end_ms)
            if self.pending:
                self.errors.append(f"actions never due: {[a.do for a in self.pending]}")
            if not self.player.idle():
                self.errors.append(f"the player still plays at the scripted end ({self.sc.end_ms} ms)")
            if self.session.model._ongoing_response:
                self.errors.append(f"a response is still in progress at the scripted end ({self.sc.end_ms} ms)")
            self.closing = True
            await device
        await events
        self.log.write("app", {"type": "session.closed"})


async def run(sc: script.Scenario, verbose: bool) -> tuple[list[dict[str, Any]], list[str]]:
    clock = Clock()
    applog = Log(clock)
    server_errors: list[str] = []

    async def handler(ws: Any) -> None:
        srv = fake_server.RealtimeServer(sc, clock, ws, lambda m: log.info(m))
        try:
            await srv.run()
        except websockets.exceptions.ConnectionClosed:
            pass
        except Exception as e:  # noqa: BLE001
            log.exception("server failed")
            server_errors.append(f"the scripted server failed: {e!r}")

    fake_server.warm(sc)
    async with websockets.serve(handler, "127.0.0.1", 0, max_size=None) as srv:
        port = srv.sockets[0].getsockname()[1]
        app = App(sc, clock, applog)
        app.prepare(f"ws://127.0.0.1:{port}/v1/realtime?model=gpt-realtime")
        clock.t0 = time.monotonic()  # the session's start: the app opens its session
        await app.run()
    return applog.lines, app.errors + server_errors


def meta(sc: script.Scenario, line: int | None) -> dict[str, Any]:
    m: dict[str, Any] = {
        "dialect": "openai-realtime",
        "version": AGENTS_VERSION,
        "expect": "accepted" if sc.bug is None else "rejected",
        "story": sc.story,
        "source": sc.source if sc.bug is None else sc.bug.source,
    }
    if sc.bug is not None:
        m["invariant"] = sc.bug.invariant
        m["line"] = line
        if sc.bug.patch is not None:
            m["patch"] = " ".join((patches.PATCHES[sc.bug.patch].__doc__ or "").split())
        else:
            m["patch"] = sc.bug.patch_text
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

    sc = script.by_name(args.scenario)
    if sc.bug is not None and sc.bug.patch is not None:
        patches.PATCHES[sc.bug.patch]()

    lines, errors = asyncio.run(run(sc, args.verbose))

    line: int | None = None
    if sc.bug is not None:
        index = sc.bug.line(lines)
        if index is None:
            errors.append(f"the bug's predicate found no line in {sc.name}")
        else:
            line = index + 2  # the meta line is line 1

    out = args.out / f"openai-realtime@{AGENTS_VERSION}"
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"{sc.name}.jsonl", "w") as fh:
        fh.write(json.dumps(meta(sc, line)) + "\n")
        for x in lines:
            fh.write(json.dumps(x) + "\n")

    for e in errors:
        print(f"harness: {sc.name}@{AGENTS_VERSION}: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
