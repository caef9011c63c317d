"""What a generated LiveKit Agents session is, and the hypothesis strategy that draws one.

A ``Drawn`` session is plain data (no livekit import): the session's options, the user's
utterances (when, how long, what the STT makes of them), the LLM's replies to each user turn
and to each ``generate_reply``, the tools those replies call, the application's own calls at
their moments, and when the session is closed. ``describe()`` prints it as a readable
scenario; ``generate.py`` runs it through the stack's real code.

The space is the one deployments use: every option of the interruption machinery the session
exposes, every turn-detection mode that runs offline (``vad``, ``stt``, ``manual``),
preemptive generation on and off, the AEC warm-up off or on, user speech of any length at any
moment (noise, speech the VAD misses but the STT transcribes, transcripts early, late, empty,
interim only), tools several at once, slow (past the 5 s interruption timeout), failing
(``ToolError``) or raising, with and without a reply after them, and the app's calls
(``interrupt``, ``say`` with and without ``allow_interruptions``, ``generate_reply``,
``update_agent``, ``commit_user_turn``, ``clear_user_turn``) at random moments. Times are
multiples of 10 ms (the session's own quantum is the 20 ms audio frame).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

WORDS = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november "
    "oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu"
).split()

TRANSCRIPT_KINDS = ("final", "final_only", "noise", "empty", "interim_only", "vad_missed")


@dataclass
class DUtterance:
    start: float
    duration: float
    kind: str
    """final (interim then final), final_only, noise (no transcript), empty (a final ""),
    interim_only (an interim, never a final), vad_missed (the VAD hears nothing, the STT
    transcribes it)."""
    words: int
    stt_delay: float
    interim_after: float


@dataclass
class DTool:
    name: str
    duration: float
    outcome: str  # ok, error (raises ToolError), raise (raises RuntimeError)


@dataclass
class DReply:
    words: int  # 0: a reply that produces no text
    ttft: float
    tools: list[DTool] = field(default_factory=list)
    after_words: int = 0  # the reply to the tools' results (0: none is spoken)
    after_ttft: float = 0.2


@dataclass
class DAction:
    at: float
    kind: str  # interrupt, say, generate_reply, update_agent, commit_user_turn, clear_user_turn
    allow_interruptions: bool | None = None
    words: int = 0


@dataclass
class Drawn:
    options: dict[str, Any]
    utterances: list[DUtterance]
    replies: list[DReply]  # replies[i]: the LLM's answer to user utterance i
    gen_replies: list[DReply]  # gen_replies[j]: the answer to the j-th generate_reply
    actions: list[DAction]
    end: float
    seconds_per_word: float

    def describe(self) -> str:
        out = [f"options: {self.options}", f"tts: {self.seconds_per_word} s per word"]
        for i, u in enumerate(self.utterances):
            out.append(
                f"user {i}: {u.start:.2f}-{u.start + u.duration:.2f} s, {u.kind}, {u.words} words, "
                f"final {u.stt_delay:.2f} s after, interim {u.interim_after:.2f} s in"
            )
            out.append(f"  reply {i}: {_reply(self.replies[i])}")
        for a in self.actions:
            extra = ""
            if a.kind in ("say", "generate_reply"):
                extra = f" allow_interruptions={a.allow_interruptions} ({a.words} words)"
            out.append(f"app at {a.at:.2f} s: {a.kind}{extra}")
        for j, r in enumerate(self.gen_replies):
            out.append(f"  generate_reply {j}: {_reply(r)}")
        out.append(f"aclose at {self.end:.2f} s")
        return "\n".join(out)


def _reply(r: DReply) -> str:
    s = f"{r.words} words after {r.ttft:.2f} s"
    if r.tools:
        tools = ", ".join(f"{t.name} {t.duration:.1f} s {t.outcome}" for t in r.tools)
        s += f"; tools [{tools}]; then {r.after_words} words after {r.after_ttft:.2f} s"
    return s


def _t(lo: float, hi: float) -> st.SearchStrategy[float]:
    """A time in [lo, hi], a multiple of 10 ms; shrinks towards lo."""
    return st.integers(int(round(lo * 100)), int(round(hi * 100))).map(lambda n: n / 100)


@st.composite
def options(draw: Any) -> dict[str, Any]:
    aec = draw(st.sampled_from([None, None, 3.0, 1.0]))
    return {
        "allow_interruptions": draw(st.booleans().map(lambda b: not b)),  # shrinks to True
        "min_interruption_duration": draw(st.sampled_from([0.5, 0.2, 0.3, 1.0, 1.5])),
        "min_interruption_words": draw(st.sampled_from([0, 0, 1, 2, 3])),
        "false_interruption_timeout": draw(st.sampled_from([2.0, 0.5, 1.0, 3.0])),
        "resume_false_interruption": draw(st.booleans().map(lambda b: not b)),
        "turn_detection": draw(st.sampled_from(["vad", "stt", "manual"])),
        "preemptive_generation": draw(st.booleans()),
        "min_endpointing_delay": draw(st.sampled_from([0.5, 0.2, 1.0])),
        "aec_warmup_duration": aec,
    }


@st.composite
def reply(draw: Any, tag: str, tool_names: list[str]) -> DReply:
    words = draw(st.sampled_from([3, 1, 0, 6, 12, 25]))
    ttft = draw(st.sampled_from([0.2, 0.05, 0.5, 1.5, 3.0]))
    n_tools = draw(st.sampled_from([0, 0, 0, 1, 1, 2, 3]))
    tools = []
    for k in range(n_tools):
        name = f"tool_{tag}_{k}"
        tool_names.append(name)
        tools.append(
            DTool(
                name=name,
                duration=draw(st.sampled_from([0.3, 1.0, 3.0, 0.05, 6.0])),
                outcome=draw(st.sampled_from(["ok", "ok", "error", "raise"])),
            )
        )
    after = draw(st.sampled_from([4, 0, 1, 10])) if tools else 0
    after_ttft = draw(st.sampled_from([0.2, 1.0])) if tools else 0.2
    return DReply(words=words, ttft=ttft, tools=tools, after_words=after, after_ttft=after_ttft)


ACTION_KINDS = (
    "say",
    "interrupt",
    "generate_reply",
    "update_agent",
    "commit_user_turn",
    "clear_user_turn",
)


@st.composite
def sessions(draw: Any) -> Drawn:
    opts = draw(options())
    n_utt = draw(st.integers(0, 5))
    utterances: list[DUtterance] = []
    t = 0.0
    for _ in range(n_utt):
        gap = draw(_t(0.1, 4.0))
        duration = draw(st.sampled_from([0.8, 0.1, 0.2, 0.3, 0.4, 0.6, 1.2, 2.0, 3.5]))
        start = round(t + gap, 2)
        utterances.append(
            DUtterance(
                start=start,
                duration=duration,
                kind=draw(st.sampled_from(TRANSCRIPT_KINDS)),
                words=draw(st.integers(1, 8)),
                stt_delay=draw(st.sampled_from([0.3, 0.05, 0.15, 0.8, 2.0])),
                interim_after=draw(st.sampled_from([0.2, 0.05, 0.5])),
            )
        )
        t = start + duration
    tool_names: list[str] = []
    replies = [draw(reply(f"u{i}", tool_names)) for i in range(n_utt)]
    n_act = draw(st.integers(0, 4))
    horizon = max(t, 2.0) + 3.0
    actions: list[DAction] = []
    for _ in range(n_act):
        kind = draw(st.sampled_from(ACTION_KINDS))
        at = draw(_t(0.0, horizon))
        allow = draw(st.sampled_from([None, False, True])) if kind in ("say", "generate_reply") else None
        actions.append(DAction(at=at, kind=kind, allow_interruptions=allow,
                               words=draw(st.sampled_from([3, 8, 15]))))
    actions.sort(key=lambda a: a.at)
    gen_replies = [
        draw(reply(f"g{j}", tool_names))
        for j, a in enumerate(a for a in actions if a.kind == "generate_reply")
    ]
    end = round(horizon + draw(_t(-3.0, 8.0)), 2)
    end = max(end, 0.5)
    return Drawn(
        options=opts,
        utterances=utterances,
        replies=replies,
        gen_replies=gen_replies,
        actions=actions,
        end=end,
        seconds_per_word=draw(st.sampled_from([0.3, 0.15, 0.5])),
    )
