"""The scripted timelines the harness plays, one per scenario.

    python3 interop/openai-realtime/script.py        # print the scenario names (no packages needed)

A scenario has two halves that meet on the websocket:

- the **server's** half: the replies the scripted Realtime server gives, in the order it creates
  responses (``replies``), each a list of outputs (spoken audio, function calls) streamed at a
  stated pace; the server's other behaviour is fixed (``server.py``) and reacts to what the
  client sends;
- the **app's** half: what the user and the app do, and when (``actions``): the user speaks into
  the microphone, the app sends a typed message, presses stop (``session.interrupt()``), asks
  for an out-of-band response, retries a refused ``response.create``.

Times are milliseconds from the session's start (the moment the app opens the websocket). Every
timed thing lands on a grid: the app's audio device runs 20 ms periods at 0, 20, 40 ms..., and
the server sends its timed events (audio deltas) 10 ms off that grid, so that nothing the server
does on its own clock races a period of the player. What reacts to an event (the server to a
client event, the SDK to a server event) happens within a millisecond or two of it, far from the
next period. A user action tied to the player ("when the user has heard 1000 ms of the first
reply") is decided in the player's period that reaches that position: the barge-in falls at the
same place in the audio on every run, whatever the scheduling jitter.

Nothing here imports the SDK or the openai package.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

TICK_MS = 20
"""The audio device's period: the player consumes, and tells the playback tracker about, 20 ms
at a time."""

DELTA_MS = 100
"""Audio per server delta: 100 ms of PCM16 24 kHz mono, 4800 bytes."""


# -- the server's replies --------------------------------------------------------------------


@dataclass
class Say:
    """An assistant message spoken as ``ms`` of audio, with ``text`` as its transcript (one word
    per audio delta, in the order the words come)."""

    text: str
    ms: int


@dataclass
class Call:
    """A function call: its arguments stream in ``chunks`` deltas, then the item is done."""

    name: str
    arguments: dict[str, Any]
    chunks: int = 2


@dataclass
class Reply:
    """What the server's model produces for one response, and at what pace."""

    outputs: list[Say | Call]
    pace_ms: int = 80
    """One 100 ms audio delta (or one argument chunk) every ``pace_ms``: 80 is 1.25x real time,
    the server ahead of the player as the API is."""
    first_ms: int = 100
    """From response.created to the first output delta (the model's time to first audio)."""
    done_tail_ms: int = 0
    """Between the last output and response.done: the response's generation is over but its
    done not yet sent (a cancel arriving then finds no active response)."""
    short_ms: int = 0
    """The server's stored item holds this many ms less audio than its deltas carried, as
    pipecat-ai/pipecat#2106 measured (the API's item consistently 85 ms shorter than the bytes
    the client received)."""


# -- the app's actions -------------------------------------------------------------------------


@dataclass
class At:
    """At ``ms`` from the session's start."""

    ms: int


@dataclass
class Heard:
    """When the player has played ``ms`` of the ``n``-th item it played (0-based)."""

    n: int
    ms: int


@dataclass
class AfterError:
    """When the app has seen an ``error`` with this code and the SDK's response that was active
    then has ended (its agent_end), ``delay_ms`` later."""

    code: str
    delay_ms: int = 100


@dataclass
class Action:
    when: At | Heard | AfterError
    do: str
    """``speak`` (the user talks: ``speech_ms`` of voice then ``silence_ms`` of silence into the
    microphone, appended 100 ms at a time), ``text`` (``session.send_message(arg)``),
    ``interrupt`` (``session.interrupt()``, the app's stop button), ``out_of_band`` (a raw
    ``response.create`` with ``response.conversation: "none"`` and ``arg`` as its metadata),
    ``create`` (a raw ``response.create``: the app's retry)."""
    arg: Any = None
    speech_ms: int = 400
    silence_ms: int = 300


# -- planted bugs --------------------------------------------------------------------------------


@dataclass
class Bug:
    """A planted bug: the harness applies ``patch`` (a key of ``patches.PATCHES``), or none when
    the SDK as released shows it."""

    patch: str | None
    invariant: str
    source: str
    line: Callable[[list[dict[str, Any]]], int | None]
    """Index, in the lines written after the meta line, of the line where the bug first shows."""
    patch_text: str = ""
    """The meta line's ``patch`` when there is no patch function (its docstring otherwise)."""


# -- scenarios ---------------------------------------------------------------------------------


VAD_ON = {
    "type": "server_vad",
    "threshold": 0.5,
    "prefix_padding_ms": 300,
    "silence_duration_ms": 200,
    "create_response": True,
    "interrupt_response": True,
}
VAD_NO_INTERRUPT = {**VAD_ON, "interrupt_response": False}


@dataclass
class Scenario:
    name: str
    story: str
    source: str
    replies: list[Reply]
    actions: list[Action]
    end_ms: int
    """The app closes the session then; everything must be idle by then."""
    turn_detection: dict[str, Any] | None = field(default_factory=lambda: dict(VAD_ON))
    tools: dict[str, tuple[int, str]] = field(default_factory=dict)
    """Function tools: name -> (how long it runs, in ms; what it returns)."""
    bug: Bug | None = None


STORY = (
    "Once upon a time a curious little robot lived by the sea and counted the waves "
    "every morning until the tide went out"
)


# -- line predicates (over the written lines, meta line excluded) --------------------------------


def _ev(line: dict[str, Any]) -> dict[str, Any]:
    return line.get("event", {})


def _is(line: dict[str, Any], direction: str, kind: str) -> bool:
    return line.get("dir") == direction and _ev(line).get("type") == kind


def first_speech_without_truncate(lines: list[dict[str, Any]]) -> int | None:
    """The first ``input_audio_buffer.speech_started`` that came while the app still had audio
    of an item to play (an item started and neither finished nor cleared before the speech) and
    after which the client never sent a ``conversation.item.truncate``: the moment the item was
    due to be cut to what was heard."""
    playing: set[str] = set()
    ended: dict[str, bool] = {}
    for i, line in enumerate(lines):
        e = _ev(line)
        if line.get("dir") == "app":
            item = e.get("item_id")
            if e.get("type") == "playback.started":
                playing.add(item)
            elif e.get("type") == "playback.cleared":
                playing.discard(item)
            elif e.get("type") == "playback.played" and e.get("final"):
                playing.discard(item)
        if _is(line, "server", "input_audio_buffer.speech_started") and playing:
            later = any(_is(x, "client", "conversation.item.truncate") for x in lines[i + 1 :])
            if not later:
                return i
    return None


def first_truncate_off_the_player(lines: list[dict[str, Any]]) -> int | None:
    """The first ``conversation.item.truncate`` whose ``audio_end_ms`` is not the position the
    player stopped that item at (the ``playback.cleared`` of the same interruption: the next
    one naming the item, before or after the truncate)."""
    for i, line in enumerate(lines):
        if not _is(line, "client", "conversation.item.truncate"):
            continue
        item = _ev(line).get("item_id")
        cleared = [
            _ev(x)
            for x in lines
            if _is(x, "app", "playback.cleared") and _ev(x).get("item_id") == item
        ]
        if cleared and cleared[0].get("audio_end_ms") != _ev(line).get("audio_end_ms"):
            return i
    return None


def first_play_after_clear(lines: list[dict[str, Any]]) -> int | None:
    """The first ``playback.played`` that advances an item's position after that item's audio
    was cleared: audio of an interrupted (and cancelled) response reaching the speaker."""
    cleared: dict[str, int] = {}
    for i, line in enumerate(lines):
        e = _ev(line)
        if line.get("dir") != "app":
            continue
        item = e.get("item_id")
        if e.get("type") == "playback.cleared":
            cleared[item] = e.get("audio_end_ms", 0)
        elif e.get("type") == "playback.played" and item in cleared:
            return i
    return None


def first_overlapping_start(lines: list[dict[str, Any]]) -> int | None:
    """The first ``playback.started`` of a response's item while an item of another response
    is still playing (started, not finished, not cleared): two responses heard at once."""
    playing: dict[str, str] = {}  # item -> response
    for i, line in enumerate(lines):
        e = _ev(line)
        if line.get("dir") != "app":
            continue
        item, resp = e.get("item_id"), e.get("response_id")
        if e.get("type") == "playback.started":
            if any(r != resp for r in playing.values()):
                return i
            playing[item] = resp
        elif e.get("type") == "playback.cleared" or (
            e.get("type") == "playback.played" and e.get("final")
        ):
            playing.pop(item, None)
    return None


def first_tool_output_after_cancelled_done(lines: list[dict[str, Any]]) -> int | None:
    """The first client ``conversation.item.create`` of a ``function_call_output`` whose call was
    made by a response that had already ended ``cancelled`` (its ``response.done`` received
    before the output was sent)."""
    call_response: dict[str, str] = {}
    cancelled: set[str] = set()
    for i, line in enumerate(lines):
        e = _ev(line)
        if _is(line, "server", "response.function_call_arguments.delta"):
            call_response[e["call_id"]] = e["response_id"]
        elif _is(line, "server", "response.done"):
            if e["response"].get("status") == "cancelled":
                cancelled.add(e["response"]["id"])
        elif _is(line, "client", "conversation.item.create"):
            item = e.get("item", {})
            if item.get("type") == "function_call_output":
                if call_response.get(item.get("call_id")) in cancelled:
                    return i
    return None


# -- the scenarios -------------------------------------------------------------------------------

SCENARIOS: list[Scenario] = []


def scenario(sc: Scenario) -> Scenario:
    SCENARIOS.append(sc)
    return sc


scenario(
    Scenario(
        name="plain_reply",
        story="the app sends a typed question; the reply (2.0 s of audio, streamed at 1.25x real time) plays to its end",
        source="OpenAI Realtime API: response.create, response.output_audio.delta, response.done",
        replies=[Reply([Say("Paris is the capital of France and its largest city by far", 2000)])],
        actions=[Action(At(200), "text", "What is the capital of France?")],
        end_ms=3000,
    )
)


def by_name(name: str) -> Scenario:
    for sc in SCENARIOS:
        if sc.name == name:
            return sc
    raise KeyError(f"no scenario {name!r}; there are: {', '.join(s.name for s in SCENARIOS)}")


if __name__ == "__main__":
    for _sc in SCENARIOS:
        print(_sc.name)
