"""Run one generated session in virtual time: the harness's app and the SDK's
``OpenAIRealtimeWebSocketModel`` against the scripted server, joined by an in-memory websocket.

What differs from ``harness.run`` is only what a generated session needs:

- the loop and the clock are virtual (``vclock``), the websocket is in memory with a drawn
  latency each way; the SDK's code above ``_create_websocket_connection`` runs as released;
- the server (``GenServer``) answers a response it has no scripted reply left for with a short
  default one, takes a push-to-talk commit (``input_audio_buffer.commit``), and, for a session
  drawn so, also sends WebRTC's ``output_audio_buffer.started`` / ``stopped`` / ``cleared``
  (the SDK's websocket client never asks for them; the server sends them as it does on a WebRTC
  connection, where it plays the audio itself and the events tell the client so);
- the app (``GenApp``) closes the session when the drawn hang-up comes, or when everything has
  been quiet for ``QUIET_MS``, not at a scripted end; a push-to-talk turn (``ptt``) is the
  user's voice, then ``send_audio(..., commit=True)`` and a ``response.create``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import harness
import script
import server as fake_server
import vclock
import websockets
from agents.realtime import RealtimeAgent, RealtimeModelSendRawMessage, RealtimeRunner
from agents.realtime.openai_realtime import OpenAIRealtimeWebSocketModel
from openai.types.realtime.realtime_server_event import (
    OutputAudioBufferCleared,
    OutputAudioBufferStarted,
    OutputAudioBufferStopped,
)

log = logging.getLogger("interop.generate")

QUIET_MS = 1200
"""The app hangs up once nothing has happened for this long (no response, nothing playing or
queued, no tool running, no action due at a time still to come)."""
CAP_MS = 40000
"""No session runs longer than this in virtual time (a stuck one is an error, not a wait)."""
DEFAULT_REPLY = script.Reply([script.Say("Okay", 400)])


class GenServer(fake_server.RealtimeServer):
    def __init__(self, sc: script.Scenario, clock: Any, ws: Any, webrtc: bool) -> None:
        super().__init__(sc, clock, ws, lambda m: log.debug(m))
        self.webrtc = webrtc
        self.audio_started: dict[str, float] = {}  # response id -> when its audio began
        self.audio_ms: dict[str, int] = {}

    async def start_response(self, params: dict[str, Any] | None) -> None:
        if not self.replies:
            self.replies.append(script.Reply(list(DEFAULT_REPLY.outputs)))
        await super().start_response(params)

    async def send_in_flight(self, r: fake_server.Response, n: int) -> None:
        """As the scripted server's, but a response that ends (its generation over, or stopped)
        before ``n`` more deltas went out no longer holds the server's reading up."""
        r.hurry = n
        r.hurried.clear()
        r.wake.set()
        hurried = asyncio.ensure_future(r.hurried.wait())
        waits: set[Any] = {hurried}
        if r.task is not None:
            waits.add(r.task)
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        if not hurried.done():
            hurried.cancel()
            r.hurry = 0

    async def on_input_audio_buffer_commit(self, ev: dict[str, Any]) -> None:
        item_id = self.ids("item")
        await self.send(
            fake_server.InputAudioBufferCommittedEvent(
                type="input_audio_buffer.committed", event_id=self.event_id(), item_id=item_id,
                previous_item_id=self.previous_id(),
            )
        )
        item = fake_server.Item(item_id, "message", "user")
        item.status = "completed"
        item.content = [{"type": "input_audio", "transcript": None}]
        await self.add_item(item, done=True)
        self.pending = b""

    async def on_output_audio_buffer_clear(self, ev: dict[str, Any]) -> None:
        for rid in list(self.audio_started):
            await self._cleared(rid)

    async def send(self, ev: Any) -> None:
        try:
            await super().send(ev)
        except websockets.exceptions.ConnectionClosed:
            return  # the app hung up: what the server still had to say goes nowhere
        if not self.webrtc:
            return
        kind = getattr(ev, "type", None)
        if kind == "response.output_audio.delta":
            rid = ev.response_id
            self.audio_ms[rid] = self.audio_ms.get(rid, 0) + script.DELTA_MS
            if rid not in self.audio_started:
                self.audio_started[rid] = self.clock.now_ms()
                await super().send(
                    OutputAudioBufferStarted(type="output_audio_buffer.started", event_id=self.event_id(), response_id=rid)
                )
        elif kind == "response.done":
            rid = ev.response.id
            if rid not in self.audio_started:
                return
            if ev.response.status == "completed":
                end = self.audio_started[rid] + self.audio_ms[rid]
                asyncio.get_running_loop().create_task(self._stopped(rid, end))
            else:
                await self._cleared(rid)
        elif kind == "input_audio_buffer.speech_started":
            td = self.turn_detection() or {}
            if td.get("interrupt_response"):
                for rid in list(self.audio_started):
                    await self._cleared(rid)

    async def _stopped(self, rid: str, end_ms: float) -> None:
        await self.clock.sleep_until(end_ms)
        if self.audio_started.pop(rid, None) is not None:
            await self._send_quietly(
                OutputAudioBufferStopped(type="output_audio_buffer.stopped", event_id=self.event_id(), response_id=rid)
            )

    async def _cleared(self, rid: str) -> None:
        if self.audio_started.pop(rid, None) is not None:
            await self._send_quietly(
                OutputAudioBufferCleared(type="output_audio_buffer.cleared", event_id=self.event_id(), response_id=rid)
            )

    async def _send_quietly(self, ev: Any) -> None:
        try:
            await fake_server.RealtimeServer.send(self, ev)
        except websockets.exceptions.ConnectionClosed:
            return

    def busy(self) -> bool:
        return any(not r.done for r in self.responses) or bool(self.audio_started)


class GenPlayer(harness.Player):
    """The harness's player, with one fix for what only generated sessions reach: after a clear
    it has no current item, so a second clear before anything plays again names the item queued
    (or the one the SDK named), not the item the first clear already stopped."""

    def clear(self, item_id: str) -> None:
        super().clear(item_id)
        self.current = None


class VirtualModel(OpenAIRealtimeWebSocketModel):
    """The SDK's websocket model; its connection is the in-memory one, tapped like the harness's."""

    def __init__(self, wire: harness.Log, ws: Any) -> None:
        super().__init__()
        self._wire = wire
        self._virtual_ws = ws

    async def _create_websocket_connection(self, url: str, headers: dict[str, str], transport_config: Any = None) -> Any:
        return harness.WireTap(self._virtual_ws, self._wire)


class GenApp(harness.App):
    def __init__(self, sc: script.Scenario, clock: Any, applog: harness.Log, ws: Any, hangup_ms: int | None) -> None:
        super().__init__(sc, clock, applog)
        self.player = GenPlayer(applog, self.tracker)
        self.ws = ws
        self.hangup_ms = hangup_ms
        self.server: GenServer | None = None
        self.hung_up_at: int | None = None

    def prepare(self, url: str) -> None:
        super().prepare(url)
        agent = self.runner._starting_agent
        self.runner = RealtimeRunner(agent, model=VirtualModel(self.log, self.ws), config={"tracing_disabled": True})

    async def act(self, a: script.Action, tick: int) -> None:
        if a.do == "ptt":
            # push-to-talk: the voice goes out with the device's periods; the release commits
            self.mic.speak(tick, a.speech_ms, 0)
            self.ptt_release = True
            await self.mic.tick(tick, self.session)
            return
        await super().act(a, tick)

    async def device(self) -> None:
        tick = 0
        while not self.closing:
            tick += 1
            await self.clock.sleep_until(tick * script.TICK_MS)
            if self.closing:
                return
            self.player.tick()
            if self.mic.chunks:
                chunk = self.mic.chunks.popleft()
                last = not self.mic.chunks and getattr(self, "ptt_release", False)
                await self.session.send_audio(chunk, commit=last)
                if last:
                    self.ptt_release = False
                    await self.session.model.send_event(RealtimeModelSendRawMessage(message={"type": "response.create"}))
            now = tick * script.TICK_MS
            for a in list(self.pending):
                if self.due(a, now):
                    self.pending.remove(a)
                    await self.act(a, tick)

    def quiet(self) -> bool:
        model = self.session.model
        return (
            self.player.idle()
            and not self.mic.chunks
            and not model._ongoing_response
            and not self.session._tool_call_tasks
            and not (self.server is not None and self.server.busy())
            and not any(isinstance(a.when, script.At) for a in self.pending)
        )

    async def run(self) -> None:
        self.session = await self.runner.run(model_config=self.model_config)
        async with self.session:
            events = asyncio.create_task(self.events())
            device = asyncio.create_task(self.device())
            quiet_since: float | None = None
            while True:
                await asyncio.sleep(script.TICK_MS / 1000)
                now = self.clock.now_ms()
                if self.hangup_ms is not None and now >= self.hangup_ms:
                    break
                if now >= CAP_MS:
                    self.errors.append(f"the session was still busy at {CAP_MS} ms")
                    break
                if self.quiet():
                    quiet_since = now if quiet_since is None else quiet_since
                    if now - quiet_since >= QUIET_MS:
                        break
                else:
                    quiet_since = None
            self.hung_up_at = int(self.clock.now_ms())
            self.tools_at_hangup = any(not t.done() for t in self.session._tool_call_tasks)
            self.closing = True
            await device
        await events
        self.log.write("app", {"type": "session.closed"})


async def _run(session: Any, name: str, loop: vclock.VirtualLoop, facts: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    sc = session.scenario(name)
    clock = vclock.VirtualClock(loop)
    applog = harness.Log(clock)
    facts["log"] = applog
    client_ws, server_ws = vclock.connection(clock, session.up_ms, session.down_ms, session.jitter_ms, session.link_seed)
    srv = GenServer(sc, clock, server_ws, session.webrtc_events)
    server_errors: list[str] = []

    async def serve() -> None:
        try:
            await srv.run()
        except Exception as e:  # noqa: BLE001
            log.exception("server failed")
            server_errors.append(f"the scripted server failed: {e!r}")

    fake_server.warm(sc)
    server_task = asyncio.create_task(serve())
    app = GenApp(sc, clock, applog, client_ws, session.hangup_ms)
    app.server = srv
    app.prepare("ws://virtual/v1/realtime?model=gpt-realtime")
    await app.run()
    await server_ws.close()
    await asyncio.wait({server_task}, timeout=1.0)
    if not server_task.done():
        server_errors.append("the scripted server was still busy 1 s after the app hung up")
        server_task.cancel()
    for r in srv.responses:
        if r.task is not None and not r.task.done():
            r.task.cancel()
    # the harness's end-of-script checks do not apply: a drawn session may leave actions undue
    errors = [e for e in app.errors if not e.startswith("actions never due")]
    facts["tools_at_hangup"] = getattr(app, "tools_at_hangup", False)
    return applog.lines, errors + server_errors


def run(session: Any, name: str, facts: dict[str, Any] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """The session's log lines (without the meta line) and what went wrong running it; what the
    app saw at its hang-up goes into ``facts``."""
    loop = vclock.VirtualLoop()
    asyncio.set_event_loop(loop)
    vclock.use_virtual_monotonic(loop)
    facts = {} if facts is None else facts
    try:
        return loop.run_until_complete(_run(session, name, loop, facts))
    except vclock.Stuck as e:
        # every task waits on another and no timer is set: in real time the app would hang here
        log_ = facts.get("log")
        at = log_.clock.now_ms() if log_ is not None else 0
        return (log_.lines if log_ is not None else []), [f"stuck at {int(at)} ms: {e}"]
    finally:
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for t in pending:
            t.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.close()
        asyncio.set_event_loop(None)
