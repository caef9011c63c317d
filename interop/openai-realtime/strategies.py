"""What a generated session is, and the hypothesis strategy that draws one.

A ``Session`` is the whole of one drawn run: the app's configuration (turn detection, tools, the
link's latency, when the app hangs up, whether the server speaks WebRTC's
``output_audio_buffer.*`` events), the server's replies and the user's and the app's actions on
a timeline. ``Session.scenario()`` turns it into the ``script.Scenario`` the harness's app and
the scripted server already play, so a generated session runs the same code as the corpus.

Every number is drawn on the grids the corpus uses (40 ms device periods, 100 ms audio deltas,
server paces that are multiples of 20 ms) from the ranges real deployments use, and the draw is
made of small integers and choices so that hypothesis shrinks a failure to a short, readable
session. Nothing here imports the SDK.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import script
from hypothesis import strategies as st

WORDS = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen".split()
TOOLS = ("get_weather", "lookup_order", "book_table")


@dataclass
class Session:
    turn_detection: dict[str, Any] | None
    replies: list[script.Reply]
    actions: list[script.Action]
    tools: dict[str, tuple[int, str]]
    up_ms: int
    """Client to server latency of the link, one way."""
    down_ms: int
    jitter_ms: int
    link_seed: int
    hangup_ms: int | None
    """The app closes the session then, whatever is going on; None: when everything is quiet."""
    webrtc_events: bool
    """The server also sends output_audio_buffer.started / stopped / cleared, as it does on a
    WebRTC connection (where it plays the audio itself); the SDK's websocket client only sees
    them."""
    patch: str | None = None

    def scenario(self, name: str) -> script.Scenario:
        return script.Scenario(
            name=name,
            story="a generated session",
            source="interop/openai-realtime/generate.py",
            replies=[_copy_reply(r) for r in self.replies],
            actions=list(self.actions),
            end_ms=0,
            turn_detection=None if self.turn_detection is None else dict(self.turn_detection),
            tools=dict(self.tools),
            tool_called_on=script.TICK_MS // 2,
        )

    def describe(self) -> str:
        """The session as a readable scenario (what a counterexample file is printed with)."""
        td = self.turn_detection
        out = [
            "turn detection: "
            + (
                "none (push-to-talk)"
                if td is None
                else f"server_vad interrupt_response={td['interrupt_response']} "
                f"create_response={td['create_response']} silence_duration_ms={td['silence_duration_ms']}"
            ),
            f"link: up {self.up_ms} ms, down {self.down_ms} ms, jitter {self.jitter_ms} ms (seed {self.link_seed})",
            f"hang-up: {'when quiet' if self.hangup_ms is None else f'at {self.hangup_ms} ms'}"
            + ("; server sends output_audio_buffer.* (WebRTC)" if self.webrtc_events else ""),
        ]
        if self.patch:
            out.append(f"patch: {self.patch}")
        for name, (ms, result) in self.tools.items():
            out.append(f"tool {name}: returns {result!r} after {ms} ms")
        for i, r in enumerate(self.replies):
            parts = []
            for o in r.outputs:
                if isinstance(o, script.Say):
                    parts.append(f"say {o.ms} ms {o.text!r}")
                else:
                    parts.append(f"call {o.name}({o.arguments}) in {o.chunks} chunks")
            out.append(
                f"reply {i}: {'; '.join(parts) or 'nothing'} (first {r.first_ms} ms, pace {r.pace_ms} ms, "
                f"done tail {r.done_tail_ms} ms, in flight {r.in_flight}, stored {r.short_ms} ms short)"
            )
        for a in self.actions:
            w = a.when
            when = f"at {w.ms} ms" if isinstance(w, script.At) else (
                f"when {w.ms} ms of played item {w.n} was heard" if isinstance(w, script.Heard)
                else f"{w.delay_ms} ms after error {w.code} and the response's end"
            )
            what = a.do
            if a.do == "speak":
                what += f" {a.speech_ms} ms of voice then {a.silence_ms} ms of silence"
            elif a.do == "ptt":
                what += f" (push-to-talk: {a.speech_ms} ms of voice, commit, response.create)"
            elif a.arg is not None:
                what += f" {a.arg!r}"
            out.append(f"{when}: {what}")
        return "\n".join(out)


def _copy_reply(r: script.Reply) -> script.Reply:
    return script.Reply(list(r.outputs), r.pace_ms, r.first_ms, r.done_tail_ms, r.in_flight, r.short_ms)


def grid(lo: int, hi: int, step: int) -> st.SearchStrategy[int]:
    return st.integers(lo // step, hi // step).map(lambda k: k * step)


@st.composite
def says(draw: st.DrawFn) -> script.Say:
    ms = draw(grid(100, 3000, 100))
    n = max(1, ms // 100)
    return script.Say(" ".join(WORDS[k % len(WORDS)] for k in range(n)), ms)


@st.composite
def replies(draw: st.DrawFn, tools: list[str]) -> script.Reply:
    outputs: list[script.Say | script.Call] = []
    kinds = draw(st.lists(st.sampled_from(["say", "call"] if tools else ["say"]), min_size=0, max_size=3))
    for k in kinds:
        if k == "say":
            outputs.append(draw(says()))
        else:
            outputs.append(
                script.Call(draw(st.sampled_from(tools)), {"city": draw(st.sampled_from(["Paris", "Oslo"]))},
                            chunks=draw(st.integers(1, 6)))
            )
    return script.Reply(
        outputs,
        pace_ms=draw(st.sampled_from([80, 40, 60, 100, 120])),
        first_ms=draw(grid(20, 600, 20)),
        done_tail_ms=draw(st.sampled_from([0, 0, 100, 300, 800])),
        in_flight=draw(st.sampled_from([0, 0, 1, 2])),
        short_ms=draw(st.sampled_from([0, 0, 0, 85])),
    )


WHEN_KINDS = ["at", "heard", "heard"]
DOS = ["speak", "text", "interrupt", "speak", "out_of_band", "speak", "create", "text"]


@st.composite
def actions(draw: st.DrawFn, push_to_talk: bool) -> script.Action:
    do = draw(st.sampled_from(DOS))
    if do == "speak" and push_to_talk:
        do = "ptt"
    if draw(st.sampled_from(WHEN_KINDS)) == "at":
        when: Any = script.At(draw(grid(0, 8000, 40)))
    else:
        when = script.Heard(draw(st.sampled_from([0, 0, 0, 1, 2])), draw(grid(0, 1600, 40)))
    a = script.Action(when, do)
    if do in ("speak", "ptt"):
        a.arg = "a user utterance"
        a.speech_ms = draw(grid(120, 1600, 40))
        a.silence_ms = draw(grid(0, 800, 40))
    elif do == "text":
        a.arg = "a typed question"
    elif do == "out_of_band":
        a.arg = {"topic": draw(st.sampled_from(["reminder", "status"]))}
    return a


@st.composite
def sessions(draw: st.DrawFn, patches: list[str] | None = None) -> Session:
    mode = draw(st.sampled_from(["vad", "vad_no_interrupt", "push_to_talk"]))
    if mode == "push_to_talk":
        td = None
    else:
        td = dict(script.VAD_ON)
        td["interrupt_response"] = mode == "vad"
        td["create_response"] = draw(st.sampled_from([True, True, True, False]))
        td["silence_duration_ms"] = draw(st.sampled_from([200, 200, 300, 500]))
    tools = draw(st.lists(st.sampled_from(TOOLS), unique=True, max_size=2))
    tool_ms = {t: (draw(grid(20, 3000, 40)) , f"{t} result") for t in tools}
    n_replies = draw(st.integers(1, 5))
    rs = [draw(replies(tools)) for _ in range(n_replies)]
    acts = draw(st.lists(actions(td is None), min_size=0, max_size=6))
    # most conversations open with the user asking something (typed or spoken), then go on
    opener = draw(st.sampled_from(["text", "speak", "text", "none"]))
    if opener != "none":
        first = script.Action(script.At(draw(grid(0, 1200, 40))), opener, "an opening question")
        if opener == "speak":
            first.do = "ptt" if td is None else "speak"
            first.speech_ms = draw(grid(200, 1200, 40))
            first.silence_ms = draw(grid(200, 800, 40))
        acts.insert(0, first)
        if opener == "speak" and td is not None and draw(st.booleans()):
            # the app also types in the moment server VAD commits the spoken question: its
            # response.create may cross the response the server creates for the speech
            ends = first.when.ms + first.speech_ms + td["silence_duration_ms"]
            acts.insert(1, script.Action(script.At(ends + draw(grid(0, 160, 40))), "text", "a typed follow-up"))
    if not acts:
        acts = [script.Action(script.At(0), "text", "a typed question")]
    # the conversation starts somewhere: a first typed question or utterance unless drawn otherwise
    up = draw(st.sampled_from([0, 0, 10, 25, 50, 90]))
    down = draw(st.sampled_from([0, 0, 10, 25, 50, 90]))
    jitter = draw(st.sampled_from([0, 0, 0, 5, 20]))
    hang = draw(st.one_of(st.none(), st.none(), grid(200, 9000, 20)))
    patch = draw(st.sampled_from(patches)) if patches else None
    if patch:
        td, rs, acts, tool_ms = draw(aimed(patch, td, rs, acts, tool_ms))
    return Session(
        turn_detection=td,
        replies=rs,
        actions=acts,
        tools=tool_ms,
        up_ms=up,
        down_ms=down,
        jitter_ms=jitter,
        link_seed=draw(st.integers(0, 2**16)),
        hangup_ms=hang,
        webrtc_events=draw(st.booleans()),
        patch=patch,
    )


BARGE_IN_PATCHES = {
    "no_truncate_on_speech_started",
    "truncate_from_wall_clock",
    "truncate_last_received_item",
    "no_cancel_when_server_does_not_interrupt",
    "forget_audio_at_audio_done",
    "run_incomplete_function_calls",
}


@st.composite
def aimed(draw: st.DrawFn, patch: str, td: Any, rs: list[script.Reply], acts: list[script.Action],
          tool_ms: dict[str, tuple[int, str]]) -> tuple[Any, list[script.Reply], list[script.Action], dict[str, Any]]:
    """A session drawn for a planted patch also holds the moment the patch acts on (a barge-in
    into a playing reply, an out-of-band request while a reply streams, a function call cut or
    answered), with the rest of the session drawn as for any other: a patch that never fires
    tests nothing."""
    rs = list(rs)
    acts = [a for a in acts]
    first = rs[0]
    say = script.Say("one two three four five six seven eight", draw(grid(800, 2400, 100)))
    outputs = [say] + [o for o in first.outputs if not isinstance(o, script.Say)][:1]
    if patch in BARGE_IN_PATCHES:
        if td is None:
            td = dict(script.VAD_ON)
        td = dict(td)
    if patch == "no_cancel_when_server_does_not_interrupt":
        td["interrupt_response"] = False
    if patch in ("no_truncate_on_speech_started", "run_incomplete_function_calls", "forget_audio_at_audio_done"):
        td["interrupt_response"] = draw(st.booleans()) if patch != "run_incomplete_function_calls" else True
    pace = first.pace_ms
    if patch == "truncate_last_received_item":
        outputs = [script.Say("one two three", draw(grid(300, 800, 100))), say]
        pace = 40
    if patch == "forget_audio_at_audio_done":
        pace = 40
    if patch in ("run_incomplete_function_calls", "run_tool_on_arguments_done"):
        name = "get_weather"
        tool_ms = {**tool_ms, name: (draw(grid(20, 1200, 40)), f"{name} result")}
        outputs = [script.Say("let me check", draw(grid(300, 800, 100))),
                   script.Call(name, {"city": "Paris"}, chunks=6 if patch == "run_incomplete_function_calls" else draw(st.integers(1, 6)))]
    rs[0] = script.Reply(outputs, pace, first.first_ms, first.done_tail_ms, first.in_flight, first.short_ms)
    if patch == "out_of_band_create_at_once" and len(rs) < 2:
        rs.append(script.Reply([script.Say("a reminder", draw(grid(300, 1200, 100)))], first_ms=draw(grid(20, 300, 20))))
    start = draw(grid(0, 400, 40))
    acts.insert(0, script.Action(script.At(start), "text", "a typed question"))
    if patch in BARGE_IN_PATCHES:
        lo, hi = (0, 700) if patch in ("truncate_last_received_item", "run_incomplete_function_calls") else (100, say.ms - 100)
        heard = script.Action(script.Heard(0, draw(grid(lo, max(lo, hi), 20))), "speak", "a barge-in")
        heard.speech_ms = draw(grid(200, 800, 40))
        heard.silence_ms = draw(grid(200, 600, 40))
        acts.insert(1, heard)
    if patch == "out_of_band_create_at_once":
        acts.insert(1, script.Action(script.At(start + draw(grid(200, 1400, 40))), "out_of_band", {"topic": "reminder"}))
    return td, rs, acts, tool_ms
