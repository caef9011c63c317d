"""What a generated Pipecat session is, and the hypothesis strategies that draw one.

A ``Session`` is plain data (JSON in, JSON out): the pipeline's configuration (user turn start
and stop strategies, interruptions on or off, mute strategies, tools with their
``cancel_on_interruption``, timeouts and how their work ends) and a timeline (the user's
utterances, the LLM's replies in the order it is asked, the application's own frames, and how
the session ends). Times are integer milliseconds from the pipeline's start, so a shrunk
session reads plainly and every draw is exact.

The space is what real deployments use, version by version (``Features``): a 0.0.84 pipeline
has no per-tool ``timeout_secs``, no ``function_call_timeout_secs``, no uninterruptible
``TTSSpeakFrame`` and no user turn strategies; its interruptions are
``PipelineParams(allow_interruptions)`` and its mute is an ``STTMuteFilter``.

Nothing here imports pipecat: the parent process draws, a child per session runs.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from hypothesis import strategies as st

# a small vocabulary: the words only need to be words (the TTS speaks one 0.3 s frame a word)
WORDS = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike "
    "november oscar papa quebec romeo sierra tango uniform victor whiskey yankee zulu"
).split()


@dataclass(frozen=True)
class Features:
    """What the pinned Pipecat version offers (from the harness's version table)."""

    v1: bool
    """1.x: user turn strategies and user mute strategies in the user aggregator."""
    tool_timeout: bool
    """register_function(timeout_secs=...), 0.0.105."""
    global_timeout: bool
    """LLMService(function_call_timeout_secs=...), 0.0.101."""
    uninterruptible_speak: bool
    """TTSSpeakFrame.interruptible, 1.11.0."""

    @staticmethod
    def of(version: tuple[int, ...]) -> Features:
        return Features(
            v1=version >= (1, 0, 0),
            tool_timeout=version >= (0, 0, 105),
            global_timeout=version >= (0, 0, 101),
            uninterruptible_speak=version >= (1, 11, 0),
        )


@dataclass
class ToolSpec:
    name: str
    cancel_on_interruption: bool
    timeout_ms: int | None
    duration_ms: int
    ends: str
    """How the call's work ends: ``result`` (the handler returns its result), ``late`` (the
    work runs in a task the handler only awaits, so it still reports after a cancel),
    ``never`` (the handler waits for ever: only a timeout, an interruption or the end stops
    it), ``silent`` (the handler returns without calling the result callback), ``progress``
    (an intermediate result, ``is_final=False``, halfway, then the final one; 1.x)."""


@dataclass
class Utterance:
    start_ms: int
    dur_ms: int
    words: int
    """0: noise, the STT transcribes nothing."""
    stt_delay_ms: int
    interim: bool


@dataclass
class ReplySpec:
    sentences: list[int]
    """Words per sentence (empty: a reply of no text)."""
    word_gap_ms: int
    ttft_ms: int
    calls: list[int]
    """Indexes into the session's tools: the calls the reply makes after its text (two or
    more: parallel calls)."""


@dataclass
class Action:
    at_ms: int
    kind: str
    """``speak`` (a TTSSpeakFrame), ``speak_uninterruptible`` (1.11+: interruptible=False),
    ``interrupt`` (the application queues an interruption frame)."""
    words: int = 0


@dataclass
class Session:
    interruptions: bool
    start: list[str]
    """1.x user turn start strategies: ``vad``, ``transcription``, ``min_words:N``."""
    start_interrupts: list[bool]
    """Each start strategy's enable_interruptions (1.x); 0.0.84 has one pipeline-wide flag."""
    speech_timeout_ms: int
    mute: list[str]
    """1.x: ``always``, ``first_speech``, ``function_call``, ``until_first_bot_complete``;
    0.0.84: the STTMuteFilter strategies of the same names."""
    function_call_timeout_ms: int | None
    tools: list[ToolSpec]
    utterances: list[Utterance]
    replies: list[ReplySpec]
    """Answers to the user's turns, in the order the LLM is asked; the last repeats."""
    tool_replies: list[ReplySpec]
    """Answers after a tool's result or cancellation, in order; the last repeats."""
    actions: list[Action]
    ending: str
    """``end``: EndFrame at ``end_ms``; ``cancel``: the worker is cancelled (CancelFrame) at
    ``end_ms``; ``drain``: EndFrame ``end_ms`` after the last scripted moment."""
    end_ms: int
    patch: str | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @staticmethod
    def from_json(text: str) -> Session:
        d = json.loads(text)
        d["tools"] = [ToolSpec(**t) for t in d["tools"]]
        d["utterances"] = [Utterance(**u) for u in d["utterances"]]
        d["replies"] = [ReplySpec(**r) for r in d["replies"]]
        d["tool_replies"] = [ReplySpec(**r) for r in d["tool_replies"]]
        d["actions"] = [Action(**a) for a in d["actions"]]
        return Session(**d)

    def last_scripted_ms(self) -> int:
        ends = [u.start_ms + u.dur_ms + 1000 for u in self.utterances]
        ends += [a.at_ms for a in self.actions]
        return max(ends, default=0)

    def describe(self) -> str:
        """The session as a readable scenario (what a shrunk counterexample prints)."""
        out = []
        cfg = [f"interruptions {'on' if self.interruptions else 'off'}"]
        if self.start:
            cfg.append(
                "start strategies "
                + ", ".join(
                    f"{s}{'' if i else ' (no interruption)'}"
                    for s, i in zip(self.start, self.start_interrupts, strict=True)
                )
            )
            cfg.append(f"speech timeout {self.speech_timeout_ms} ms")
        if self.mute:
            cfg.append("mute " + ", ".join(self.mute))
        if self.function_call_timeout_ms is not None:
            cfg.append(f"function_call_timeout {self.function_call_timeout_ms} ms")
        out.append("; ".join(cfg))
        for i, t in enumerate(self.tools):
            out.append(
                f"tool {i} {t.name}: cancel_on_interruption={t.cancel_on_interruption}, "
                f"timeout={t.timeout_ms} ms, runs {t.duration_ms} ms, ends {t.ends}"
            )
        for u in self.utterances:
            what = f"{u.words} words" if u.words else "noise (no transcript)"
            out.append(
                f"user speaks {u.start_ms}-{u.start_ms + u.dur_ms} ms: {what}, final transcript "
                f"+{u.stt_delay_ms} ms{', interim' if u.interim else ''}"
            )
        for i, r in enumerate(self.replies):
            out.append(f"reply {i}: {_reply(r)}")
        for i, r in enumerate(self.tool_replies):
            out.append(f"after a tool {i}: {_reply(r)}")
        for a in self.actions:
            out.append(f"app at {a.at_ms} ms: {a.kind}{f' ({a.words} words)' if a.words else ''}")
        if self.ending == "drain":
            out.append(f"EndFrame {self.end_ms} ms after the last scripted moment")
        else:
            out.append(f"{'EndFrame' if self.ending == 'end' else 'cancel'} at {self.end_ms} ms")
        if self.patch:
            out.append(f"patch {self.patch}")
        return "\n".join(out)


def _reply(r: ReplySpec) -> str:
    text = "+".join(str(n) for n in r.sentences) or "no text"
    calls = f", then calls tools {r.calls}" if r.calls else ""
    return f"sentences of {text} words, {r.word_gap_ms} ms apart after {r.ttft_ms} ms{calls}"


# -- strategies ------------------------------------------------------------------------------


def _reply_spec(n_tools: int, with_calls: bool) -> st.SearchStrategy[ReplySpec]:
    """A reply that speaks (up to four sentences), or, where the session has tools, one that
    says a few words at most and then calls: the LLM calls only when its text is done, so a
    call after a long text would seldom meet the user's next words."""
    speaks = st.builds(
        ReplySpec,
        sentences=st.lists(st.integers(1, 12), max_size=4),
        word_gap_ms=st.sampled_from([5, 50, 200]),
        ttft_ms=st.integers(50, 1500),
        calls=st.just([]),
    )
    if not (with_calls and n_tools):
        return speaks
    calls = st.builds(
        ReplySpec,
        sentences=st.lists(st.integers(1, 6), max_size=1),
        word_gap_ms=st.sampled_from([5, 50]),
        ttft_ms=st.integers(50, 800),
        calls=st.lists(st.integers(0, n_tools - 1), min_size=1, max_size=3),
    )
    return st.one_of(speaks, calls)


@st.composite
def sessions(draw: Any, feat: Features, patches: list[str] | None = None) -> Session:
    interruptions = draw(st.booleans().map(lambda off: not off))  # shrinks to "on"
    start: list[str] = []
    start_interrupts: list[bool] = []
    speech_timeout_ms = 600
    if feat.v1:
        start = draw(
            st.lists(
                st.sampled_from(["vad", "transcription", "min_words:2", "min_words:3"]),
                min_size=1,
                max_size=2,
                unique_by=lambda s: s.split(":")[0],
            ).map(lambda xs: xs if xs != [] else ["vad"])
        )
        if interruptions:
            start_interrupts = [True] * len(start)
        else:
            # at least one strategy without interruptions; the others drawn
            start_interrupts = draw(
                st.lists(st.booleans(), min_size=len(start), max_size=len(start)).filter(
                    lambda xs: not all(xs)
                )
            )
        speech_timeout_ms = draw(st.sampled_from([600, 200, 1200]))
    mute = draw(
        st.lists(
            st.sampled_from(["always", "first_speech", "function_call", "until_first_bot_complete"]),
            max_size=2,
            unique=True,
        ).filter(lambda m: not {"first_speech", "until_first_bot_complete"} <= set(m))
    )
    function_call_timeout_ms = None
    if feat.global_timeout:
        function_call_timeout_ms = draw(st.one_of(st.none(), st.integers(500, 8000)))
    n_tools = draw(st.integers(0, 2))
    tools = []
    for i in range(n_tools):
        tools.append(
            ToolSpec(
                name=f"tool_{i}",
                cancel_on_interruption=draw(st.booleans().map(lambda b: not b)),
                timeout_ms=draw(st.one_of(st.none(), st.integers(300, 6000)))
                if feat.tool_timeout
                else None,
                duration_ms=draw(st.one_of(st.integers(0, 8000), st.integers(2000, 6000))),
                # a result is the common case: drawn twice as often as each other ending
                ends=draw(st.sampled_from(["result", "late", "never", "silent", "progress", "result"])),
            )
        )
    # the user's utterances, one after the other
    n_utt = draw(st.integers(1, 4))
    utterances = []
    t = draw(st.integers(100, 2000))
    for _ in range(n_utt):
        dur = draw(st.integers(300, 3000))
        utterances.append(
            Utterance(
                start_ms=t,
                dur_ms=dur,
                words=draw(st.integers(0, 8).map(lambda n: (n + 3) % 9)),  # shrinks to 3
                stt_delay_ms=draw(st.integers(50, 800)),
                interim=draw(st.booleans()),
            )
        )
        # a short gap often lands while the bot answers, calls a tool or still streams
        t += dur + draw(st.one_of(st.integers(100, 3000), st.integers(3000, 9000)))
    replies = draw(st.lists(_reply_spec(n_tools, True), min_size=1, max_size=4))
    tool_replies = draw(st.lists(_reply_spec(n_tools, False), min_size=1, max_size=2))
    kinds = ["speak", "interrupt"] + (["speak_uninterruptible"] if feat.uninterruptible_speak else [])
    actions = draw(
        st.lists(
            st.builds(
                Action,
                at_ms=st.integers(0, 20000),
                kind=st.sampled_from(kinds),
                words=st.integers(1, 12),
            ),
            max_size=2,
        ).map(lambda xs: sorted(xs, key=lambda a: a.at_ms))
    )
    for a in actions:
        if a.kind == "interrupt":
            a.words = 0
    # half the sessions drain (what comes late, a call's result, still comes), the rest end
    # or are cancelled at a drawn moment
    ending = draw(st.sampled_from(["drain", "end", "drain", "cancel"]))
    if ending == "drain":
        end_ms = draw(st.integers(0, 15000).map(lambda x: 15000 - x))  # shrinks to a long tail
    else:
        end_ms = draw(st.integers(0, 25000))
    patch = draw(st.sampled_from(patches)) if patches else None
    # One session in eight is a barge-in over a running call: the first reply only calls, the
    # call takes 3 to 6 s, and the user speaks again while it runs. Drawn evenly, that
    # interleaving comes a few times in a thousand sessions, and a call's cancellation or its
    # result after an interruption (and the patches that act there) would seldom be judged.
    if draw(st.integers(0, 7)) == 7:
        interruptions = True
        start_interrupts = [True] * len(start)
        mute = [m for m in mute if m != "function_call"]
        function_call_timeout_ms = None
        tool = ToolSpec(
            name="tool_0",
            cancel_on_interruption=draw(st.booleans()),
            timeout_ms=None,
            duration_ms=draw(st.integers(3000, 6000)),
            ends=draw(st.sampled_from(["result", "late", "progress"])),
        )
        tools = [tool, *tools[1:]]
        replies = [ReplySpec(sentences=[], word_gap_ms=5, ttft_ms=draw(st.integers(50, 500)), calls=[0]), *replies[1:]]
        first = utterances[0]
        barge = first.start_ms + first.dur_ms + draw(st.integers(1200, 2500))
        utterances = [first, Utterance(barge, draw(st.integers(300, 1500)), draw(st.integers(1, 8)), 200, False)]
        ending = "drain"
        end_ms = max(end_ms, 8000)
    return Session(
        interruptions=interruptions,
        start=start,
        start_interrupts=start_interrupts,
        speech_timeout_ms=speech_timeout_ms,
        mute=mute,
        function_call_timeout_ms=function_call_timeout_ms,
        tools=tools,
        utterances=utterances,
        replies=replies,
        tool_replies=tool_replies,
        actions=actions,
        ending=ending,
        end_ms=end_ms,
        patch=patch,
    )


def sentence_text(words: int, seed: int) -> str:
    """A sentence of ``words`` words from the vocabulary, capitalized, ending in a period."""
    ws = [WORDS[(seed * 7 + i * 3) % len(WORDS)] for i in range(words)]
    return (" ".join(ws).capitalize() + ".") if ws else ""

