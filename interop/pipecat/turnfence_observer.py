"""A Pipecat observer that writes what matters to turns as JSON lines, for turnfence.

Copy this one file into your project and attach it to the pipeline:

    from turnfence_observer import TurnfenceObserver
    observer = TurnfenceObserver("call.jsonl", options={"allow_interruptions": True})
    worker = PipelineWorker(pipeline, observers=[observer])   # PipelineTask before 1.0
    ...                                                       # run the pipeline
    observer.close()

then check the log with ``turnfence check --dialect pipecat call.jsonl``.

The first line is a meta line, ``{"meta": {"dialect": "pipecat", "version": ..., "options":
...}}``. Every other line is one frame, written when it was first pushed:

    {"t_ms": 1234, "frame": "InterruptionFrame", "id": 812, "src": "LLMUserAggregator#0",
     "dst": "OpenAILLMService#0", "dir": "down", ...fields of the frame that matter}

``t_ms`` is the pipeline clock of that push (the observer's ``timestamp``, nanoseconds) in
milliseconds since the first frame this observer logged. A frame is pushed again by every
processor that passes it on; only its first push is logged, so each frame is one line. A
frame broadcast both ways (Pipecat pushes two frames whose ``broadcast_sibling_id`` name each
other) is logged once, at the first of the two, with ``"broadcast": true``. Versions without
``broadcast_sibling_id`` (before 0.0.103) push the two copies as unrelated frames: the
second is recognized as a copy (same processor, same class and fields, the other direction,
within COPY_WINDOW_MS of the first) and not logged either; those lines carry no
``broadcast`` field. Audio is never written, only its duration in milliseconds.

Output audio appears twice, as two different frames: the TTS service's frames when they are
synthesized (``"played": false``), and the chunks the output transport cuts them into, each
logged when the transport has written it (``"played": true``). Count one or the other, not
both.

The module needs nothing but Pipecat and the standard library, and knows the frame names of
old and new Pipecat versions alike (``StartInterruptionFrame`` before 0.0.85,
``InterruptionFrame`` after; frames a version lacks are simply never seen).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import IO, Any

from pipecat.observers.base_observer import BaseObserver, FramePushed

try:  # the processor that plays audio; its pushes of audio mean "played"
    from pipecat.transports.base_output import BaseOutputTransport
except ImportError:  # pragma: no cover - every version with observers has it
    BaseOutputTransport = ()  # type: ignore[assignment,misc]

try:
    from pipecat import __version__ as PIPECAT_VERSION
except ImportError:  # pragma: no cover
    from importlib.metadata import version as _version

    PIPECAT_VERSION = _version("pipecat-ai")

DIALECT = "pipecat"

# how far apart, at most, the two pushes of a frame sent both ways are (versions without
# broadcast_sibling_id push one copy right after the other)
COPY_WINDOW_MS = 5

# The frames that matter to turns, by class name (a subclass is logged under its own name,
# e.g. VisionFullResponseStartFrame; see _logged_name).
FRAMES: frozenset[str] = frozenset(
    {
        # pipeline lifecycle
        "StartFrame",
        "EndFrame",
        "CancelFrame",
        # the user
        "VADUserStartedSpeakingFrame",
        "VADUserStoppedSpeakingFrame",
        "UserStartedSpeakingFrame",
        "UserStoppedSpeakingFrame",
        "EmulateUserStartedSpeakingFrame",
        "EmulateUserStoppedSpeakingFrame",
        "TranscriptionFrame",
        "InterimTranscriptionFrame",
        "STTMuteFrame",
        "UserMuteStartedFrame",
        "UserMuteStoppedFrame",
        # interruptions, under every name Pipecat has used
        "InterruptionFrame",
        "StartInterruptionFrame",
        "StopInterruptionFrame",
        "BotInterruptionFrame",
        "InterruptionTaskFrame",
        # the bot
        "LLMFullResponseStartFrame",
        "LLMFullResponseEndFrame",
        "LLMTextFrame",
        "TTSSpeakFrame",
        "TTSStartedFrame",
        "TTSStoppedFrame",
        "TTSTextFrame",
        "TTSAudioRawFrame",
        "BotStartedSpeakingFrame",
        "BotStoppedSpeakingFrame",
        # tools
        "FunctionCallsStartedFrame",
        "FunctionCallInProgressFrame",
        "FunctionCallResultFrame",
        "FunctionCallCancelFrame",
    }
)

# the base classes a logged subclass is named after when its own name is not listed
_BASES = (
    "LLMFullResponseStartFrame",
    "LLMFullResponseEndFrame",
    "TTSAudioRawFrame",
    "TranscriptionFrame",
    "LLMTextFrame",
)


def _logged_name(frame: Any) -> str | None:
    name = type(frame).__name__
    if name in FRAMES:
        return name
    for cls in type(frame).__mro__[1:]:
        if cls.__name__ in _BASES:
            return name
    return None


def _json_safe(value: Any) -> Any:
    """A value as JSON can carry it: containers kept, anything else by its str()."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return str(value)


def _audio_ms(frame: Any) -> float:
    """The duration of 16-bit PCM audio in milliseconds, from its size, rate and channels."""
    rate = getattr(frame, "sample_rate", 0) or 0
    channels = getattr(frame, "num_channels", 1) or 1
    if rate <= 0:
        return 0.0
    return round(len(frame.audio) * 1000.0 / (2 * channels * rate), 3)


def _uninterruptible(frame: Any) -> bool:
    """Whether an interruption leaves this frame alone (``interruptible`` since 1.11, the
    ``UninterruptibleFrame`` mixin since 0.0.98)."""
    if getattr(frame, "interruptible", True) is False:
        return True
    return any(c.__name__ == "UninterruptibleFrame" for c in type(frame).__mro__)


def frame_fields(name: str, frame: Any, pushed_by_output: bool) -> dict[str, Any]:
    """The fields of a logged frame that matter to turns."""
    f: dict[str, Any] = {}
    if name == "StartFrame":
        # a field of StartFrame until 1.0 (read from the instance: 1.8+ warns on deprecated
        # reads of other fields)
        if "allow_interruptions" in vars(frame):
            f["allow_interruptions"] = vars(frame)["allow_interruptions"]
    elif name == "CancelFrame":
        reason = getattr(frame, "reason", None)
        if reason is not None:
            f["reason"] = _json_safe(reason)
    elif name in ("VADUserStartedSpeakingFrame",):
        if hasattr(frame, "start_secs"):
            f["start_secs"] = frame.start_secs
    elif name in ("VADUserStoppedSpeakingFrame",):
        if hasattr(frame, "stop_secs"):
            f["stop_secs"] = frame.stop_secs
    elif name in ("TranscriptionFrame", "InterimTranscriptionFrame"):
        f["text"] = frame.text
        f["final"] = name == "TranscriptionFrame"
        if getattr(frame, "user_id", ""):
            f["user_id"] = frame.user_id
    elif name == "STTMuteFrame":
        f["mute"] = frame.mute
    elif name == "TTSAudioRawFrame" or hasattr(frame, "audio") and "Audio" in name:
        f["ms"] = _audio_ms(frame)
        f["sample_rate"] = frame.sample_rate
        f["channels"] = frame.num_channels
        f["played"] = pushed_by_output
        if getattr(frame, "context_id", None):
            f["context_id"] = frame.context_id
    elif name in ("LLMTextFrame", "TTSTextFrame", "TTSSpeakFrame") or hasattr(frame, "text"):
        f["text"] = frame.text
        if name == "TTSTextFrame" and getattr(frame, "context_id", None):
            f["context_id"] = frame.context_id
    elif name in ("TTSStartedFrame", "TTSStoppedFrame"):
        if getattr(frame, "context_id", None):
            f["context_id"] = frame.context_id
    elif name == "FunctionCallsStartedFrame":
        f["calls"] = [
            {"tool_call_id": c.tool_call_id, "function_name": c.function_name}
            for c in frame.function_calls
        ]
    elif name in ("FunctionCallInProgressFrame", "FunctionCallResultFrame", "FunctionCallCancelFrame"):
        f["tool_call_id"] = frame.tool_call_id
        f["function_name"] = frame.function_name
        if name == "FunctionCallInProgressFrame":
            f["cancel_on_interruption"] = getattr(frame, "cancel_on_interruption", None)
            f["arguments"] = _json_safe(frame.arguments)
        elif name == "FunctionCallResultFrame":
            f["result"] = _json_safe(frame.result)
            f["run_llm"] = getattr(frame, "run_llm", None)
            props = getattr(frame, "properties", None)
            f["is_final"] = getattr(props, "is_final", True) if props is not None else True
            if getattr(frame, "error", None):
                f["error"] = frame.error
        else:
            if hasattr(frame, "run_llm"):
                f["run_llm"] = frame.run_llm
    if _uninterruptible(frame) and name not in ("EndFrame", "StartFrame", "CancelFrame"):
        f["uninterruptible"] = True
    return f


class TurnfenceObserver(BaseObserver):
    """Writes one JSON line per frame that matters to turns (see the module docstring).

    Args:
        out: a path to write to, an open text file, or None to keep the lines in ``lines``
            only.
        options: what the pipeline was built with (``allow_interruptions`` and the rest),
            written into the meta line.
        meta: more keys of the meta line (``session_key``; a test corpus's own under ``fixture``).
        sink: called with each line's object as it is logged (the meta line excluded).
    """

    def __init__(
        self,
        out: str | IO[str] | None = None,
        *,
        options: dict[str, Any] | None = None,
        meta: dict[str, Any] | None = None,
        sink: Callable[[dict[str, Any]], None] | None = None,
        **kwargs: Any,
    ):
        try:  # 1.12+: be told of first pushes only
            super().__init__(observe_every_push=False, **kwargs)
        except TypeError:
            super().__init__(**kwargs)
        self.lines: list[dict[str, Any]] = []
        self._sink = sink
        self._seen: set[int] = set()
        self._t0: int | None = None
        # versions without broadcast_sibling_id: the last line per (src, frame), unpaired
        self._unpaired: dict[tuple[str, str], dict[str, Any]] = {}
        self._own_file = isinstance(out, str)
        self._fh: IO[str] | None = open(out, "w") if isinstance(out, str) else out
        self.meta: dict[str, Any] = {
            "dialect": DIALECT,
            "version": PIPECAT_VERSION,
            "options": dict(options or {}),
        }
        self.meta.update(meta or {})
        if self._fh is not None:
            self._fh.write(json.dumps({"meta": self.meta}) + "\n")
            self._fh.flush()

    async def on_push_frame(self, data: FramePushed):
        frame = data.frame
        if frame.id in self._seen:
            return
        sibling = getattr(frame, "broadcast_sibling_id", None)
        if sibling is not None and sibling in self._seen:
            self._seen.add(frame.id)  # the other half of a broadcast already logged
            return
        name = _logged_name(frame)
        if name is None:
            return
        self._seen.add(frame.id)
        src = getattr(data, "source", None) or getattr(data, "src", None)
        dst = getattr(data, "destination", None) or getattr(data, "dst", None)
        if self._t0 is None:
            self._t0 = data.timestamp
        direction = getattr(data.direction, "name", str(data.direction))
        line: dict[str, Any] = {
            "t_ms": round((data.timestamp - self._t0) / 1_000_000),
            "frame": name,
            "id": frame.id,
            "src": getattr(src, "name", str(src)),
            "dst": getattr(dst, "name", str(dst)),
            "dir": "down" if direction.upper().startswith("DOWN") else "up",
        }
        if sibling is not None:
            line["broadcast"] = True
        pushed_by_output = bool(BaseOutputTransport) and isinstance(src, BaseOutputTransport)
        line.update(frame_fields(name, frame, pushed_by_output))
        if not hasattr(frame, "broadcast_sibling_id") and self._is_copy(line):
            return
        self.lines.append(line)
        if self._sink is not None:
            self._sink(line)
        if self._fh is not None:
            self._fh.write(json.dumps(line) + "\n")

    def _is_copy(self, line: dict[str, Any]) -> bool:
        """Whether ``line`` is the second copy of a frame its processor sent both ways."""
        key = (line["src"], line["frame"])
        prev = self._unpaired.get(key)
        same = {k: v for k, v in line.items() if k not in ("t_ms", "id", "dst", "dir")}
        if (
            prev is not None
            and prev["dir"] != line["dir"]
            and line["t_ms"] - prev["t_ms"] <= COPY_WINDOW_MS
            and {k: v for k, v in prev.items() if k not in ("t_ms", "id", "dst", "dir")} == same
        ):
            del self._unpaired[key]
            return True
        self._unpaired[key] = line
        return False

    def close(self) -> None:
        """Flush the file (and close it if the observer opened it)."""
        if self._fh is not None:
            self._fh.flush()
            if self._own_file:
                self._fh.close()
            self._fh = None
