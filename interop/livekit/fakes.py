"""Offline stand-ins for the models and the media of a LiveKit Agents session.

Everything here is written against the package's public base classes and is driven by one
scripted timeline (``script.Scenario``) and one clock (``Clock``):

- ``ScriptedAudioInput`` plays the user's side: 20 ms frames of 16 kHz mono audio, produced in
  real time. A frame inside a scripted utterance carries a constant non-zero sample value that
  encodes which utterance it belongs to (utterance ``i`` -> ``(i + 1) * 8``); every other frame is
  digital silence.
- ``EnergyVAD`` is a voice activity detector that hears exactly those non-zero frames. Its
  thresholds and bookkeeping are those of the package's bundled Silero VAD, the session's
  default (``inference.VAD``: speech confirmed after 50 ms, ended after 250 ms of silence);
  it reports one INFERENCE_DONE per frame.
- ``ScriptedSTT`` hears the same frames: for each utterance it heard, it sends the scripted
  interim and final transcripts at the scripted delays. Audio the session withholds from the
  STT (it substitutes silence while an uninterruptible reply plays) is not transcribed.
- ``ScriptedLLM`` answers from the script: the reply to a user message is looked up by its text,
  the reply to tool results by the tools' names, the reply to ``generate_reply(instructions=)``
  by the instructions.
- ``ScriptedTTS`` is a streaming TTS whose audio lasts ``seconds_per_word`` per word.
- ``PlayoutSink`` is the loudspeaker: it plays the captured frames in real time, pauses and
  resumes, clears its buffer, and reports ``playback_started`` / ``playback_finished`` with the
  position played and ``interrupted``, as a room's audio output does.
- ``TextSink`` collects the transcript text the session forwards.
"""

from __future__ import annotations

import array
import asyncio
import collections
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from livekit import rtc
from livekit.agents import llm, stt, tts, vad
from livekit.agents.types import DEFAULT_API_CONNECT_OPTIONS, NOT_GIVEN, APIConnectOptions
from livekit.agents.voice import io

log = logging.getLogger("interop.fakes")

SAMPLE_RATE = 16000
FRAME_SECONDS = 0.02
SAMPLES_PER_FRAME = int(SAMPLE_RATE * FRAME_SECONDS)
TTS_SAMPLE_RATE = 24000


class Clock:
    """Scenario time: seconds since ``start()``, on the event loop's monotonic clock."""

    def __init__(self) -> None:
        self._t0: float | None = None
        self.started = asyncio.Event()

    def start(self) -> None:
        self._t0 = asyncio.get_running_loop().time()
        self.started.set()

    def now(self) -> float:
        assert self._t0 is not None
        return asyncio.get_running_loop().time() - self._t0

    async def sleep_until(self, t: float) -> None:
        await self.started.wait()
        assert self._t0 is not None
        delay = self._t0 + t - asyncio.get_running_loop().time()
        if delay > 0:
            await asyncio.sleep(delay)


def utterance_index(value: int) -> int | None:
    """The utterance a frame's sample value encodes, None for silence."""
    if value == 0:
        return None
    return value // 8 - 1


# -- user audio ------------------------------------------------------------------------------


class ScriptedAudioInput(io.AudioInput):
    def __init__(self, clock: Clock, utterances: list[Any]) -> None:
        super().__init__(label="interop.ScriptedAudioInput")
        self._clock = clock
        self._utterances = utterances
        self._n = 0

    def _value_at(self, t: float) -> int:
        for i, u in enumerate(self._utterances):
            if u.start <= t + 1e-9 < u.end:
                return (i + 1) * 8
        return 0

    async def __anext__(self) -> rtc.AudioFrame:
        t = self._n * FRAME_SECONDS
        # a frame exists once its last sample has been captured
        await self._clock.sleep_until(t + FRAME_SECONDS)
        self._n += 1
        value = self._value_at(t)
        data = array.array("h", [value]) * SAMPLES_PER_FRAME
        return rtc.AudioFrame(
            data=data.tobytes(),
            sample_rate=SAMPLE_RATE,
            num_channels=1,
            samples_per_channel=SAMPLES_PER_FRAME,
        )


def _frame_value(frame: rtc.AudioFrame) -> int:
    data = frame.data
    return int(data[0]) if len(data) else 0


# -- VAD -------------------------------------------------------------------------------------


class EnergyVAD(vad.VAD):
    def __init__(
        self, *, min_speech_duration: float = 0.05, min_silence_duration: float = 0.25
    ) -> None:
        # The base class turns INFERENCE_DONE events into VADMetrics once per
        # 1/update_interval inferences; they would land in the event stream once a second at
        # a phase unrelated to the scenario. This fake reports no VAD metrics: its update
        # interval is set so small that the count is never reached.
        super().__init__(capabilities=vad.VADCapabilities(update_interval=1e-9))
        self.min_speech_duration = min_speech_duration
        self.min_silence_duration = min_silence_duration

    @property
    def model(self) -> str:
        return "energy-vad"

    @property
    def provider(self) -> str:
        return "interop"

    def stream(self) -> vad.VADStream:
        return _EnergyVADStream(self)


class _EnergyVADStream(vad.VADStream):
    def __init__(self, v: EnergyVAD) -> None:
        super().__init__(v)
        self._opts = v

    async def _main_task(self) -> None:
        # the bookkeeping of the package's bundled Silero VAD (livekit.agents.inference.vad):
        # the published speech duration grows for as long as speech is published, so it
        # includes the trailing silence that ends it
        speaking = False
        speech_threshold = 0.0  # consecutive voiced audio
        silence_threshold = 0.0  # consecutive silence
        speech_duration = 0.0  # of the speech published, trailing silence included
        silence_duration = 0.0  # since the last speech was published as ended
        samples_index = 0

        async for item in self._input_ch:
            if isinstance(item, vad.VADStream._FlushSentinel):
                speaking = False
                speech_threshold = silence_threshold = 0.0
                speech_duration = silence_duration = 0.0
                continue

            frame = item
            d = frame.duration
            samples_index += frame.samples_per_channel
            voiced = _frame_value(frame) != 0

            if speaking:
                speech_duration += d
            else:
                silence_duration += d

            self._event_ch.send_nowait(
                vad.VADEvent(
                    type=vad.VADEventType.INFERENCE_DONE,
                    samples_index=samples_index,
                    timestamp=time.time(),
                    speech_duration=speech_duration,
                    silence_duration=silence_duration,
                    frames=[frame],
                    probability=1.0 if voiced else 0.0,
                    inference_duration=0.0,
                    speaking=speaking,
                    raw_accumulated_silence=silence_threshold,
                    raw_accumulated_speech=speech_threshold,
                )
            )

            if voiced:
                speech_threshold += d
                silence_threshold = 0.0
                if not speaking and speech_threshold >= self._opts.min_speech_duration:
                    speaking = True
                    silence_duration = 0.0
                    speech_duration = speech_threshold
                    self._event_ch.send_nowait(
                        vad.VADEvent(
                            type=vad.VADEventType.START_OF_SPEECH,
                            samples_index=samples_index,
                            timestamp=time.time(),
                            speech_duration=speech_duration,
                            silence_duration=0.0,
                            speaking=True,
                        )
                    )
            else:
                silence_threshold += d
                speech_threshold = 0.0
                if speaking and silence_threshold >= self._opts.min_silence_duration:
                    speaking = False
                    silence_duration = silence_threshold
                    self._event_ch.send_nowait(
                        vad.VADEvent(
                            type=vad.VADEventType.END_OF_SPEECH,
                            samples_index=samples_index,
                            timestamp=time.time(),
                            speech_duration=speech_duration,
                            silence_duration=silence_duration,
                            speaking=False,
                        )
                    )
                    speech_duration = 0.0


# -- STT -------------------------------------------------------------------------------------


class ScriptedSTT(stt.STT):
    def __init__(self, clock: Clock, utterances: list[Any]) -> None:
        super().__init__(capabilities=stt.STTCapabilities(streaming=True, interim_results=True))
        self._clock = clock
        self._utterances = utterances

    @property
    def model(self) -> str:
        return "scripted-stt"

    @property
    def provider(self) -> str:
        return "interop"

    async def _recognize_impl(self, buffer: Any, *, language: Any = NOT_GIVEN, conn_options: Any = None) -> stt.SpeechEvent:  # noqa: E501
        raise NotImplementedError("the scripted STT only streams")

    def stream(
        self,
        *,
        language: Any = NOT_GIVEN,
        conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS,
    ) -> stt.RecognizeStream:
        return _ScriptedRecognizeStream(stt=self, conn_options=conn_options)


class _ScriptedRecognizeStream(stt.RecognizeStream):
    def __init__(self, *, stt: ScriptedSTT, conn_options: APIConnectOptions) -> None:
        super().__init__(stt=stt, conn_options=conn_options)
        self._script_stt = stt

    def _send(self, kind: stt.SpeechEventType, text: str) -> None:
        self._event_ch.send_nowait(
            stt.SpeechEvent(
                type=kind,
                alternatives=[stt.SpeechData(language="en", text=text, confidence=1.0)],
            )
        )

    async def _deliver(self, index: int) -> None:
        u = self._script_stt._utterances[index]
        clock = self._script_stt._clock
        if u.interim is not None:
            await clock.sleep_until(u.start + u.interim_after)
            self._send(stt.SpeechEventType.INTERIM_TRANSCRIPT, u.interim)
        if u.transcript is not None:
            await clock.sleep_until(u.end + u.stt_delay)
            self._send(stt.SpeechEventType.FINAL_TRANSCRIPT, u.transcript)

    async def _run(self) -> None:
        heard: set[int] = set()
        tasks: list[asyncio.Task[None]] = []
        try:
            async for item in self._input_ch:
                if isinstance(item, stt.RecognizeStream._FlushSentinel):
                    continue
                index = utterance_index(_frame_value(item))
                if index is not None and index not in heard:
                    # the first frame of an utterance this STT hears schedules its transcripts
                    heard.add(index)
                    tasks.append(asyncio.create_task(self._deliver(index)))
            for t in tasks:
                await t
        finally:
            for t in tasks:
                if not t.done():
                    t.cancel()


# -- LLM -------------------------------------------------------------------------------------


_RUNNING_SUFFIXES = ("_running", "_running_output")


def _text_of(item: Any) -> str:
    content = getattr(item, "content", None) or []
    return "".join(c for c in content if isinstance(c, str))


def reply_key(chat_ctx: llm.ChatContext) -> str:
    """What the scripted LLM answers: the newest user message, tool results or instructions."""
    items = list(chat_ctx.items)
    outputs: list[str] = []
    for item in reversed(items):
        if str(getattr(item, "id", "")).endswith(_RUNNING_SUFFIXES):
            continue  # a placeholder for a tool still running (1.8: _inject_running_tool_calls)
        kind = getattr(item, "type", None)
        if kind == "function_call_output":
            outputs.append(item.name)
            continue
        if outputs:
            return "after:" + "+".join(sorted(outputs))
        if kind == "message" and item.role == "user":
            return "user:" + _text_of(item)
        if kind == "message" and item.role in ("system", "developer") and item is not items[0]:
            return "instructions:" + _text_of(item)
        if kind in ("function_call", "agent_handoff", "agent_config_update"):
            continue
        if kind == "message" and item.role == "assistant":
            return "after-assistant:" + _text_of(item)
    if outputs:
        return "after:" + "+".join(sorted(outputs))
    return "start"


class ScriptedLLM(llm.LLM):
    def __init__(self, clock: Clock, replies: dict[str, Any], errors: list[str]) -> None:
        super().__init__()
        self._clock = clock
        self._replies = replies
        self._errors = errors
        self._count = 0
        self.keys: list[str] = []

    @property
    def model(self) -> str:
        return "scripted-llm"

    @property
    def provider(self) -> str:
        return "interop"

    def chat(
        self,
        *,
        chat_ctx: llm.ChatContext,
        tools: list[Any] | None = None,
        conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS,
        parallel_tool_calls: Any = NOT_GIVEN,
        tool_choice: Any = NOT_GIVEN,
        extra_kwargs: Any = NOT_GIVEN,
    ) -> llm.LLMStream:
        key = reply_key(chat_ctx)
        self.keys.append(key)
        reply = self._replies.get(key)
        if reply is None:
            self._errors.append(f"no scripted LLM reply for {key!r}")
        self._count += 1
        return _ScriptedLLMStream(
            self,
            chat_ctx=chat_ctx,
            tools=tools or [],
            conn_options=conn_options,
            reply=reply,
            response_id=f"resp_{self._count}",
        )


class _ScriptedLLMStream(llm.LLMStream):
    def __init__(
        self,
        llm_: ScriptedLLM,
        *,
        chat_ctx: llm.ChatContext,
        tools: list[Any],
        conn_options: APIConnectOptions,
        reply: Any,
        response_id: str,
    ) -> None:
        super().__init__(llm_, chat_ctx=chat_ctx, tools=tools, conn_options=conn_options)
        self._reply = reply
        self._response_id = response_id

    async def _run(self) -> None:
        reply = self._reply
        if reply is None:
            return
        await asyncio.sleep(reply.ttft)
        words = reply.text.split(" ") if reply.text else []
        for i, word in enumerate(words):
            piece = word if i == 0 else " " + word
            self._event_ch.send_nowait(
                llm.ChatChunk(
                    id=self._response_id,
                    delta=llm.ChoiceDelta(role="assistant", content=piece),
                )
            )
            await asyncio.sleep(0.005)
        if reply.tool_calls:
            self._event_ch.send_nowait(
                llm.ChatChunk(
                    id=self._response_id,
                    delta=llm.ChoiceDelta(
                        role="assistant",
                        tool_calls=[
                            llm.FunctionToolCall(
                                name=c.name,
                                arguments=json.dumps(c.arguments),
                                call_id=c.call_id,
                            )
                            for c in reply.tool_calls
                        ],
                    ),
                )
            )
            await asyncio.sleep(reply.tail)
        prompt_tokens = 10 * len(self._chat_ctx.items)
        completion_tokens = len(words) + 5 * len(reply.tool_calls)
        self._event_ch.send_nowait(
            llm.ChatChunk(
                id=self._response_id,
                usage=llm.CompletionUsage(
                    completion_tokens=completion_tokens,
                    prompt_tokens=prompt_tokens,
                    total_tokens=completion_tokens + prompt_tokens,
                ),
            )
        )


# -- TTS -------------------------------------------------------------------------------------


class ScriptedTTS(tts.TTS):
    def __init__(self, *, seconds_per_word: float = 0.3, ttfb: float = 0.2) -> None:
        super().__init__(
            capabilities=tts.TTSCapabilities(streaming=True),
            sample_rate=TTS_SAMPLE_RATE,
            num_channels=1,
        )
        self.seconds_per_word = seconds_per_word
        self.ttfb = ttfb
        self._count = 0

    @property
    def model(self) -> str:
        return "scripted-tts"

    @property
    def provider(self) -> str:
        return "interop"

    def synthesize(self, text: str, *, conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS) -> tts.ChunkedStream:  # noqa: E501
        raise NotImplementedError("the scripted TTS only streams")

    def stream(self, *, conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS) -> tts.SynthesizeStream:  # noqa: E501
        self._count += 1
        return _ScriptedSynthesizeStream(tts=self, conn_options=conn_options, n=self._count)


class _ScriptedSynthesizeStream(tts.SynthesizeStream):
    def __init__(self, *, tts: ScriptedTTS, conn_options: APIConnectOptions, n: int) -> None:
        super().__init__(tts=tts, conn_options=conn_options)
        self._script_tts = tts
        self._n = n

    async def _run(self, output_emitter: tts.AudioEmitter) -> None:
        output_emitter.initialize(
            request_id=f"tts_{self._n}",
            sample_rate=TTS_SAMPLE_RATE,
            num_channels=1,
            mime_type="audio/pcm",
            stream=True,
        )
        text = ""
        segments = 0

        async def synthesize(text: str) -> None:
            nonlocal segments
            segments += 1
            self._mark_started()
            output_emitter.start_segment(segment_id=f"tts_{self._n}_{segments}")
            await asyncio.sleep(self._script_tts.ttfb)
            words = len(text.split())
            samples = int(words * self._script_tts.seconds_per_word * TTS_SAMPLE_RATE)
            # a quiet tone: the sink does not look at it
            output_emitter.push((array.array("h", [100]) * samples).tobytes())
            output_emitter.end_segment()

        async for data in self._input_ch:
            if isinstance(data, tts.SynthesizeStream._FlushSentinel):
                if text.strip():
                    await synthesize(text)
                text = ""
                continue
            text += data
        if text.strip():
            await synthesize(text)


# -- agent audio and text output ---------------------------------------------------------------


@dataclass
class _Segment:
    captured: float = 0.0  # seconds of audio captured
    played: float = 0.0  # seconds played
    flushed: bool = False
    cleared: bool = False
    started: bool = False


class PlayoutSink(io.AudioOutput):
    """A loudspeaker that plays what it is given in real time.

    ``capture_frame`` accepts audio faster than real time; the playhead advances with the wall
    clock while the sink is not paused. A segment (the audio between two ``flush()`` calls)
    finishes when the playhead reaches its end after it was flushed, or as soon as it is
    flushed after ``clear_buffer()`` dropped what was left; ``playback_finished`` then reports
    how much of it played and whether it was interrupted. ``playback_started`` is reported when
    the playhead first moves in a segment. ``pause()`` freezes the playhead (nothing queued is
    lost); ``resume()`` lets it go on.
    """

    def __init__(self, *, sample_rate: int | None = None) -> None:
        super().__init__(
            label="interop.PlayoutSink",
            capabilities=io.AudioOutputCapabilities(pause=True),
            sample_rate=sample_rate,
        )
        self._segments: collections.deque[_Segment] = collections.deque()
        self._paused = False
        self._since: float | None = None  # loop time the playhead last moved from
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.journal: list[tuple[float, str, float]] = []  # (time.time(), what, position)

    # the segment being captured, if its flush has not come yet
    def _capturing(self) -> _Segment | None:
        if self._segments and not self._segments[-1].flushed:
            return self._segments[-1]
        return None

    def _note(self, what: str, position: float) -> None:
        self.journal.append((time.time(), what, round(position, 3)))

    def _advance(self) -> None:
        if self._since is None or not self._segments:
            return
        seg = self._segments[0]
        now = asyncio.get_running_loop().time()
        seg.played = min(seg.captured, seg.played + (now - self._since))
        self._since = now

    def _ensure_task(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._play(), name="PlayoutSink._play")

    async def capture_frame(self, frame: rtc.AudioFrame) -> None:
        await super().capture_frame(frame)
        seg = self._capturing()
        if seg is None:
            seg = _Segment()
            self._segments.append(seg)
        if seg.cleared:
            return  # cleared while still capturing: the rest of the segment is dropped
        seg.captured += frame.duration
        self._ensure_task()
        self._wake.set()

    def flush(self) -> None:
        super().flush()
        seg = self._capturing()
        if seg is None:
            return
        seg.flushed = True
        if seg.cleared:
            self._finish(seg, interrupted=True)
        self._wake.set()

    def clear_buffer(self) -> None:
        self._advance()
        for seg in list(self._segments):
            if seg.cleared:
                continue
            seg.cleared = True
            seg.captured = seg.played
            self._note("clear", seg.played)
            if seg.flushed:
                self._finish(seg, interrupted=True)
        self._since = None
        self._wake.set()

    def pause(self) -> None:
        super().pause()
        if not self._paused:
            self._advance()
            self._paused = True
            self._since = None
            self._note("pause", self._segments[0].played if self._segments else 0.0)
            self._wake.set()

    def resume(self) -> None:
        super().resume()
        if self._paused:
            self._paused = False
            self._note("resume", self._segments[0].played if self._segments else 0.0)
            self._wake.set()

    def _finish(self, seg: _Segment, *, interrupted: bool) -> None:
        if seg is self._segments[0]:
            self._since = None
        self._segments.remove(seg)
        self._note("finished interrupted" if interrupted else "finished", seg.played)
        self.on_playback_finished(playback_position=seg.played, interrupted=interrupted)

    async def _play(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            self._advance()
            seg = self._segments[0] if self._segments else None
            remaining = seg.captured - seg.played if seg is not None else 0.0
            if seg is not None and seg.flushed and not seg.cleared and remaining <= 1e-9:
                self._finish(seg, interrupted=False)
                continue
            if seg is None or self._paused or seg.cleared or remaining <= 1e-9:
                self._since = None
                self._wake.clear()
                await self._wake.wait()
                continue

            if not seg.started:
                seg.started = True
                self._note("started", seg.played)
                self.on_playback_started(created_at=time.time())
            if self._since is None:
                self._since = loop.time()

            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=remaining)
            except asyncio.TimeoutError:
                pass

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass


class TextSink(io.TextOutput):
    def __init__(self) -> None:
        super().__init__(label="interop.TextSink", next_in_chain=None)
        self.segments: list[str] = []
        self._current = ""
        self.journal: list[tuple[float, str]] = []  # (time.time(), text so far)

    async def capture_text(self, text: str) -> None:
        self._current += text
        self.journal.append((time.time(), self._current))

    def flush(self) -> None:
        self.segments.append(self._current)
        self._current = ""


@dataclass
class Fakes:
    clock: Clock
    vad: EnergyVAD
    stt: ScriptedSTT
    llm: ScriptedLLM
    tts: ScriptedTTS
    audio_input: ScriptedAudioInput
    audio_sink: PlayoutSink
    text_sink: TextSink
    errors: list[str] = field(default_factory=list)
