"""The scripted timelines the harness plays, one per scenario.

Times are seconds from the moment ``AgentSession.start()`` returned (the agent is listening and
the user's microphone starts). The gaps between scripted moments are hundreds of milliseconds
wide so that the order of what the session emits does not depend on scheduling jitter.

Nothing here imports livekit: the harness turns tool specs into function tools.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any


@dataclass
class Utterance:
    """The user speaks from ``start`` to ``end`` (the VAD hears it)."""

    start: float
    end: float
    transcript: str | None
    """The final transcript, sent ``stt_delay`` after the end; None: noise, no transcript."""
    stt_delay: float = 0.3
    interim: str | None = None
    """An interim transcript, sent ``interim_after`` after the start."""
    interim_after: float = 0.4


@dataclass
class ToolCall:
    name: str
    call_id: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass
class Reply:
    """What the scripted LLM streams: ``text`` word by word, then ``tool_calls``."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    ttft: float = 0.2
    tail: float = 0.3
    """After tool calls, the stream ends (usage chunk) this much later: a tool starts as soon
    as its call arrives, and the LLM's metrics must not race that."""


@dataclass
class Tool:
    """A function tool (one string argument, ``query``) that sleeps ``duration`` seconds."""

    name: str
    description: str
    duration: float
    result: str = ""
    handoff_to: str | None = None
    """Return a new agent of this name (see ``AGENTS``) instead of ``result``."""


@dataclass
class Action:
    """Something the application does at ``at``: ``say`` or ``generate_reply``."""

    at: float
    kind: str
    text: str = ""
    allow_interruptions: bool | None = None


@dataclass
class Bug:
    """A planted bug: the harness applies ``patch`` (a key of ``patches.PATCHES``)."""

    patch: str
    invariant: str
    source: str
    line: Callable[[list[dict[str, Any]]], int | None]
    """Index, in the events the session emitted, of the event that shows the bug."""
    report_shows: bool = True
    """Whether the session report shows it too. Its events are ``model_dump``'s alone: a fact only
    a speech's handle holds (its own ``allow_interruptions``), which the event log states beside
    ``speech_created`` (harness ``_dump``), is not in it, and the rule is not judged there."""


@dataclass
class Scenario:
    name: str
    story: str
    utterances: list[Utterance]
    replies: dict[str, Reply]
    end: float
    """The session is closed at this time; it must be idle by then."""
    options: dict[str, Any] = field(default_factory=dict)
    """Interruption options in LiveKit's legacy flat names (``min_interruption_duration`` …)
    plus ``user_away_timeout`` and ``aec_warmup_duration``; unset ones keep their defaults
    (except ``aec_warmup_duration``: None unless set, see the README)."""
    tools: list[Tool] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    seconds_per_word: float = 0.3
    bug: Bug | None = None
    requires_event: str | None = None
    """Run only on versions whose AgentSession emits this event type."""


# the agent the session starts with, and the ones a tool can hand off to
AGENTS: dict[str, dict[str, str]] = {
    "billing": {
        "class_name": "BillingAgent",
        "instructions": "You handle billing questions.",
        "on_enter": "Greet the caller and offer help with billing.",
    },
}

# A long reply. Speech over it pauses it about 2.64 s into its audio, inside the long word
# "extraordinarily": the transcript synchronizer, which decides how much of an interrupted
# reply's text was heard, paces words by syllables and is then hundreds of milliseconds away
# from its next word either way, so the interrupted text is the same on every run.
STORY = (
    "Once upon a time there was an extraordinarily curious little robot who lived by the sea "
    "and spent every morning counting the waves that came to the shore."
)

WEATHER = Tool(
    name="lookup_weather",
    description="Look up the current weather of a city.",
    duration=1.5,
    result="sunny, 24 degrees",
)


def _first(events: list[dict[str, Any]], pred: Callable[[dict[str, Any]], bool], after: int = -1) -> int | None:  # noqa: E501
    for i, ev in enumerate(events):
        if i > after and pred(ev):
            return i
    return None


def assistant_item(ev: dict[str, Any]) -> bool:
    item = ev.get("item") or {}
    return (
        ev.get("type") == "conversation_item_added"
        and item.get("type") == "message"
        and item.get("role") == "assistant"
    )


SCENARIOS: list[Scenario] = []


def scenario(sc: Scenario) -> Scenario:
    SCENARIOS.append(sc)
    return sc


scenario(
    Scenario(
        name="plain_reply",
        story=(
            "the user asks a question; a fast final transcript (0.15 s) starts a preemptive "
            "reply before the turn is committed; the agent answers in full, nobody talks over it"
        ),
        utterances=[Utterance(0.5, 1.7, "What is the weather like today?", stt_delay=0.15)],
        replies={
            "user:What is the weather like today?": Reply(
                "It is sunny and warm today with a light breeze from the west.", ttft=0.1
            )
        },
        end=8.0,
    )
)

scenario(
    Scenario(
        name="confirmed_interruption",
        story=(
            "the user talks over a long reply for 1.5 s; after 0.5 s the output pauses, the final "
            "transcript confirms the interruption, the reply ends interrupted and the user's new "
            "turn is answered"
        ),
        utterances=[
            Utterance(0.5, 1.5, "Tell me a long story."),
            Utterance(4.5, 6.0, "Wait, I have a question."),
        ],
        replies={
            "user:Tell me a long story.": Reply(STORY),
            "user:Wait, I have a question.": Reply("Sure, what is your question?"),
        },
        end=10.5,
    )
)

scenario(
    Scenario(
        name="false_interruption_resumed",
        story=(
            "a 0.8 s noise over the reply pauses the output after 0.5 s; no transcript comes, "
            "and false_interruption_timeout (2 s) after the VAD declared the noise over the reply "
            "resumes and plays to its end"
        ),
        utterances=[
            Utterance(0.5, 1.5, "Tell me a long story."),
            Utterance(4.5, 5.3, None),
        ],
        replies={
            "user:Tell me a long story.": Reply(STORY),
        },
        end=15.0,
    )
)

scenario(
    Scenario(
        name="false_interruption_no_resume",
        story=(
            "the same 0.8 s noise with resume_false_interruption off: the reply is interrupted "
            "once the noise has lasted 0.5 s, and nothing resumes it"
        ),
        utterances=[
            Utterance(0.5, 1.5, "Tell me a long story."),
            Utterance(4.5, 5.3, None),
        ],
        replies={
            "user:Tell me a long story.": Reply(STORY),
        },
        options={"resume_false_interruption": False},
        end=10.0,
    )
)

scenario(
    Scenario(
        name="short_noise",
        story=(
            "a 0.2 s noise over the reply: with the VAD's 0.25 s closing silence its speech "
            "duration stays under min_interruption_duration (0.5 s); the user state flips to "
            "speaking and back, nothing pauses, the reply plays to its end"
        ),
        utterances=[
            Utterance(0.5, 1.5, "Tell me a long story."),
            Utterance(4.5, 4.7, None),
        ],
        replies={
            "user:Tell me a long story.": Reply(STORY),
        },
        end=12.0,
    )
)

scenario(
    Scenario(
        name="min_interruption_duration_raised",
        story=(
            "min_interruption_duration raised to 1.5 s: a 1.0 s noise over the reply, which "
            "would pause it under the default, pauses nothing and the reply plays to its end"
        ),
        utterances=[
            Utterance(0.5, 1.5, "Tell me a long story."),
            Utterance(4.5, 5.5, None),
        ],
        replies={
            "user:Tell me a long story.": Reply(STORY),
        },
        options={"min_interruption_duration": 1.5},
        end=12.0,
    )
)

scenario(
    Scenario(
        name="tool_through_interruption",
        story=(
            'the agent says it will check and calls a 4 s tool; while the tool runs (the agent '
            "silent, thinking) the user asks something else; the user's turn is committed only when "
            "the tool ends, its result is committed but never spoken, and the user's turn is answered"
        ),
        utterances=[
            Utterance(0.5, 1.5, "What is the weather in Paris?"),
            Utterance(3.9, 4.5, "Also in Berlin."),
        ],
        replies={
            "user:What is the weather in Paris?": Reply(
                "Let me check.",
                [ToolCall("lookup_weather", "call_weather_paris", {"query": "Paris"})],
            ),
            "after:lookup_weather": Reply("It is sunny in Paris."),
            "user:Also in Berlin.": Reply("Berlin is cloudy today."),
        },
        tools=[
            Tool(
                name="lookup_weather",
                description="Look up the current weather of a city.",
                duration=4.0,
                result="sunny, 24 degrees",
            )
        ],
        end=12.0,
    )
)

scenario(
    Scenario(
        name="tool_result_while_user_speaks",
        story=(
            'the agent calls a 3 s tool; the user starts talking while it runs and still talks when '
            "it ends; the tool's result is committed and a reply to it generated, but 1.8.9 never "
            'plays that reply and 1.6.4 starts it once the user stops and the late transcript cuts '
            "it off; the user's turn is answered"
        ),
        utterances=[
            Utterance(0.5, 1.5, "What is the weather in Paris?"),
            Utterance(4.2, 5.8, "Also in Berlin.", stt_delay=0.7),
        ],
        replies={
            "user:What is the weather in Paris?": Reply(
                "Let me check.",
                [ToolCall("lookup_weather", "call_weather_paris", {"query": "Paris"})],
            ),
            # 1.6.4 starts this reply once the user stops and cuts it ~0.45 s in, inside
            # "experiencing" (see STORY)
            "after:lookup_weather": Reply("Paris is experiencing wonderfully sunny weather."),
            "user:Also in Berlin.": Reply("Berlin is cloudy today."),
        },
        tools=[
            Tool(
                name="lookup_weather",
                description="Look up the current weather of a city.",
                duration=3.0,
                result="sunny, 24 degrees",
            )
        ],
        end=12.0,
    )
)

scenario(
    Scenario(
        name="tool_while_speaking_interrupted",
        story=(
            'the preamble of a reply that called a 6 s tool is talked over; the transcript confirms '
            "the interruption and the user's turn is answered while the tool still runs; when it "
            'ends, 1.8.9 commits its result (asking no reply) and 1.6.4 drops it (livekit/agents#3702)'
        ),
        utterances=[
            Utterance(0.5, 1.5, "What is the weather in Paris?"),
            Utterance(3.9, 5.1, "Actually, never mind."),
        ],
        replies={
            "user:What is the weather in Paris?": Reply(
                # the pause lands inside "meteorological" (see STORY)
                "Let me check the international meteorological forecast for Paris, one moment "
                "please.",
                [ToolCall("lookup_weather", "call_weather_paris", {"query": "Paris"})],
            ),
            "after:lookup_weather": Reply("It is sunny in Paris."),
            "user:Actually, never mind.": Reply("No problem."),
        },
        tools=[
            Tool(
                name="lookup_weather",
                description="Look up the current weather of a city.",
                duration=6.0,
                result="sunny, 24 degrees",
            )
        ],
        end=12.0,
    )
)

scenario(
    Scenario(
        name="parallel_tools",
        story=(
            "one LLM response calls two tools at once (1.0 s and 1.5 s); both are answered in "
            "one function_tools_executed, then the agent speaks the answer"
        ),
        utterances=[Utterance(0.5, 1.5, "Weather and time in Paris?")],
        replies={
            "user:Weather and time in Paris?": Reply(
                "",
                [
                    ToolCall("lookup_weather", "call_weather", {"query": "Paris"}),
                    ToolCall("lookup_time", "call_time", {"query": "Paris"}),
                ],
            ),
            "after:lookup_time+lookup_weather": Reply("It is sunny and it is noon in Paris."),
        },
        tools=[
            Tool("lookup_weather", "Look up the current weather of a city.", 1.0, "sunny"),
            Tool("lookup_time", "Look up the local time of a city.", 1.5, "12:00"),
        ],
        end=9.0,
    )
)

scenario(
    Scenario(
        name="interrupted_before_audio",
        story=(
            "the LLM takes 2.5 s to answer; the user speaks again while the agent is still "
            "thinking, before its first audio; that reply is dropped and the new turn answered"
        ),
        utterances=[
            Utterance(0.5, 1.5, "What is the capital of France?"),
            Utterance(2.6, 3.6, "Or rather of Spain?"),
        ],
        replies={
            "user:What is the capital of France?": Reply("The capital of France is Paris.", ttft=2.5),
            "user:Or rather of Spain?": Reply("The capital of Spain is Madrid."),
        },
        end=9.0,
    )
)

scenario(
    Scenario(
        name="uninterruptible_say",
        story=(
            "the application says a notice with allow_interruptions=False; the user talks over "
            "it for 1.5 s; the notice plays through, and the user's audio, withheld from the STT "
            "while it plays, is never transcribed"
        ),
        utterances=[Utterance(1.5, 3.0, "Hello? Can you hear me?")],
        replies={},
        actions=[
            Action(
                0.5,
                "say",
                "Please listen to these extraordinarily important safety instructions before we begin.",
                allow_interruptions=False,
            )
        ],
        end=7.0,
    )
)

scenario(
    Scenario(
        name="user_away",
        story=(
            "user_away_timeout is 2 s: after the reply both sides are silent, the user turns "
            "away 2 s after the agent started listening, then speaks again, is answered, and "
            "turns away again 2 s later"
        ),
        utterances=[
            Utterance(0.5, 1.5, "Hi there."),
            Utterance(8.0, 9.0, "Are you still there?"),
        ],
        replies={
            "user:Hi there.": Reply("Hello! How can I help you today?"),
            "user:Are you still there?": Reply("Yes, I am here."),
        },
        options={"user_away_timeout": 2.0},
        end=14.0,
    )
)

scenario(
    Scenario(
        name="handoff",
        story=(
            "the user asks for billing; the LLM calls a tool that returns a BillingAgent; the "
            "session hands off and the new agent greets the user from its on_enter"
        ),
        utterances=[Utterance(0.5, 1.5, "I have a question about my bill.")],
        replies={
            "user:I have a question about my bill.": Reply(
                "", [ToolCall("transfer_to_billing", "call_transfer", {"query": "bill"})]
            ),
            "instructions:Greet the caller and offer help with billing.": Reply(
                "Hi, this is billing. How can I help with your bill?"
            ),
        },
        tools=[
            Tool(
                name="transfer_to_billing",
                description="Transfer the caller to the billing agent.",
                duration=0.5,
                handoff_to="billing",
            )
        ],
        end=9.0,
    )
)

scenario(
    Scenario(
        name="aec_warmup_default",
        story=(
            "aec_warmup_duration keeps its default (3 s): the user talks over the first 3 s of "
            "the agent's first reply; the speech neither pauses nor interrupts it and is "
            "withheld from the STT, so it is never transcribed"
        ),
        utterances=[
            Utterance(0.5, 1.5, "Tell me a long story."),
            Utterance(3.0, 4.5, "Stop please."),
        ],
        replies={
            "user:Tell me a long story.": Reply(STORY),
        },
        options={"aec_warmup_duration": "default"},
        end=12.0,
    )
)


# -- planted bugs: a correct scenario's timeline with one patch of the package ---------------


def _close(events: list[dict[str, Any]]) -> int | None:
    """The close event: the session ended with the call still unanswered."""
    return _first(events, lambda ev: ev.get("type") == "close")


def _first_past_resume_deadline(timeout: float) -> Callable[[list[dict[str, Any]]], int | None]:
    def find(events: list[dict[str, Any]]) -> int | None:
        """The first event, after the pause, created later than false_interruption_timeout after
        the user stopped speaking: by then the pause should have been decided."""
        pause = _first(
            events,
            lambda ev: ev.get("type") == "agent_state_changed"
            and ev["old_state"] == "speaking"
            and ev["new_state"] == "listening",
        )
        if pause is None:
            return None
        stop = _first(
            events,
            lambda ev: ev.get("type") == "user_state_changed" and ev["new_state"] == "listening",
            after=pause,
        )
        if stop is None:
            return None
        deadline = events[stop]["created_at"] + timeout
        return _first(events, lambda ev: ev.get("created_at", 0) > deadline, after=pause)

    return find


def _first_interrupted_assistant_item(events: list[dict[str, Any]]) -> int | None:
    """The first assistant conversation_item_added marked interrupted."""
    return _first(events, lambda ev: assistant_item(ev) and ev["item"].get("interrupted") is True)


def _second_commit_of_a_reply(events: list[dict[str, Any]]) -> int | None:
    """The first assistant conversation_item_added whose text an earlier one already had."""
    seen: set[str] = set()
    for i, ev in enumerate(events):
        if assistant_item(ev):
            text = " ".join(c for c in ev["item"].get("content", []) if isinstance(c, str))
            if text in seen:
                return i
            seen.add(text)
    return None


def bug(base: str, name: str, story: str, b: Bug, **kw: Any) -> Scenario:
    return scenario(replace(by_name(base), name=name, story=story, bug=b, **kw))


def by_name(name: str) -> Scenario:
    for sc in SCENARIOS:
        if sc.name == name:
            return sc
    raise KeyError(name)


bug(
    "tool_while_speaking_interrupted",
    "bug_tool_result_dropped",
    (
        "the preamble of a reply that called a 6 s tool is interrupted; the tool ends after the "
        "interruption and reports its end (tool_call_ended), but its result is never emitted nor "
        "committed: the call that started is never answered before the session closes"
    ),
    Bug(
        patch="drop_tool_results_after_interruption",
        invariant="tool_call_settled",
        source="livekit/agents#3702",
        line=_close,
    ),
    requires_event="tool_execution_updated",
)

bug(
    "false_interruption_resumed",
    "bug_pause_never_decided",
    (
        "a 0.8 s noise pauses the reply and no transcript comes; when false_interruption_timeout "
        "has passed the session reports agent_false_interruption with resumed false but neither "
        "resumes nor interrupts the reply, which stays paused until the close interrupts it"
    ),
    Bug(
        patch="false_interruption_timer_never_resumes",
        invariant="interruption_decided_once",
        source="livekit/agents#4039",
        line=_first_past_resume_deadline(2.0),
    ),
)

bug(
    "uninterruptible_say",
    "bug_uninterruptible_say_interrupted",
    (
        "the user talks over a say(..., allow_interruptions=False) notice: once the speech has "
        "lasted 0.5 s the notice is cut off (interrupted true), and the user's turn is answered"
    ),
    Bug(
        patch="speech_interrupts_uninterruptible",
        invariant="uninterruptible_output_survives",
        source="livekit/agents#3627",
        line=_first_interrupted_assistant_item,
        report_shows=False,
    ),
    replies={"user:Hello? Can you hear me?": Reply("Yes, I can hear you.")},
    # The say() takes the session's allow_interruptions: the event log states it beside
    # speech_created; the report cannot (its speech_created leaves the handle out).
    options={"allow_interruptions": False},
)

bug(
    "confirmed_interruption",
    "bug_audio_after_interruption",
    (
        "the user talks over a long reply and the transcript confirms the interruption, but the "
        "output is resumed before it is cleared: the interrupted reply plays on for 1.2 s, and "
        "is committed (interrupted, with the words played meanwhile) only then"
    ),
    Bug(
        patch="resume_before_clear",
        invariant="no_late_delivery",
        source="livekit/agents-js#2122",
        line=_first_interrupted_assistant_item,
    ),
)

bug(
    "tool_through_interruption",
    "bug_reply_committed_twice",
    (
        "the preamble before a 4 s tool is committed (interrupted false); the user speaks while "
        "the tool runs, which interrupts the waiting reply; when the tool ends the same preamble "
        "is committed again, under a new id, as interrupted"
    ),
    Bug(
        patch="commit_interrupted_reply_twice",
        invariant="one_terminal_state",
        source="livekit/agents-js#2457 (the shape of livekit/agents#2094)",
        line=_second_commit_of_a_reply,
    ),
)

if __name__ == "__main__":
    # the scenario names, one a line (needs no livekit: ci/interop.sh lists them with python3)
    for sc in SCENARIOS:
        print(sc.name)
