"""Scripted stand-ins for the network parts of a Pipecat voice pipeline.

Each one subclasses the Pipecat base class a real service or transport subclasses, and
overrides only what talks to the outside world; everything else (interruption handling,
sentence aggregation, audio contexts, function-call machinery, audio chunking and bot-speaking
detection) is Pipecat's own code.

- ``ScriptedInput`` (``BaseInputTransport``): pushes ``VADUserStartedSpeakingFrame`` /
  ``VADUserStoppedSpeakingFrame`` at the scripted times, as a transport with a VAD does.
- ``ScriptedSTT`` (``STTService``): sends each utterance's interim and final transcripts at
  the scripted times, unless it is muted (``STTMuteFrame``).
- ``ScriptedLLM`` (``LLMService``): answers an ``LLMContextFrame`` from the script, looked up
  by the context's last message; streams the text word by word, then hands the tool calls to
  ``LLMService.run_function_calls``, as Pipecat's OpenAI service does.
- ``ScriptedTTS`` (``TTSService``): 0.3 s of 24 kHz mono audio per word, one frame per word,
  all of a sentence at once after 0.1 s of latency; faster than real time, like a real TTS.
- ``PlayoutOutput`` (``BaseOutputTransport``): a loudspeaker that takes each chunk in real
  time (a write returns when the chunk has played), on its own clock.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator
from typing import Any, Callable

import script
from pipecat import __version__ as PIPECAT_VERSION
from pipecat.frames.frames import (
    Frame,
    FunctionCallFromLLM,
    InterimTranscriptionFrame,
    LLMContextFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    StartFrame,
    TranscriptionFrame,
    TTSAudioRawFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.processors.frame_processor import FrameDirection
from pipecat.services.llm_service import LLMService
from pipecat.services.stt_service import STTService
from pipecat.services.tts_service import TTSService
from pipecat.transports.base_input import BaseInputTransport
from pipecat.transports.base_output import BaseOutputTransport
from pipecat.utils.time import time_now_iso8601

log = logging.getLogger("interop.fakes")


def version_tuple(v: str = PIPECAT_VERSION) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split(".")[:3] if p.isdigit())


# Pipecat 1.0 removed StartInterruptionFrame, allow_interruptions and STTMuteFilter; the input
# transport no longer turns VAD into user turns (the user aggregator's strategies do), and
# services take settings objects (1.x) and TTS contexts (run_tts(text, context_id)).
V1 = version_tuple() >= (1, 0, 0)


def _settings(kind: str) -> dict[str, Any]:
    """``settings=`` for a 1.x service: every field None (nothing to configure) but the model;
    older services take none."""
    if not V1:
        return {}
    import dataclasses

    from pipecat.services import settings

    cls = getattr(settings, kind)
    values = {f.name: None for f in dataclasses.fields(cls) if f.init}
    values["model"] = "scripted"
    return {"settings": cls(**values)}


class Clock:
    """Seconds since the timeline started (the pipeline's start)."""

    def __init__(self) -> None:
        self._t0: float | None = None
        self._started = asyncio.Event()

    def start(self) -> None:
        self._t0 = asyncio.get_running_loop().time()
        self._started.set()

    def now(self) -> float:
        assert self._t0 is not None
        return asyncio.get_running_loop().time() - self._t0

    async def sleep_until(self, t: float) -> None:
        await self._started.wait()
        delay = t - self.now()
        if delay > 0:
            await asyncio.sleep(delay)


class ScriptedInput(BaseInputTransport):
    def __init__(self, clock: Clock, utterances: list[script.Utterance], **kwargs: Any):
        super().__init__(**kwargs)
        self._script_clock = clock
        self._utterances = utterances
        self._timeline: asyncio.Task | None = None

    async def start(self, frame: StartFrame):
        await super().start(frame)
        await self.set_transport_ready(frame)
        self._timeline = self.create_task(self._play(), "scripted-input")

    async def _play(self) -> None:
        events: list[tuple[float, Frame]] = []
        # start_secs / stop_secs are fields of the VAD frames in 1.x, not in 0.0.84
        started = {"start_secs": script.VAD_START_SECS} if V1 else {}
        stopped = {"stop_secs": script.VAD_STOP_SECS} if V1 else {}
        for u in self._utterances:
            events.append((u.start + script.VAD_START_SECS, VADUserStartedSpeakingFrame(**started)))
            events.append((u.end + script.VAD_STOP_SECS, VADUserStoppedSpeakingFrame(**stopped)))
        events.sort(key=lambda e: e[0])
        for t, frame in events:
            await self._script_clock.sleep_until(t)
            await self.push_frame(frame)
            if not V1:
                # before 1.0 the input transport's own code turns the VAD's verdict into the
                # user's turn (UserStarted/StoppedSpeakingFrame both ways) and, when the
                # pipeline allows them, an interruption (StartInterruptionFrame)
                from pipecat.audio.vad.vad_analyzer import VADState

                speaking = isinstance(frame, VADUserStartedSpeakingFrame)
                await self._handle_user_interruption(VADState.SPEAKING if speaking else VADState.QUIET)

    async def _stop_timeline(self) -> None:
        if self._timeline is not None:
            await self.cancel_task(self._timeline)
            self._timeline = None

    async def stop(self, frame):
        await self._stop_timeline()
        await super().stop(frame)

    async def cancel(self, frame):
        await self._stop_timeline()
        await super().cancel(frame)


class ScriptedSTT(STTService):
    """An STT that transcribes from the script, not from audio. A real STT behind a muting
    ``STTMuteFilter`` hears nothing: the filter drops the ``InputAudioRawFrame`` it would
    transcribe (``STTMuteFilter.process_frame``). 0.0.84's filter also pushes an ``STTMuteFrame``,
    which sets the STT's ``_muted``; later ones push none (``_handle_mute_state``), so
    ``muted_by`` (the filter's own state) says when the filter mutes."""

    def __init__(
        self,
        clock: Clock,
        utterances: list[script.Utterance],
        muted_by: Callable[[], bool] | None = None,
        **kwargs: Any,
    ):
        super().__init__(audio_passthrough=False, **_settings("STTSettings"), **kwargs)
        self._script_clock = clock
        self._utterances = utterances
        self._muted_by = muted_by
        self._timeline: asyncio.Task | None = None

    async def start(self, frame: StartFrame):
        await super().start(frame)
        self._timeline = self.create_task(self._play(), "scripted-stt")

    async def run_stt(self, audio: bytes) -> AsyncGenerator[Frame | None, None]:
        yield None  # no audio reaches this STT: it transcribes from the script

    async def _play(self) -> None:
        events: list[tuple[float, Frame]] = []
        for u in self._utterances:
            if u.interim is not None:
                events.append(
                    (u.start + u.interim_after, InterimTranscriptionFrame(u.interim, "", time_now_iso8601()))
                )
            if u.transcript is not None:
                events.append(
                    (u.end + u.stt_delay, TranscriptionFrame(u.transcript, "", time_now_iso8601()))
                )
        events.sort(key=lambda e: e[0])
        for t, frame in events:
            await self._script_clock.sleep_until(t)
            if self._muted or (self._muted_by is not None and self._muted_by()):
                log.info("stt muted: %s dropped", frame)
                continue
            await self.push_frame(frame)

    async def _stop_timeline(self) -> None:
        if self._timeline is not None:
            await self.cancel_task(self._timeline)
            self._timeline = None

    async def stop(self, frame):
        await self._stop_timeline()
        await super().stop(frame)

    async def cancel(self, frame):
        await self._stop_timeline()
        await super().cancel(frame)


def _content(message: dict) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else json.dumps(content)


def settled_calls(messages: list[dict]) -> dict[str, str]:
    """The tool calls of a context that have an answer, ``{tool_call_id: "after:<function>" |
    "cancelled:<function>"}``: a tool message other than the IN_PROGRESS placeholder, or the
    developer message Pipecat writes for an async call's result or cancellation."""
    names: dict[str, str] = {}
    for m in messages:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
    out: dict[str, str] = {}
    for m in messages:
        content = _content(m)
        if m.get("role") not in ("tool", "developer"):
            continue
        try:
            payload = json.loads(content)
        except ValueError:
            payload = None
        if isinstance(payload, dict) and payload.get("type") == "async_tool":
            # an async call: "running" placeholder, then a "finished" developer message
            if payload.get("status") != "finished":
                continue
            call = payload.get("tool_call_id", "")
            cancelled = str(payload.get("result", "")).startswith("CANCELLED")
        elif m.get("role") == "tool":
            call = m.get("tool_call_id", "")
            if content == "IN_PROGRESS":
                continue
            cancelled = content == "CANCELLED"
        else:
            continue
        if call not in names:
            continue
        out[call] = f"{'cancelled' if cancelled else 'after'}:{names[call]}"
    return out


class ScriptedLLM(LLMService):
    def __init__(self, replies: dict[str, script.Reply], errors: list[str], **kwargs: Any):
        super().__init__(**_settings("LLMSettings"), **kwargs)
        self._replies = replies
        self._errors = errors
        self.keys: list[str] = []
        self._answered: set[tuple[str, str]] = set()
        self._answered_users: set[tuple[int, str]] = set()

    def reply_key(self, context: Any) -> str:
        """The script key of the reply to a context: what is new in it since the last
        generation. ``user:<text>`` when its last message is a user message not answered yet;
        else ``after:<function>`` / ``cancelled:<function>`` for the first tool call answered
        since (results are written in place, over the call's placeholder, so they need not be
        the last message; and before 1.0 a result can run the LLM before the assistant's reply
        to the user's last message is in the context)."""
        raw = context.messages if hasattr(context, "messages") else context.get_messages()
        messages = [m for m in raw if isinstance(m, dict)]
        settled = settled_calls(messages)
        # a call's answer can change (a late result written over CANCELLED): keyed by both
        new = [k for tid, k in settled.items() if (tid, k) not in self._answered]
        self._answered |= set(settled.items())
        if messages and messages[-1].get("role") == "user":
            last = (len(messages) - 1, _content(messages[-1]))
            if last not in self._answered_users:
                self._answered_users.add(last)
                return f"user:{last[1]}"
        return new[0] if new else "none"

    async def process_frame(self, frame: Frame, direction: FrameDirection):
        await super().process_frame(frame, direction)
        if isinstance(frame, LLMContextFrame):
            await self.push_frame(LLMFullResponseStartFrame())
            try:
                await self._generate(frame.context)
            finally:
                await self.push_frame(LLMFullResponseEndFrame())
        else:
            await self.push_frame(frame, direction)

    async def _generate(self, context: Any) -> None:
        key = self.reply_key(context)
        self.keys.append(key)
        reply = self._replies.get(key)
        if reply is None:
            self._errors.append(f"no scripted reply for {key!r}")
            return
        # paced on absolute deadlines: a long stream does not drift with the sleeps' overshoot
        loop = asyncio.get_running_loop()
        t0 = loop.time() + reply.ttft
        words = reply.text.split()
        for i, word in enumerate(words):
            await asyncio.sleep(max(0.0, t0 + i * reply.word_gap - loop.time()))
            text = word if i == 0 else " " + word
            if V1:
                await self._push_llm_text(text)
            else:
                await self.push_frame(LLMTextFrame(text))
        await asyncio.sleep(max(0.0, t0 + len(words) * reply.word_gap - loop.time()))
        if reply.tool_calls:
            await self.run_function_calls(
                [
                    FunctionCallFromLLM(
                        function_name=c.name,
                        tool_call_id=c.call_id,
                        arguments=c.arguments,
                        context=context,
                    )
                    for c in reply.tool_calls
                ]
            )


class ScriptedTTS(TTSService):
    SAMPLE_RATE = 24000

    def __init__(self, seconds_per_word: float, latency: float = 0.1, **kwargs: Any):
        if V1:
            # the base class opens an audio context per response and ends it
            kwargs.update(push_start_frame=True, push_stop_frames=True, **_settings("TTSSettings"))
        super().__init__(sample_rate=self.SAMPLE_RATE, **kwargs)
        self._seconds_per_word = seconds_per_word
        self._latency = latency

    def can_generate_metrics(self) -> bool:
        return False

    async def run_tts(
        self, text: str, context_id: str | None = None
    ) -> AsyncGenerator[Frame | None, None]:
        await asyncio.sleep(self._latency)
        samples = int(self.sample_rate * self._seconds_per_word)
        extra = {"context_id": context_id} if V1 else {}
        if not V1:
            # before 1.0 an HTTP TTS brackets each request itself (as Pipecat's Piper service)
            yield TTSStartedFrame()
        for word in text.split():
            # a word's audio: a constant non-zero sample (never silence)
            yield TTSAudioRawFrame(
                audio=b"\x10\x02" * samples, sample_rate=self.sample_rate, num_channels=1, **extra
            )
        if not V1:
            yield TTSStoppedFrame()


class PlayoutOutput(BaseOutputTransport):
    # the longest the audio task takes between a write's return and its next write when it
    # has the next chunk already (measured: under 5 ms; more only on a loaded machine)
    CONTINUOUS_WITHIN = 0.03

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self._playhead = 0.0
        self._returned_at = 0.0
        self.played_ms = 0.0

    async def start(self, frame: StartFrame):
        await super().start(frame)
        await self.set_transport_ready(frame)

    async def write_audio_frame(self, frame) -> bool:
        """Play a chunk: return when it has played. The device plays on its own clock, one
        chunk after the other: when the audio task hands over the next chunk as soon as the
        last write returned (its own work in between, however slow the machine), the chunk
        plays right after the last one; only a chunk the task had to wait for (nothing to play
        meanwhile) starts the clock again."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        duration = len(frame.audio) / (2 * frame.num_channels * frame.sample_rate)
        if now - self._returned_at > self.CONTINUOUS_WITHIN:
            self._playhead = max(self._playhead, now)  # the device was silent meanwhile
        self._playhead += duration
        await asyncio.sleep(max(0.0, self._playhead - now))
        self._returned_at = loop.time()
        self.played_ms += duration * 1000
        return True
