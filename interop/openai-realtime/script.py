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
timed thing lands on a grid: the app's audio device runs 40 ms periods at 0, 40, 80 ms..., and
the server sends its timed events (audio deltas) 20 ms off that grid, so that nothing the server
does on its own clock races a period of the player. What reacts to an event (the server to a
client event, the SDK to a server event) happens within a millisecond or two of it, far from the
next period. A user action tied to the player ("when the user has heard 1000 ms of the first
reply") is decided in the player's period that reaches that position: the barge-in falls at the
same place in the audio on every run, whatever the scheduling jitter.

Nothing here imports the SDK or the openai package.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

TICK_MS = 40
"""The audio device's period: the player consumes, and tells the playback tracker about, 40 ms
at a time, and the microphone delivers 40 ms at a time (the SDK demo's CHUNK_LENGTH_S)."""

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
    in_flight: int = 0
    """When the user starts speaking and the server does not cancel on its own
    (``interrupt_response`` off), this many of the response's next deltas were already on their
    way: they go out before the server reads the client's next event (its truncate and cancel)."""
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
    microphone, appended 40 ms at a time), ``text`` (``session.send_message(arg)``),
    ``interrupt`` (``session.interrupt()``, the app's stop button), ``out_of_band`` (a raw
    ``response.create`` with ``response.conversation: "none"`` and ``arg`` as its metadata),
    ``create`` (a raw ``response.create``: the app's retry)."""
    arg: Any = None
    speech_ms: int = 400
    silence_ms: int = 280


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
    """Function tools: name -> (how long it runs, in ms; what it returns). A tool counts its
    time from the grid point whose event made the SDK call it (``tool_called_on``,
    ``harness.build_tool``); each duration here puts its return 20 ms off the device's periods
    and clear of the server's deltas."""
    tool_called_on: int = TICK_MS // 2
    """Where on the 40 ms grid the event that makes the SDK call a tool falls: 20 (a server
    event: the function call's ``response.output_item.done``) or 0 (a device period: speech
    whose cancellation closes the call)."""
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


class Playback:
    """What the app's player was doing, line by line: an item is playing from its
    ``playback.started`` until a ``playback.played`` reaches all the audio the SDK received for it
    after its ``response.output_audio.done``, or until a ``playback.cleared`` (which drops the
    whole queue)."""

    def __init__(self) -> None:
        self.received: dict[str, int] = {}
        self.done: set[str] = set()
        self.playing: dict[str, str | None] = {}  # item -> response

    def feed(self, line: dict[str, Any]) -> None:
        e = _ev(line)
        kind, item = e.get("type"), e.get("item_id")
        if line.get("dir") == "server":
            if kind == "response.output_audio.delta":
                self.received[item] = self.received.get(item, 0) + len(base64.b64decode(e["delta"])) // 48
            elif kind == "response.output_audio.done":
                self.done.add(item)
        elif line.get("dir") == "app":
            if kind == "playback.started":
                self.playing[item] = e.get("response_id")
            elif kind == "playback.played":
                if item in self.done and e.get("audio_end_ms") == self.received.get(item):
                    self.playing.pop(item, None)
            elif kind == "playback.cleared":
                self.playing.clear()


def first_speech_without_truncate(lines: list[dict[str, Any]]) -> int | None:
    """The first ``input_audio_buffer.speech_started`` that came while the app's player had an
    item playing (``Playback``) and after which the client never sent a
    ``conversation.item.truncate``: the moment the item was due to be cut to what was heard."""
    pb = Playback()
    for i, line in enumerate(lines):
        pb.feed(line)
        if _is(line, "server", "input_audio_buffer.speech_started") and pb.playing:
            if not any(_is(x, "client", "conversation.item.truncate") for x in lines[i + 1 :]):
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
    """The first ``playback.started`` of an item of one response while an item of another
    response is still playing (``Playback``): two responses heard at once."""
    pb = Playback()
    for i, line in enumerate(lines):
        if _is(line, "app", "playback.started"):
            resp = _ev(line).get("response_id")
            if any(r != resp for r in pb.playing.values()):
                return i
        pb.feed(line)
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


# The story the barge-in scenarios interrupt: 3.0 s of audio at 1.25x real time (one 100 ms delta
# every 80 ms). The app's question goes at 200 ms; the reply's first delta comes at 340 ms, its
# second at 420 ms, and the player, which waits for 200 ms of audio, starts it in the period at
# 440 ms. "Heard 1000 ms" is then the period at 1400 ms, 20 ms after the delta of 1380 ms, 60 ms
# before the next and 40 ms before the next period: the server has sent 1400 ms of the reply, 400
# ms of it still queued.
LONG = Reply([Say(STORY, 3000)])
ANSWER = Reply([Say("Sure, what would you like to know instead", 1000)])
QUESTION = Action(At(200), "text", "Tell me a story about a robot.")
BARGE_IN = Action(Heard(0, 1000), "speak", "Wait, tell me about the sea instead.")


def barge_in(name: str, story: str, source: str, **kw: Any) -> Scenario:
    return Scenario(
        name=name,
        story=story,
        source=source,
        replies=kw.pop("replies", [LONG, ANSWER]),
        actions=kw.pop("actions", [QUESTION, BARGE_IN]),
        end_ms=kw.pop("end_ms", 3600),
        **kw,
    )


scenario(
    barge_in(
        "vad_barge_in",
        "server VAD with interrupt_response hears the user 1000 ms into a 3 s reply: the server cancels "
        "the response (turn_detected), the SDK tells the app to stop and truncates the item to what "
        "the player reports played; the user's turn is answered",
        "OpenAI Realtime API: audio.input.turn_detection.interrupt_response, input_audio_buffer.speech_started, "
        "conversation.item.truncate; the SDK's speech_started handling (openai_realtime.py)",
    )
)

scenario(
    barge_in(
        "barge_in_server_does_not_interrupt",
        "server VAD with interrupt_response false hears the user 1000 ms into a 3 s reply: the server "
        "goes on; the SDK tells the app to stop, truncates the item to what was played and cancels "
        "the response itself",
        "the SDK's speech_started handling: response.cancel when the session's turn detection does "
        "not interrupt responses",
        turn_detection=dict(VAD_NO_INTERRUPT),
    )
)

scenario(
    Scenario(
        name="cancel_crosses_done",
        story="a push-to-talk app (no turn detection): the user presses stop 600 ms into a 1 s reply "
        "whose generation is over but whose response.done is not yet sent; the SDK truncates and "
        "cancels, the server sends the done (completed) and answers the cancel "
        "response_cancel_not_active",
        source="OpenAI Realtime API: response.cancel with no response in progress is an error "
        "(response_cancel_not_active), the session unaffected",
        turn_detection=None,
        replies=[Reply([Say("Paris is the capital of France", 1000)], pace_ms=40, done_tail_ms=800)],
        actions=[Action(At(200), "text", "What is the capital of France?"), Action(Heard(0, 600), "interrupt")],
        end_ms=1900,
    )
)

scenario(
    Scenario(
        name="create_refused_then_retried",
        story="the user's spoken question is committed by server VAD, which starts a response, in the "
        "same moment as the app sends a typed message: the SDK's response.create crosses the "
        "server's response.created and is refused (conversation_already_has_active_response); the "
        "app retries once the spoken question's answer is done",
        source="openai/openai-agents-python#1466 (conversation_already_has_active_response from "
        "send_message while a response is in progress)",
        replies=[
            Reply([Say("It is about seven hundred kilometres", 1200)]),
            Reply([Say("It is nine in the evening there", 1000)]),
        ],
        # the user's 400 ms of voice goes out in 40 ms appends from 200 ms, then silence: the
        # fifth silent append, at 760 ms, completes the 200 ms of silence server VAD waits for,
        # and the app sends its typed message in the same period, right after that append
        actions=[
            Action(At(200), "speak", "How far is Paris from Berlin?"),
            Action(At(760), "text", "And what time is it there?"),
            Action(AfterError("conversation_already_has_active_response"), "create"),
        ],
        end_ms=3600,
    )
)

scenario(
    Scenario(
        name="barge_in_after_done",
        story="a 2 s reply generated at 2.5x real time is done 1.1 s into the session; the user speaks "
        "1200 ms into its playback with 800 ms still queued: the SDK tells the app to stop and "
        "truncates the item to what was played, no response being in progress",
        source="OpenAI Realtime API (generation ends before playback does); the SDK truncates from "
        "its last audio item after response.done",
        replies=[Reply([Say("Paris is the capital of France and its largest city by far", 2000)], pace_ms=40), ANSWER],
        actions=[
            Action(At(200), "text", "What is the capital of France?"),
            Action(Heard(0, 1200), "speak", "Thanks, that is enough."),
        ],
        end_ms=3600,
    )
)

scenario(
    Scenario(
        name="out_of_band_response",
        story="while the main reply streams the app asks for an out-of-band response "
        "(conversation none, metadata): the SDK holds its response.create until the main response "
        "is done; its audio then plays after the main reply's",
        source="OpenAI Realtime API: response.create with response.conversation \"none\" and metadata",
        replies=[
            Reply([Say("Paris is the capital of France and its largest city", 1500)]),
            # its deltas 40 ms off the main reply's when both stream (first_ms 140, not 100)
            Reply([Say("Reminder your meeting starts soon", 800)], first_ms=140),
        ],
        actions=[
            Action(At(200), "text", "What is the capital of France?"),
            Action(At(600), "out_of_band", {"topic": "reminder"}),
        ],
        end_ms=3400,
    )
)

WEATHER = {"get_weather": (320, "sunny, 21 degrees")}

scenario(
    Scenario(
        name="tool_call_answered",
        story="the reply says a short preamble and calls get_weather; the SDK runs the tool (320 ms), "
        "sends its output and a response.create, and the answer is spoken",
        source="OpenAI Realtime API: function calling (response.function_call_arguments.done, "
        "function_call_output, response.create)",
        tools=dict(WEATHER),
        replies=[
            Reply([Say("Let me check the weather", 800), Call("get_weather", {"city": "Paris"})]),
            Reply([Say("It is sunny and twenty one degrees in Paris", 1500)]),
        ],
        actions=[Action(At(200), "text", "What is the weather in Paris?")],
        end_ms=3800,
    )
)

scenario(
    Scenario(
        name="speech_during_tool",
        story="a 1.56 s tool runs after its preamble was played; the user speaks meanwhile and server "
        "VAD answers them; the tool's output is sent while that answer streams and the SDK holds "
        "its response.create until the answer is done",
        source="OpenAI Realtime API: function calling; the SDK runs tools as tasks and queues "
        "response.create behind the response in progress",
        tools={"get_weather": (1560, "sunny, 21 degrees")},
        replies=[
            Reply([Say("Let me check", 600), Call("get_weather", {"city": "Paris"})]),
            Reply([Say("I am still checking the weather for you", 1200)]),
            Reply([Say("It is sunny and twenty one degrees", 1000)]),
        ],
        actions=[
            Action(At(200), "text", "What is the weather in Paris?"),
            Action(At(1400), "speak", "Is it going to rain?", speech_ms=320),
        ],
        end_ms=5000,
    )
)

CUT_CALL = [
    Reply([Say("Let me check that", 600), Call("get_weather", {"city": "Paris"}, chunks=6)]),
    Reply([Say("Sure, go ahead", 600)]),
]
CUT_ACTIONS = [
    Action(At(200), "text", "What is the weather in Paris?"),
    Action(Heard(0, 520), "speak", "Actually, never mind."),
]

scenario(
    Scenario(
        name="tool_call_cut_by_barge_in",
        story="the user speaks 520 ms into a 600 ms preamble while the reply's function call streams "
        "its arguments: the server cancels the response and closes the call incomplete; the SDK "
        "runs no tool",
        source="OpenAI Realtime API: a cancelled response's items end incomplete; the SDK runs a "
        "function call only when its output item is done completed",
        tools=dict(WEATHER),
        replies=CUT_CALL,
        actions=CUT_ACTIONS,
        end_ms=2800,
    )
)

scenario(
    Scenario(
        name="truncate_past_end_refused",
        story="the server's stored item is 85 ms shorter than the 1 s of audio its deltas carried; "
        "the user speaks 960 ms into it: the SDK truncates to the 960 ms played, which the server "
        "refuses (invalid_value: already shorter)",
        source="pipecat-ai/pipecat#2106 and #1963 (\"Audio content of 6100ms is already shorter than "
        "6185ms\", code invalid_value; the item 85 ms shorter than the bytes received)",
        replies=[Reply([Say("Paris is the capital of France", 1000)], pace_ms=40, short_ms=85), Reply([Say("Of course", 600)])],
        actions=[
            Action(At(200), "text", "What is the capital of France?"),
            Action(Heard(0, 960), "speak", "Sorry, one more question."),
        ],
        end_ms=3000,
    )
)


# -- planted bugs ----------------------------------------------------------------------------------

scenario(
    barge_in(
        "bug_no_truncate_after_barge_in",
        "the vad_barge_in run with a model that sends no truncate on speech_started: the app stops "
        "playing at 1000 ms but the server keeps the whole 1400 ms it sent as heard",
        "",
        bug=Bug(
            "no_truncate_on_speech_started",
            "truncated_to_heard",
            "openai/openai-agents-python#2009 (0.4.2: no conversation.item.truncate on a VAD "
            "interruption)",
            first_speech_without_truncate,
        ),
    )
)

scenario(
    barge_in(
        "bug_truncate_from_wall_clock",
        "the vad_barge_in run with a model that reads the played position from its wall clock: the "
        "item is truncated to the time since its first delta arrived, about 90 ms more than the "
        "player played (its jitter buffer held the audio)",
        "",
        bug=Bug(
            "truncate_from_wall_clock",
            "truncated_to_heard",
            "pipecat-ai/pipecat#931 and openclaw/openclaw#138592 (truncation from elapsed time, not "
            "audio played); the SDK's RealtimeModelConfig.playback_tracker documentation",
            first_truncate_off_the_player,
        ),
    )
)

scenario(
    barge_in(
        "late_audio_after_cancel",
        "interrupt_response false, and one more delta of the reply was on its way when the user "
        "spoke: the SDK truncates and cancels, then hands that delta to the app, whose player plays "
        "it after it was told to stop",
        "",
        turn_detection=dict(VAD_NO_INTERRUPT),
        replies=[Reply([Say(STORY, 3000)], in_flight=1), ANSWER],
        bug=Bug(
            None,
            "no_late_delivery",
            "the SDK as released: openai-agents-python drops late audio only for response-scoped "
            "interrupts (tests/realtime/test_openai_realtime.py, "
            "test_response_scoped_interrupt_suppresses_late_source_audio_until_done), not after "
            "speech_started or session.interrupt()",
            first_play_after_clear,
            patch_text="none: openai-agents 0.24.0 as released",
        ),
    )
)

scenario(
    Scenario(
        name="bug_noop_interrupt_after_done",
        story="the barge_in_after_done run with a model that forgets an item's audio at "
        "response.output_audio.done: the user's speech interrupts nothing, the queued 800 ms play on "
        "and nothing is truncated",
        source="",
        replies=[Reply([Say("Paris is the capital of France and its largest city by far", 2000)], pace_ms=40), ANSWER],
        actions=[
            Action(At(200), "text", "What is the capital of France?"),
            Action(Heard(0, 1200), "speak", "Thanks, that is enough."),
        ],
        end_ms=3800,
        bug=Bug(
            "forget_audio_at_audio_done",
            "truncated_to_heard",
            "openai/openai-agents-js#1173 (interrupt() silently does nothing once all the audio was "
            "sent: the transport's state is reset at response.output_audio.done)",
            first_speech_without_truncate,
        ),
    )
)

scenario(
    Scenario(
        name="bug_two_responses_at_once",
        story="the out_of_band_response run with a model that sends the out-of-band response.create "
        "at once: both responses stream together and the player interleaves their audio",
        source="",
        replies=[
            Reply([Say("Paris is the capital of France and its largest city", 1500)]),
            # its deltas 40 ms off the main reply's when both stream (first_ms 140, not 100)
            Reply([Say("Reminder your meeting starts soon", 800)], first_ms=140),
        ],
        actions=[
            Action(At(200), "text", "What is the capital of France?"),
            Action(At(600), "out_of_band", {"topic": "reminder"}),
        ],
        end_ms=3400,
        bug=Bug(
            "out_of_band_create_at_once",
            "single_running_turn",
            "HybridAIOne/hybridclaw#1502 (an out-of-band response and the conversation's interleaved "
            "in one playback queue)",
            first_overlapping_start,
        ),
    )
)

scenario(
    Scenario(
        name="bug_tool_result_after_cancel",
        story="the tool_call_cut_by_barge_in run with a model that runs a function call the "
        "cancelled response left incomplete: the tool's output and a response.create are sent "
        "after the response.done that answered the cancel",
        source="",
        tools={"get_weather": (300, "sunny, 21 degrees")},
        tool_called_on=0,
        replies=CUT_CALL + [Reply([Say("It is sunny", 600)])],
        actions=CUT_ACTIONS,
        end_ms=3200,
        bug=Bug(
            "run_incomplete_function_calls",
            "tool_call_settled",
            "ducks/claux#18 (function_call_output sent for a call its cancelled response never "
            "completed)",
            first_tool_output_after_cancelled_done,
        ),
    )
)


if __name__ == "__main__":
    for _sc in SCENARIOS:
        print(_sc.name)
