"""A scripted OpenAI Realtime server (GA protocol) on 127.0.0.1, for the harness.

It speaks the websocket protocol of ``wss://api.openai.com/v1/realtime`` closely enough for the
SDK's ``OpenAIRealtimeWebSocketModel``: every event it sends is built as an instance of the
``openai`` package's GA realtime types (``openai.types.realtime``) and sent as
``model_dump(mode="json", exclude_none=True)``. What its model says comes from the scenario's
``replies`` (``script.py``), one per response it creates, in order; everything else is fixed
behaviour, reacting to the client:

- ``session.update``: merged into the session, answered by ``session.updated`` (the whole
  session). ``session.created`` is sent when the connection opens.
- ``input_audio_buffer.append``: a server VAD over the PCM (20 ms frames, a frame is speech when
  its mean absolute sample exceeds 300). Speech starting: ``input_audio_buffer.speech_started``
  (``audio_start_ms`` is the speech's start less ``prefix_padding_ms``), and with
  ``interrupt_response`` the conversation's response in progress is cancelled
  (``turn_detected``). Speech followed by ``silence_duration_ms`` of silence:
  ``speech_stopped``, ``committed``, the user item (``conversation.item.added`` / ``done``), its
  transcription, and with ``create_response`` a new response.
- ``conversation.item.create``: ``conversation.item.added`` and ``conversation.item.done``.
- ``response.create``: a response, unless the conversation has one in progress:
  ``error`` ``conversation_already_has_active_response``. An out-of-band response
  (``conversation: "none"``) runs beside the conversation's and adds no item to it.
- ``response.cancel``: the response in progress stops (``response.done`` ``cancelled``,
  ``client_cancelled``); with none: ``error`` ``response_cancel_not_active``. A response whose
  generation is over but whose ``response.done`` is not sent yet is not in progress: its done is
  sent, then the error.
- ``conversation.item.truncate``: ``conversation.item.truncated``, or, past the audio the item
  holds, ``error`` ``invalid_value`` "Audio content of Xms is already shorter than Yms" (the
  API's words, as pipecat-ai/pipecat#1963 and #925 quote them).
- ``conversation.item.retrieve``: ``conversation.item.retrieved`` with the item as stored
  (its audio, as truncated, base64).

Ids are random-looking, drawn from a generator seeded with the scenario's name.
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
import random
import string
from array import array
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import script
from openai.types.realtime import (
    ConversationItemInputAudioTranscriptionCompletedEvent,
    ConversationItemTruncatedEvent,
    InputAudioBufferCommittedEvent,
    InputAudioBufferSpeechStartedEvent,
    InputAudioBufferSpeechStoppedEvent,
    RealtimeErrorEvent,
    RealtimeSessionCreateRequest,
    ResponseAudioDeltaEvent,
    ResponseAudioDoneEvent,
    ResponseAudioTranscriptDeltaEvent,
    ResponseAudioTranscriptDoneEvent,
    ResponseContentPartAddedEvent,
    ResponseContentPartDoneEvent,
    ResponseCreatedEvent,
    ResponseDoneEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseFunctionCallArgumentsDoneEvent,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    SessionCreatedEvent,
    SessionUpdatedEvent,
)
from openai.types.realtime.realtime_server_event import (
    ConversationItemAdded,
    ConversationItemDone,
    ConversationItemRetrieved,
)

RATE = 24000
BYTES_PER_MS = 48  # PCM16 mono at 24 kHz
FRAME_MS = 20
SPEECH_LEVEL = 300  # mean |sample| above which a frame is speech


# -- audio -----------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def voice(ms: int, f0: float, seed_phase: float = 0.0, level: int = 6000) -> bytes:
    """``ms`` of a voiced sound as PCM16 24 kHz mono: a fundamental with two harmonics, its
    loudness rising and falling four times a second like syllables."""
    n = ms * RATE // 1000
    out = array("h")
    two_pi = 2 * math.pi
    for i in range(n):
        t = i / RATE
        env = 0.55 + 0.45 * math.sin(two_pi * 4 * t + seed_phase)
        s = (
            math.sin(two_pi * f0 * t)
            + 0.5 * math.sin(two_pi * 2 * f0 * t)
            + 0.25 * math.sin(two_pi * 3 * f0 * t)
        )
        out.append(int(level * env * s / 1.75))
    return out.tobytes()


def warm(sc: script.Scenario) -> None:
    """Synthesize every sound the scenario uses before its clock starts (not while streaming)."""
    for reply in sc.replies:
        for index, out in enumerate(reply.outputs):
            if isinstance(out, script.Say):
                voice(out.ms, f0=150.0 + 10 * index)
    for a in sc.actions:
        if a.do == "speak":
            voice(a.speech_ms, f0=210.0, level=5000)


def silence(ms: int) -> bytes:
    return bytes(ms * BYTES_PER_MS)


def is_speech(frame: bytes) -> bool:
    samples = array("h")
    samples.frombytes(frame)
    if not samples:
        return False
    return sum(abs(s) for s in samples) / len(samples) > SPEECH_LEVEL


# -- the server --------------------------------------------------------------------------------


def default_session(ids: Callable[[str], str]) -> dict[str, Any]:
    """The session as a new connection has it, before any ``session.update``."""
    return {
        "type": "realtime",
        "object": "realtime.session",
        "id": ids("sess"),
        "model": "gpt-realtime",
        "output_modalities": ["audio"],
        "instructions": "You are a helpful assistant.",
        "tools": [],
        "tool_choice": "auto",
        "max_output_tokens": "inf",
        "tracing": None,
        "truncation": "auto",
        "prompt": None,
        "expires_at": 1900000000,
        "audio": {
            "input": {
                "format": {"type": "audio/pcm", "rate": RATE},
                "transcription": None,
                "noise_reduction": None,
                "turn_detection": {
                    "type": "server_vad",
                    "threshold": 0.5,
                    "prefix_padding_ms": 300,
                    "silence_duration_ms": 200,
                    "idle_timeout_ms": None,
                    "create_response": True,
                    "interrupt_response": True,
                },
            },
            "output": {"format": {"type": "audio/pcm", "rate": RATE}, "voice": "marin", "speed": 1.0},
        },
        "include": None,
    }


def merge(into: dict[str, Any], update: dict[str, Any]) -> None:
    for k, v in update.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict) and k != "turn_detection":
            merge(into[k], v)
        else:
            into[k] = v


class Item:
    def __init__(self, id: str, kind: str, role: str | None = None) -> None:
        self.id = id
        self.kind = kind  # message | function_call | function_call_output
        self.role = role
        self.status = "in_progress"
        self.audio = b""  # assistant audio, as sent
        self.stored_short_ms = 0
        self.transcript = ""
        self.truncated = False
        self.call: dict[str, Any] = {}
        self.content: list[dict[str, Any]] = []

    def stored_ms(self) -> int:
        return max(len(self.audio) // BYTES_PER_MS - self.stored_short_ms, 0)

    def model(self, with_audio: bool = False) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "object": "realtime.item", "type": self.kind}
        if self.kind == "message":
            d["role"] = self.role
            d["status"] = self.status
            if self.role == "assistant":
                part: dict[str, Any] = {"type": "output_audio", "transcript": self.transcript}
                if with_audio:
                    part["audio"] = base64.b64encode(
                        self.audio[: self.stored_ms() * BYTES_PER_MS]
                    ).decode()
                d["content"] = [part] if self.status != "in_progress" or self.transcript else []
            else:
                d["content"] = self.content
        elif self.kind == "function_call":
            d.update(self.call)
            d["status"] = self.status
        else:
            d.update(self.call)
        return d


class Response:
    def __init__(self, id: str, reply: script.Reply, in_conversation: bool, metadata: Any) -> None:
        self.id = id
        self.reply = reply
        self.in_conversation = in_conversation
        self.metadata = metadata
        self.items: list[Item] = []
        self.stopped = False
        self.generated = False  # every output sent; response.done pending (done_tail_ms)
        self.done = False
        self.wake = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.hurry = 0  # deltas to send now, without waiting for their time
        self.hurried = asyncio.Event()


class RealtimeServer:
    """One connection's server: a session, a conversation, a VAD, responses."""

    def __init__(self, sc: script.Scenario, clock: Any, ws: Any, trace: Callable[[str], None]):
        self.sc = sc
        self.clock = clock
        self.ws = ws
        self.trace = trace
        rnd = random.Random(sc.name)
        alphabet = string.ascii_letters + string.digits

        def ids(prefix: str) -> str:
            return prefix + "_" + "".join(rnd.choice(alphabet) for _ in range(22))

        self.ids = ids
        self.session = default_session(ids)
        self.conversation_id = ids("conv")
        self.conversation: list[Item] = []
        self.items: dict[str, Item] = {}
        self.replies = list(sc.replies)
        self.active: Response | None = None  # the conversation's response in progress
        self.responses: list[Response] = []
        self.send_lock = asyncio.Lock()
        # input audio buffer and VAD
        self.buffer_ms = 0
        self.pending = b""
        self.speaking = False
        self.silent_ms = 0
        self.user_item: str | None = None
        self.utterances = [a.arg for a in sc.actions if a.do == "speak"]

    # -- sending ---------------------------------------------------------------------------

    async def send(self, ev: Any) -> None:
        payload = ev.model_dump(mode="json", exclude_none=True)
        async with self.send_lock:
            await self.ws.send(json.dumps(payload))

    def event_id(self) -> str:
        return self.ids("event")

    async def error(self, code: str, message: str, client_event: dict[str, Any], param: str | None = None) -> None:
        await self.send(
            RealtimeErrorEvent.model_validate(
                {
                    "type": "error",
                    "event_id": self.event_id(),
                    "error": {
                        "type": "invalid_request_error",
                        "code": code,
                        "message": message,
                        "param": param,
                        "event_id": client_event.get("event_id"),
                    },
                }
            )
        )

    def turn_detection(self) -> dict[str, Any] | None:
        return self.session["audio"]["input"].get("turn_detection")

    def session_model(self) -> RealtimeSessionCreateRequest:
        return RealtimeSessionCreateRequest.model_validate(self.session)

    # -- the connection --------------------------------------------------------------------

    async def run(self) -> None:
        await self.send(
            SessionCreatedEvent(type="session.created", event_id=self.event_id(), session=self.session_model())
        )
        async for message in self.ws:
            ev = json.loads(message)
            handler = getattr(self, "on_" + ev["type"].replace(".", "_"), None)
            if handler is None:
                self.trace(f"server: no handler for {ev['type']}")
                continue
            await handler(ev)
        for r in self.responses:
            r.stopped = True
            r.wake.set()

    async def on_session_update(self, ev: dict[str, Any]) -> None:
        update = dict(ev["session"])
        update.pop("type", None)
        merge(self.session, update)
        await self.send(
            SessionUpdatedEvent(type="session.updated", event_id=self.event_id(), session=self.session_model())
        )

    # -- conversation items ------------------------------------------------------------------

    def previous_id(self) -> str | None:
        return self.conversation[-1].id if self.conversation else None

    async def add_item(self, item: Item, done: bool) -> None:
        prev = self.previous_id()
        self.conversation.append(item)
        self.items[item.id] = item
        await self.send(
            ConversationItemAdded.model_validate(
                {"type": "conversation.item.added", "event_id": self.event_id(), "previous_item_id": prev, "item": item.model()}
            )
        )
        if done:
            await self.send(
                ConversationItemDone.model_validate(
                    {"type": "conversation.item.done", "event_id": self.event_id(), "previous_item_id": prev, "item": item.model()}
                )
            )

    async def on_conversation_item_create(self, ev: dict[str, Any]) -> None:
        raw = ev["item"]
        item = Item(raw.get("id") or self.ids("item"), raw["type"], raw.get("role"))
        item.status = "completed"
        if raw["type"] == "message":
            item.content = raw.get("content", [])
        else:
            item.call = {k: v for k, v in raw.items() if k in ("call_id", "output", "name", "arguments")}
        await self.add_item(item, done=True)

    async def on_conversation_item_retrieve(self, ev: dict[str, Any]) -> None:
        item = self.items.get(ev["item_id"])
        if item is None:
            await self.error("item_not_found", f"Item with item_id '{ev['item_id']}' not found.", ev, "item_id")
            return
        await self.send(
            ConversationItemRetrieved.model_validate(
                {"type": "conversation.item.retrieved", "event_id": self.event_id(), "item": item.model(with_audio=True)}
            )
        )

    async def on_conversation_item_truncate(self, ev: dict[str, Any]) -> None:
        item = self.items.get(ev["item_id"])
        end = ev["audio_end_ms"]
        if item is None:
            await self.error("item_not_found", f"Item with item_id '{ev['item_id']}' not found.", ev, "item_id")
            return
        if end > item.stored_ms():
            await self.error(
                "invalid_value",
                f"Audio content of {item.stored_ms()}ms is already shorter than {end}ms",
                ev,
            )
            return
        item.audio = item.audio[: end * BYTES_PER_MS]
        item.stored_short_ms = 0
        item.transcript = ""
        item.truncated = True
        await self.send(
            ConversationItemTruncatedEvent(
                type="conversation.item.truncated",
                event_id=self.event_id(),
                item_id=item.id,
                content_index=ev.get("content_index", 0),
                audio_end_ms=end,
            )
        )

    # -- input audio and VAD -------------------------------------------------------------------

    async def on_input_audio_buffer_append(self, ev: dict[str, Any]) -> None:
        self.pending += base64.b64decode(ev["audio"])
        frame_bytes = FRAME_MS * BYTES_PER_MS
        while len(self.pending) >= frame_bytes:
            frame, self.pending = self.pending[:frame_bytes], self.pending[frame_bytes:]
            start = self.buffer_ms
            self.buffer_ms += FRAME_MS
            td = self.turn_detection()
            if td is None:
                continue
            if is_speech(frame):
                self.silent_ms = 0
                if not self.speaking:
                    self.speaking = True
                    self.user_item = self.ids("item")
                    await self.send(
                        InputAudioBufferSpeechStartedEvent(
                            type="input_audio_buffer.speech_started",
                            event_id=self.event_id(),
                            audio_start_ms=max(start - td.get("prefix_padding_ms", 300), 0),
                            item_id=self.user_item,
                        )
                    )
                    if td.get("interrupt_response") and self.active is not None:
                        await self.cancel(self.active, "turn_detected")
                    elif self.active is not None and self.active.reply.in_flight:
                        await self.send_in_flight(self.active, self.active.reply.in_flight)
            elif self.speaking:
                self.silent_ms += FRAME_MS
                if self.silent_ms >= td.get("silence_duration_ms", 500):
                    await self.speech_stopped(td)

    async def speech_stopped(self, td: dict[str, Any]) -> None:
        self.speaking = False
        self.silent_ms = 0
        item_id = self.user_item
        assert item_id is not None
        await self.send(
            InputAudioBufferSpeechStoppedEvent(
                type="input_audio_buffer.speech_stopped",
                event_id=self.event_id(),
                audio_end_ms=self.buffer_ms,
                item_id=item_id,
            )
        )
        prev = self.previous_id()
        await self.send(
            InputAudioBufferCommittedEvent(
                type="input_audio_buffer.committed", event_id=self.event_id(), item_id=item_id, previous_item_id=prev
            )
        )
        item = Item(item_id, "message", "user")
        item.status = "completed"
        item.content = [{"type": "input_audio", "transcript": None}]
        await self.add_item(item, done=True)
        transcript = self.utterances.pop(0) if self.utterances else ""
        if self.session["audio"]["input"].get("transcription"):
            item.content = [{"type": "input_audio", "transcript": transcript}]
            await self.send(
                ConversationItemInputAudioTranscriptionCompletedEvent.model_validate(
                    {
                        "type": "conversation.item.input_audio_transcription.completed",
                        "event_id": self.event_id(),
                        "item_id": item_id,
                        "content_index": 0,
                        "transcript": transcript,
                        "usage": {"type": "duration", "seconds": 1},
                    }
                )
            )
        if td.get("create_response") and self.active is None:
            await self.start_response(None)

    # -- responses -----------------------------------------------------------------------------

    async def on_response_create(self, ev: dict[str, Any]) -> None:
        params = ev.get("response") or {}
        in_conversation = params.get("conversation", "auto") != "none"
        if in_conversation and self.active is not None:
            await self.error(
                "conversation_already_has_active_response",
                f"Conversation already has an active response in progress: {self.active.id}. "
                "Wait until the response is finished before creating a new one.",
                ev,
            )
            return
        await self.start_response(params)

    async def start_response(self, params: dict[str, Any] | None) -> None:
        params = params or {}
        if not self.replies:
            raise RuntimeError(f"{self.sc.name}: a response was created and the script has no reply left")
        reply = self.replies.pop(0)
        in_conversation = params.get("conversation", "auto") != "none"
        r = Response(self.ids("resp"), reply, in_conversation, params.get("metadata"))
        self.responses.append(r)
        if in_conversation:
            self.active = r
        await self.send(ResponseCreatedEvent.model_validate({"type": "response.created", "event_id": self.event_id(), "response": self.response_model(r, "in_progress")}))
        r.task = asyncio.create_task(self.stream(r))

    def response_model(self, r: Response, status: str, reason: str | None = None) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": r.id,
            "object": "realtime.response",
            "status": status,
            "conversation_id": self.conversation_id if r.in_conversation else None,
            "output_modalities": ["audio"],
            "max_output_tokens": "inf",
            "audio": {"output": {"format": {"type": "audio/pcm", "rate": RATE}, "voice": self.session["audio"]["output"].get("voice", "marin")}},
            "metadata": r.metadata,
            "output": [i.model() for i in r.items] if status != "in_progress" else [],
        }
        if status == "cancelled":
            d["status_details"] = {"type": "cancelled", "reason": reason}
        elif status == "completed":
            d["status_details"] = None
        if status != "in_progress":
            audio_ms = sum(len(i.audio) for i in r.items) // BYTES_PER_MS
            out_tokens = audio_ms // 50 + sum(len(i.transcript.split()) for i in r.items)
            d["usage"] = {
                "total_tokens": 120 + out_tokens,
                "input_tokens": 120,
                "output_tokens": out_tokens,
                "input_token_details": {"text_tokens": 100, "audio_tokens": 20, "image_tokens": 0, "cached_tokens": 0},
                "output_token_details": {"text_tokens": out_tokens - audio_ms // 50, "audio_tokens": audio_ms // 50},
            }
        return d

    async def sleep_step(self, r: Response, at_ms: int) -> bool:
        """Sleep until ``at_ms`` (a server time on the grid, 10 ms off the device's periods);
        False if the response was stopped meanwhile."""
        if r.hurry and not r.stopped:
            return True
        try:
            await asyncio.wait_for(r.wake.wait(), timeout=max(self.clock.until(at_ms), 0))
        except asyncio.TimeoutError:
            pass
        return not r.stopped

    async def send_in_flight(self, r: Response, n: int) -> None:
        """The next ``n`` deltas of ``r`` go out now: they were on their way when the user spoke
        (the server reads the client's next event only after them)."""
        r.hurry = n
        r.hurried.clear()
        r.wake.set()
        await r.hurried.wait()

    def sent_delta(self, r: Response) -> None:
        if r.hurry:
            r.hurry -= 1
            if not r.hurry:
                if not r.stopped:
                    r.wake.clear()
                r.hurried.set()

    async def stream(self, r: Response) -> None:
        reply = r.reply
        at = self.clock.grid_after(self.clock.now_ms() + reply.first_ms, offset=script.TICK_MS // 2)
        for index, out in enumerate(reply.outputs):
            if not await self.sleep_step(r, at):
                return
            if isinstance(out, script.Say):
                ok = await self.stream_say(r, index, out, at)
            else:
                ok = await self.stream_call(r, index, out, at)
            if ok is None:
                return
            at = ok
        r.generated = True
        if reply.done_tail_ms:
            if not await self.sleep_step(r, at + reply.done_tail_ms - reply.pace_ms):
                return
        if not r.done:
            await self.finish(r, "completed")

    async def open_item(self, r: Response, index: int, item: Item) -> None:
        r.items.append(item)
        self.items[item.id] = item
        await self.send(ResponseOutputItemAddedEvent.model_validate({"type": "response.output_item.added", "event_id": self.event_id(), "response_id": r.id, "output_index": index, "item": item.model()}))
        if r.in_conversation:
            prev = self.previous_id()
            self.conversation.append(item)
            await self.send(ConversationItemAdded.model_validate({"type": "conversation.item.added", "event_id": self.event_id(), "previous_item_id": prev, "item": item.model()}))

    async def stream_say(self, r: Response, index: int, out: script.Say, at: int) -> int | None:
        item = Item(self.ids("item"), "message", "assistant")
        item.stored_short_ms = r.reply.short_ms
        await self.open_item(r, index, item)
        await self.send(ResponseContentPartAddedEvent.model_validate({"type": "response.content_part.added", "event_id": self.event_id(), "response_id": r.id, "item_id": item.id, "output_index": index, "content_index": 0, "part": {"type": "audio", "transcript": ""}}))
        words = out.text.split()
        audio = voice(out.ms, f0=150.0 + 10 * index)
        step = script.DELTA_MS * BYTES_PER_MS
        for k in range(0, len(audio), step):
            if k:
                at += r.reply.pace_ms
                if not await self.sleep_step(r, at):
                    return None
            n = k // step
            if n < len(words):
                word = words[n] if n == 0 else " " + words[n]
                if n == (len(audio) - 1) // step:
                    word += "".join(" " + w for w in words[n + 1 :])
                item.transcript += word
                await self.send(ResponseAudioTranscriptDeltaEvent(type="response.output_audio_transcript.delta", event_id=self.event_id(), response_id=r.id, item_id=item.id, output_index=index, content_index=0, delta=word))
            chunk = audio[k : k + step]
            item.audio += chunk
            await self.send(ResponseAudioDeltaEvent(type="response.output_audio.delta", event_id=self.event_id(), response_id=r.id, item_id=item.id, output_index=index, content_index=0, delta=base64.b64encode(chunk).decode()))
            self.sent_delta(r)
        await self.close_say(r, index, item, "completed")
        return at + r.reply.pace_ms

    async def close_say(self, r: Response, index: int, item: Item, status: str) -> None:
        await self.send(ResponseAudioDoneEvent(type="response.output_audio.done", event_id=self.event_id(), response_id=r.id, item_id=item.id, output_index=index, content_index=0))
        await self.send(ResponseAudioTranscriptDoneEvent(type="response.output_audio_transcript.done", event_id=self.event_id(), response_id=r.id, item_id=item.id, output_index=index, content_index=0, transcript=item.transcript))
        await self.send(ResponseContentPartDoneEvent.model_validate({"type": "response.content_part.done", "event_id": self.event_id(), "response_id": r.id, "item_id": item.id, "output_index": index, "content_index": 0, "part": {"type": "audio", "transcript": item.transcript}}))
        await self.close_item(r, index, item, status)

    async def close_item(self, r: Response, index: int, item: Item, status: str) -> None:
        item.status = status
        await self.send(ResponseOutputItemDoneEvent.model_validate({"type": "response.output_item.done", "event_id": self.event_id(), "response_id": r.id, "output_index": index, "item": item.model()}))
        if r.in_conversation:
            prev = self.conversation[self.conversation.index(item) - 1].id if self.conversation.index(item) else None
            await self.send(ConversationItemDone.model_validate({"type": "conversation.item.done", "event_id": self.event_id(), "previous_item_id": prev, "item": item.model()}))

    async def stream_call(self, r: Response, index: int, out: script.Call, at: int) -> int | None:
        item = Item(self.ids("item"), "function_call")
        args = json.dumps(out.arguments)
        item.call = {"name": out.name, "call_id": self.ids("call"), "arguments": ""}
        await self.open_item(r, index, item)
        size = math.ceil(len(args) / out.chunks)
        for n, k in enumerate(range(0, len(args), size)):
            if n:
                at += r.reply.pace_ms
                if not await self.sleep_step(r, at):
                    return None
            item.call["arguments"] += args[k : k + size]
            await self.send(ResponseFunctionCallArgumentsDeltaEvent(type="response.function_call_arguments.delta", event_id=self.event_id(), response_id=r.id, item_id=item.id, output_index=index, call_id=item.call["call_id"], delta=args[k : k + size]))
        await self.send(ResponseFunctionCallArgumentsDoneEvent(type="response.function_call_arguments.done", event_id=self.event_id(), response_id=r.id, item_id=item.id, output_index=index, call_id=item.call["call_id"], name=out.name, arguments=args))
        await self.close_item(r, index, item, "completed")
        return at + r.reply.pace_ms

    async def finish(self, r: Response, status: str, reason: str | None = None) -> None:
        r.done = True
        r.stopped = True
        r.wake.set()
        if self.active is r:
            self.active = None
        await self.send(ResponseDoneEvent.model_validate({"type": "response.done", "event_id": self.event_id(), "response": self.response_model(r, status, reason)}))

    async def cancel(self, r: Response, reason: str) -> None:
        """Stop a response in progress: its open item ends ``incomplete``, then its done."""
        r.stopped = True
        r.wake.set()
        for index, item in enumerate(r.items):
            if item.status != "in_progress":
                continue
            if item.kind == "message":
                await self.close_say(r, index, item, "incomplete")
            else:
                await self.close_item(r, index, item, "incomplete")
        await self.finish(r, "cancelled", reason)

    async def on_response_cancel(self, ev: dict[str, Any]) -> None:
        wanted = ev.get("response_id")
        target = None
        for r in self.responses:
            if r.done:
                continue
            if (wanted is None and r.in_conversation) or r.id == wanted:
                target = r
        if target is not None and target.generated:
            # its generation is over: the done goes out, and the cancel finds nothing to stop
            await self.finish(target, "completed")
            target = None
        if target is None:
            await self.error("response_cancel_not_active", "Cancellation failed: no active response found", ev)
            return
        await self.cancel(target, "client_cancelled")
