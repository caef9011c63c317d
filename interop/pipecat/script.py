"""The scripted timelines the harness plays, one per scenario.

Times are seconds from the moment the pipeline started (the worker's ``on_pipeline_started``).
The gaps between scripted moments are hundreds of milliseconds wide so that the order of the
frames does not depend on scheduling jitter.

Nothing here imports pipecat: ``python3 script.py`` prints the scenario names one a line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

# what the scripted VAD waits before it reports speech started / stopped (Pipecat's VADParams
# defaults since 0.0.80-something: start_secs 0.2, stop_secs 0.2)
VAD_START_SECS = 0.2
VAD_STOP_SECS = 0.2


@dataclass
class Utterance:
    """The user speaks from ``start`` to ``end``.

    The input transport pushes ``VADUserStartedSpeakingFrame`` at ``start + VAD_START_SECS``
    and ``VADUserStoppedSpeakingFrame`` at ``end + VAD_STOP_SECS``; the STT sends the interim
    transcript ``interim_after`` after the start and the final one ``stt_delay`` after the
    end (None: noise, no transcript)."""

    start: float
    end: float
    transcript: str | None
    stt_delay: float = 0.3
    interim: str | None = None
    interim_after: float = 0.5


@dataclass
class ToolCall:
    name: str
    call_id: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass
class Reply:
    """What the scripted LLM streams: ``text`` word by word (``word_gap`` apart, after
    ``ttft``), then ``tool_calls``."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    ttft: float = 0.2
    word_gap: float = 0.005


@dataclass
class Tool:
    """A function (one string argument, ``query``) that takes ``duration`` seconds."""

    name: str
    description: str
    duration: float
    result: Any = None
    cancel_on_interruption: bool = True
    timeout_secs: float | None = None
    outlives_cancel: bool = False
    """The work runs in a task of its own that a cancelled handler leaves behind: it still
    reports its result (through the call's result callback) when it is done."""


@dataclass
class Action:
    """Something the application does at ``at``: ``speak`` queues a ``TTSSpeakFrame``."""

    at: float
    kind: str
    text: str = ""
    interruptible: bool = True


@dataclass
class Bug:
    """A planted bug: the harness applies ``patch`` (a key of ``patches.PATCHES``); None: the
    bug is the pinned Pipecat's own (see ``Scenario.native``)."""

    patch: str | None
    invariant: str
    source: str
    line: Callable[[list[dict[str, Any]]], int | None]
    """Index, in the frame lines the observer wrote, of the line that decides the bug."""


@dataclass
class Scenario:
    name: str
    story: str
    utterances: list[Utterance]
    replies: dict[str, Reply]
    end: float
    """An EndFrame is queued at this time; the pipeline must be idle by then."""
    tools: list[Tool] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    interruptions: bool = True
    """False: the user turn start strategies are built with enable_interruptions=False."""
    mute: str | None = None
    """``always``: mute the user while the bot speaks (1.x: the user aggregator's
    AlwaysUserMuteStrategy; before 1.0: an STTMuteFilter with STTMuteStrategy.ALWAYS)."""
    function_call_timeout_secs: float | None = None
    seconds_per_word: float = 0.3
    bug: Bug | None = None
    native: list[tuple[tuple[int, ...], tuple[int, ...], Bug]] = field(default_factory=list)
    """``(from, below, bug)``: unpatched Pipecat versions from ``from`` up to ``below`` have
    this bug themselves; on them the scenario is expected rejected."""
    min_version: tuple[int, ...] = ()
    """The oldest Pipecat with what the scenario needs (``needs`` says what); older versions
    skip it."""
    needs: str = ""


SCENARIOS: list[Scenario] = []


def scenario(sc: Scenario) -> Scenario:
    SCENARIOS.append(sc)
    return sc


def by_name(name: str) -> Scenario:
    for sc in SCENARIOS:
        if sc.name == name:
            return sc
    raise KeyError(name)


# A long reply: 40 words, 12 s of audio at 0.3 s a word, in four sentences (the TTS
# synthesizes a sentence at a time). The LLM streams it at 0.2 s a word (a slow, long
# completion, 8 s in all), so that speech over its audio comes while it still generates. The
# user's words over it are timed (VAD at 7.2 and 8.2 s, transcript at 8.4 s) to fall between
# two streamed words, 80 ms after one and 120 ms before the next, and the TTS's latency (0.1 s)
# puts its output halfway between two words: events of independent tasks never race.
STORY = (
    "Once upon a time there was a curious little robot who lived by the sea. "
    "Every morning it walked along the shore and counted the shells. "
    "One day it found a shell that sang a quiet song. "
    "The robot listened all day long."
)

scenario(
    Scenario(
        name="plain_reply",
        story="a question and its answer, played to the end",
        utterances=[Utterance(0.5, 1.5, "What is the capital of France?")],
        replies={"user:What is the capital of France?": Reply("The capital of France is Paris.")},
        end=6.0,
    )
)

scenario(
    Scenario(
        name="interruption",
        story=(
            "the user asks for a long story and talks over it 2 s into its audio, while the "
            "LLM still streams it; the interruption cuts the reply (audio and generation), and "
            "the new turn is answered"
        ),
        utterances=[
            Utterance(0.5, 1.5, "Tell me a long story."),
            Utterance(7.0, 8.0, "Stop, that is enough.", stt_delay=0.4),
        ],
        replies={
            "user:Tell me a long story.": Reply(STORY, word_gap=0.2),
            "user:Stop, that is enough.": Reply("Okay, I will stop."),
        },
        end=13.0,
    )
)

_WEATHER = Tool(
    name="lookup_weather",
    description="Look up the current weather of a city.",
    duration=4.0,
    result={"conditions": "sunny", "temperature_c": 24},
)
_WEATHER_CALL = ToolCall("lookup_weather", "call_weather_paris", {"query": "Paris"})

scenario(
    Scenario(
        name="tool_cancelled_by_interruption",
        story=(
            "the bot says it will check and calls a 4 s tool (cancel_on_interruption, the "
            "default); the user speaks while it runs; the interruption cancels the call "
            "(FunctionCallCancelFrame) and the new turn is answered"
        ),
        utterances=[
            Utterance(0.5, 1.5, "What is the weather in Paris?"),
            Utterance(3.8, 4.6, "Actually, never mind."),
        ],
        replies={
            "user:What is the weather in Paris?": Reply("Let me check.", [_WEATHER_CALL]),
            "after:lookup_weather": Reply("It is sunny in Paris."),
            "user:Actually, never mind.": Reply("No problem."),
        },
        tools=[_WEATHER],
        end=10.0,
    )
)

scenario(
    Scenario(
        name="tool_through_interruption",
        story=(
            "the same 4 s tool registered with cancel_on_interruption=False: the user speaks "
            "while it runs, the interruption leaves the call running, the new turn is answered, "
            "and the result, arriving afterwards, runs the LLM again and is spoken"
        ),
        utterances=[
            Utterance(0.5, 1.5, "What is the weather in Paris?"),
            Utterance(3.8, 4.6, "And tell me a joke."),
        ],
        replies={
            "user:What is the weather in Paris?": Reply("Let me check.", [_WEATHER_CALL]),
            "user:And tell me a joke.": Reply("Why did the robot cross the road?"),
            "after:lookup_weather": Reply("By the way, it is sunny in Paris."),
        },
        tools=[replace(_WEATHER, cancel_on_interruption=False)],
        end=12.0,
    )
)

scenario(
    Scenario(
        name="tool_timeout",
        story=(
            "a 6 s tool registered with timeout_secs=2: the call is cancelled at its deadline "
            "(FunctionCallCancelFrame with run_llm) and the LLM answers the cancellation"
        ),
        utterances=[Utterance(0.5, 1.5, "What is the weather in Paris?")],
        replies={
            "user:What is the weather in Paris?": Reply("Let me check.", [_WEATHER_CALL]),
            "cancelled:lookup_weather": Reply("Sorry, the weather service is not answering."),
        },
        tools=[replace(_WEATHER, duration=6.0, timeout_secs=2.0)],
        end=9.0,
        min_version=(0, 0, 105),
        needs="register_function(timeout_secs=...), 0.0.105",
    )
)

scenario(
    Scenario(
        name="tool_result_after_cancel",
        story=(
            "the interruption cancels a 4 s call whose work outlives its handler; the work "
            "reports its result 1.5 s after the cancel, and Pipecat ignores it (the call is "
            "settled): no result frame, nothing spoken"
        ),
        utterances=[
            Utterance(0.5, 1.5, "What is the weather in Paris?"),
            Utterance(3.8, 4.6, "Actually, never mind."),
        ],
        replies={
            "user:What is the weather in Paris?": Reply("Let me check.", [_WEATHER_CALL]),
            "after:lookup_weather": Reply("It is sunny in Paris."),
            "user:Actually, never mind.": Reply("No problem."),
        },
        tools=[replace(_WEATHER, duration=5.5, outlives_cancel=True)],
        end=11.0,
    )
)

_NOTICE = "Please listen carefully to these important safety instructions before we begin."

scenario(
    Scenario(
        name="uninterruptible_speech",
        story=(
            "the application speaks a notice with TTSSpeakFrame(interruptible=False); the user "
            "talks over it: the interruption is broadcast but the notice plays to its end; the "
            "user's turn is answered afterwards"
        ),
        utterances=[Utterance(1.5, 2.5, "Hello? Can you hear me?")],
        replies={"user:Hello? Can you hear me?": Reply("Yes, I can hear you.")},
        actions=[Action(0.5, "speak", _NOTICE, interruptible=False)],
        end=9.0,
        min_version=(1, 11, 0),
        needs="Frame.interruptible, 1.11.0 (TTSSpeakFrame(interruptible=False))",
    )
)

scenario(
    Scenario(
        name="interruptions_disabled",
        story=(
            "the user turn start strategies are built with enable_interruptions=False (Pipecat's "
            "replacement for PipelineParams(allow_interruptions=False)); the user talks over a "
            "long reply: no interruption, the reply plays to its end, then the turn is answered"
        ),
        utterances=[
            Utterance(0.5, 1.5, "Tell me a long story."),
            Utterance(7.0, 8.0, "Stop, that is enough.", stt_delay=0.4),
        ],
        replies={
            "user:Tell me a long story.": Reply(STORY, word_gap=0.2),
            "user:Stop, that is enough.": Reply("Okay, I will stop."),
        },
        interruptions=False,
        end=23.0,
    )
)

scenario(
    Scenario(
        name="user_muted",
        story=(
            "the user aggregator mutes the user while the bot speaks (AlwaysUserMuteStrategy, "
            "the successor of STTMuteFilter's ALWAYS); the user talks over the reply: their "
            "speech and transcript are dropped, no interruption, the reply plays to its end"
        ),
        utterances=[
            Utterance(0.5, 1.5, "Tell me a long story."),
            Utterance(7.0, 8.0, "Stop, that is enough.", stt_delay=0.4),
        ],
        replies={"user:Tell me a long story.": Reply(STORY, word_gap=0.2)},
        mute="always",
        end=20.0,
    )
)


# -- planted bugs: a correct scenario's timeline with one patch of the package ---------------


def _first(
    lines: list[dict[str, Any]], pred: Callable[[dict[str, Any]], bool], after: int = -1
) -> int | None:
    for i, line in enumerate(lines):
        if i > after and pred(line):
            return i
    return None


LATE_MS = 200


def _muted_at(lines: list[dict[str, Any]]) -> list[bool]:
    """Whether the user is muted at each line: an STTMuteFrame (an STTMuteFilter, before 1.0)
    or the user aggregator's UserMuteStartedFrame / UserMuteStoppedFrame (1.x) says so."""
    out, muted = [], False
    for ln in lines:
        if ln["frame"] == "STTMuteFrame":
            muted = bool(ln["mute"])
        elif ln["frame"] == "UserMuteStartedFrame":
            muted = True
        elif ln["frame"] == "UserMuteStoppedFrame":
            muted = False
        out.append(muted)
    return out


# the interruption frame under both names: StartInterruptionFrame before 0.0.85 (and beside
# InterruptionFrame until 1.0)
INTERRUPTIONS = frozenset({"InterruptionFrame", "StartInterruptionFrame"})


def _played_audio_after_interruption(lines: list[dict[str, Any]]) -> int | None:
    """The first audio chunk the output transport started to play after the interruption that
    cut the bot's speech, before the next LLM response started: audio of the interrupted
    response. (A played chunk is logged when its write returns, at its end; the one being
    written when the interruption came plays out, and its start is before the cut; on a
    loaded machine the interruption can reach the output transport a little late, so a chunk
    counts only when it starts more than LATE_MS after the cut.)"""
    speaking = _first(lines, lambda ln: ln["frame"] == "BotStartedSpeakingFrame")
    if speaking is None:
        return None
    muted = _muted_at(lines)
    cut = _first(lines, lambda ln: ln["frame"] in INTERRUPTIONS, after=speaking)
    while cut is not None and muted[cut]:
        # before 1.0 the input transport makes the interruption and an STTMuteFilter after it
        # drops it while the user is muted: it interrupts nothing
        cut = _first(lines, lambda ln: ln["frame"] in INTERRUPTIONS, after=cut)
    if cut is None:
        return None
    t_cut = lines[cut]["t_ms"]
    for i in range(cut + 1, len(lines)):
        ln = lines[i]
        if ln["frame"] == "LLMFullResponseStartFrame":
            return None
        if (
            ln["frame"] == "TTSAudioRawFrame"
            and ln.get("played")
            and not ln.get("uninterruptible")
            and ln["t_ms"] - ln["ms"] > t_cut + LATE_MS
        ):
            return i
    return None


def _result_of_a_call_the_interruption_should_cancel(lines: list[dict[str, Any]]) -> int | None:
    """The result of a call started with cancel_on_interruption=true before an interruption,
    never cancelled: the interrupted generation's tool ran on and left its result."""
    cancellable: dict[str, int] = {}
    interrupted: set[str] = set()
    cancelled: set[str] = set()
    for i, ln in enumerate(lines):
        f = ln["frame"]
        if f == "FunctionCallInProgressFrame" and ln.get("cancel_on_interruption"):
            cancellable[ln["tool_call_id"]] = i
        elif f in INTERRUPTIONS:
            interrupted |= set(cancellable) - cancelled
        elif f == "FunctionCallCancelFrame":
            cancelled.add(ln["tool_call_id"])
        elif f == "FunctionCallResultFrame":
            tid = ln["tool_call_id"]
            if tid in interrupted and tid not in cancelled:
                return i
    return None


def _result_after_its_cancel(lines: list[dict[str, Any]]) -> int | None:
    """A FunctionCallResultFrame for a call already answered by a FunctionCallCancelFrame."""
    cancelled: set[str] = set()
    for i, ln in enumerate(lines):
        if ln["frame"] == "FunctionCallCancelFrame":
            cancelled.add(ln["tool_call_id"])
        elif ln["frame"] == "FunctionCallResultFrame" and ln["tool_call_id"] in cancelled:
            return i
    return None


# Before 1.8.0 LLMService broadcasts whatever result a call's handler reports, also after the
# call was cancelled (the guard, runner_item.settled, came with pipecat commit 1933578,
# 2026-08-12, first released in 1.8.0): the late result of tool_result_after_cancel is a
# second answer of a call already answered by its cancellation.
by_name("tool_result_after_cancel").native.append(
    (
        (),
        (1, 8, 0),
        Bug(
            patch=None,
            invariant="tool_call_settled",
            source=(
                "Pipecat itself before 1.8.0: LLMService's result callback had no settled guard "
                "(added by pipecat commit 1933578, 2026-08-12)"
            ),
            line=_result_after_its_cancel,
        ),
    )
)


def bug(base: str, name: str, story: str, b: Bug, **kw: Any) -> Scenario:
    return scenario(replace(by_name(base), name=name, story=story, bug=b, native=[], **kw))


bug(
    "interruption",
    "bug_llm_keeps_speaking",
    (
        "the user talks over a long story; the interruption reaches the LLM service but does "
        "not stop its generation, which streams on: the TTS synthesizes the rest of the story "
        "and the output plays it after the interruption"
    ),
    Bug(
        patch="llm_not_interrupted",
        invariant="no_late_delivery",
        source="pipecat-ai/pipecat#950",
        line=_played_audio_after_interruption,
    ),
    replies={
        "user:Tell me a long story.": Reply(STORY, word_gap=0.2),
        "user:Stop, that is enough.": Reply("Okay, I will stop."),
    },
    end=24.0,
)

bug(
    "tool_cancelled_by_interruption",
    "bug_binned_tool_runs",
    (
        "the user speaks while the 4 s call of the interrupted generation runs; the "
        "interruption does not cancel it (no FunctionCallCancelFrame): it runs on, its result "
        "is committed to the context and the LLM speaks it"
    ),
    Bug(
        patch="interruption_keeps_function_calls",
        invariant="cancelled_tool_leaves_nothing",
        source="pipecat-ai/pipecat#4997",
        line=_result_of_a_call_the_interruption_should_cancel,
    ),
    # the result comes 0.6 s after the new turn's answer has played
    tools=[replace(_WEATHER, duration=4.5)],
    end=12.0,
)

bug(
    "tool_result_after_cancel",
    "bug_late_result_spoken",
    (
        "the interruption cancels the call (FunctionCallCancelFrame), but the result its work "
        "reports 1.5 s later is still taken: broadcast, committed over the CANCELLED placeholder, "
        "and the LLM speaks it"
    ),
    Bug(
        patch="late_results_accepted",
        invariant="tool_call_settled",
        source="pipecat-ai/pipecat#4997 (its late-result half; the guard of LLMService's result callback)",
        line=_result_after_its_cancel,
    ),
    end=13.0,
    min_version=(1, 0, 0),
    needs="the settled guard of LLMService's result callback, which the patch removes",
)


if __name__ == "__main__":
    for sc in SCENARIOS:
        print(sc.name)
