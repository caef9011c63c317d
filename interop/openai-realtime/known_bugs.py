"""Witnesses of the SDK's own bugs: where a documented bug of openai-agents 0.24.0 as released
(BUGS.md, "Found by generated sessions") runs in a generated session, the line where it first
showed, the way a planted patch records its witness.

Every hook here only observes: it wraps a method of the SDK (``OpenAIRealtimeWebSocketModel``,
in ``agents/realtime/openai_realtime.py``) or of the harness's player, calls it unchanged with the
same arguments and returns what it returned, and reads state (the SDK's trackers, the session
the server reported, the player's positions) before and after. What each witness stands for is
the SDK's code path, never what the checker said:

- ``late_delta_after_cancel_played`` (``no_late_delivery``): the SDK interrupted playback (the
  ``input_audio_buffer.speech_started`` branch of ``_handle_ws_event``, or ``_send_interrupt``,
  each emitting ``RealtimeModelAudioInterruptedEvent``) while a response was in progress and that
  response was cancelled (the SDK's ``response.cancel``, or the server's VAD with
  ``interrupt_response`` on); a delta of it arrives later and ``_handle_audio_delta`` hands it to
  the app as audio anyway (its guard, ``_interrupted_audio_response_ids``, holds only
  response-scoped interrupts), and the app plays it (the log's next line of the player for the
  item shows it). Witness: that delta's line.
- ``interrupt_under_server_vad_no_cancel`` (``no_late_delivery``): ``_send_interrupt`` (the
  app's ``session.interrupt()``) emitted the interruption but sent no ``response.cancel``, because
  the session's turn detection has ``interrupt_response`` true (``should_cancel_response``), while
  a response was in progress; a later delta of it is handed to the app and played. Witness: that
  delta's line.
- ``oob_response_outlives_barge_in`` (``single_running_turn``): the speech_started branch sends
  no ``response.cancel`` (``automatic_response_cancellation_enabled``) while an out-of-band
  response (``conversation_id`` none) is in progress (nor does any interruption's unnamed
  ``response.cancel`` end it); a later delta of it is handed to the app while another response
  in progress is sending audio too, and played. Witness: that delta's line.
- ``oob_response_beside_vad_response`` (``single_running_turn``): an out-of-band response the
  SDK created with no response in progress (its sequencer, ``_ResponseCreateSequencer.wait_for_response_create_slot``, holds a
  ``response.create`` only while one is) is still in progress when the server's VAD
  (``create_response``) starts the conversation's response; their deltas arrive interleaved and
  ``_handle_audio_delta`` hands both to the app, which plays them. Witness: the line of a delta
  of one handed to the app while the other, in progress, has sent audio, once played.
- ``queued_item_never_truncated`` / ``barge_in_before_new_item_played``
  (``truncated_to_heard``): an interruption (either path) truncates at most the item the playback
  tracker is playing (``_get_playback_state``); an item whose audio the SDK received since the
  last interruption, of a conversation's response (an out-of-band one adds no item to the
  conversation) that is done or that the interruption ended, and that the player has not
  played to the end is left as it is (an item of a response that streams on,
  such as an out-of-band one no one cancelled, goes on playing). The first
  name when the tracker had a current item (another one), the second when it had none (reset by
  the previous interruption, the new item still in the player's jitter buffer). Witness: the
  ``speech_started`` line, or the line after the app's interrupt (its truncate, if any).
- ``interrupt_before_first_play`` (``truncated_to_heard``): ``session.interrupt()``
  (``_send_interrupt``) while the playback tracker names no item (nothing played yet):
  ``_interrupt_audio_playback`` skips ("Skipping interrupt"), so the app is not told to stop
  (no ``audio_interrupted``) and nothing is truncated, yet the response is cancelled
  (``response.cancel``, turn detection not interrupting): an item of it the SDK had handed the
  app plays on, and the server keeps it whole. Witness: the line after the app's interrupt (its
  cancel), where such an item was received and not played to its end; its late deltas are
  ``late_delta_after_cancel_played``'s.
- ``tracker_restarts`` (``truncated_to_heard``): a ``conversation.item.truncate`` the SDK sends
  names fewer ms than the player has played of that item: ``RealtimePlaybackTracker`` counts an
  item from where it was last reset (``on_interrupted``, at each interruption, or a change of
  item), so an item that plays on after an interruption that did not cancel its response is cut
  short of what was heard (an out-of-band response's item, in no conversation, owes no
  truncation, short or not). Witness: that truncate's line.

``generate.py`` opens a ``Watch`` around each session; the witnesses go to the log's meta as
``known_bugs`` (``interop/corpus.py``), and ``interop/oracle.py`` judges them.
"""

from __future__ import annotations

from typing import Any

RULES = {
    "late_delta_after_cancel_played": "no_late_delivery",
    "interrupt_under_server_vad_no_cancel": "no_late_delivery",
    "oob_response_outlives_barge_in": "single_running_turn",
    "oob_response_beside_vad_response": "single_running_turn",
    "queued_item_never_truncated": "truncated_to_heard",
    "barge_in_before_new_item_played": "truncated_to_heard",
    "interrupt_before_first_play": "truncated_to_heard",
    "tracker_restarts": "truncated_to_heard",
}

CURRENT: Watch | None = None


def _classes() -> list[type]:
    import harness
    from agents.realtime.openai_realtime import OpenAIRealtimeWebSocketModel

    return [OpenAIRealtimeWebSocketModel, harness.Player]


class Watch:
    """One session's witnesses; the hooks are installed on entry and taken back on exit."""

    def __init__(self, box: dict[str, Any]) -> None:
        self.box = box  # box["log"]: the session's harness.Log (set when the app builds it)
        self.found: dict[str, int] = {}
        # id -> {"conv": bool, "done": bool, "alone": bool (out of band, its create sent with no
        # response in progress)}
        self.responses: dict[str, dict[str, Any]] = {}
        self.oob_creates: list[bool] = []  # out-of-band creates sent, not yet answered: alone?
        self.interrupted: dict[str, str] = {}  # response id -> the bug its late audio shows
        self.oob_survivors: set[str] = set()
        self.sounding: set[str] = set()  # responses whose audio has begun to arrive
        self.since: dict[tuple[str, int], None] = {}  # audio items received since an interrupt
        self.tags: dict[int, tuple[bytes, tuple[str, int]]] = {}  # id(audio) -> (audio, witness)
        self.chunks: list[tuple[list[Any], tuple[str, int]]] = []
        self.heard: dict[str, list[tuple[str, int]]] = {}  # item -> witnesses played, not yet logged
        self.sent: list[Any] | None = None
        self.emitted: list[Any] | None = None
        self.player: Any = None
        self.vad_interrupts = False
        self.saved: list[tuple[type, dict[str, Any]]] = []

    # -- the log ------------------------------------------------------------------------------

    def lines(self) -> list[dict[str, Any]]:
        log = self.box.get("log")
        return log.lines if log is not None else []

    def line_of(self, direction: str, pred: Any) -> int:
        """The line (the meta line is 1) of the last logged event of ``direction`` matching."""
        lines = self.lines()
        for i in range(len(lines) - 1, -1, -1):
            if lines[i]["dir"] == direction and pred(lines[i]["event"]):
                return i + 2
        return len(lines) + 1

    def record(self, name: str, line: int) -> None:
        if name not in self.found or line < self.found[name]:
            self.found[name] = line

    def witnesses(self) -> list[dict[str, Any]]:
        return [
            {"name": n, "rule": RULES[n], "line": ln}
            for n, ln in sorted(self.found.items(), key=lambda x: (x[1], x[0]))
        ]

    # -- what the SDK saw ---------------------------------------------------------------------

    def live(self) -> list[str]:
        return [r for r, s in self.responses.items() if not s["done"]]

    def beside(self, oob: str, conv: str) -> bool:
        """``oob`` is an out-of-band response the SDK's sequencer sent with no response in
        progress, and ``conv`` the conversation's response the server started while it ran (its
        VAD's ``create_response``: the sequencer holds only the SDK's own creates)."""
        o, c = self.responses.get(oob), self.responses.get(conv)
        return o is not None and c is not None and not o["conv"] and o["alone"] and c["conv"]

    def interrupted_playback(self, model: Any, tracker_item: Any, line: int, how: str, untold: bool = False) -> None:
        """The SDK emitted an interruption (or, ``untold``, cancelled with none): which
        responses' late audio is a bug, and which received items it left untruncated."""
        truncated = {(e.item_id, e.content_index or 0) for e in self.sent or [] if e.type == "conversation.item.truncate"}
        cancelled = any(e.type == "response.cancel" for e in self.sent or [])
        for rid in self.live():
            if not self.responses[rid]["conv"]:
                # an out-of-band response: neither the server's VAD nor the SDK's unnamed
                # response.cancel (_cancel_response() with no response_id) ends it; it streams on
                self.oob_survivors.add(rid)
            elif (how == "speech" and self.vad_interrupts) or cancelled:
                self.interrupted.setdefault(rid, "late_delta_after_cancel_played")
            elif how == "app":
                self.interrupted.setdefault(rid, "interrupt_under_server_vad_no_cancel")
        # responses this interruption ended (its cancel, the server's VAD) or already done:
        # their items get no more audio, and what the clear dropped of them is never heard
        ended = {r for r, s in self.responses.items() if s["done"]} | set(self.interrupted)
        player = self.player
        for key in list(self.since):
            if key in truncated:
                continue
            state = model._audio_state_tracker.get_state(*key)
            if state is None or player is None or state.response_id not in ended:
                continue
            if not self.responses.get(state.response_id, {}).get("conv", True):
                # an out-of-band response's item is in no conversation: no context keeps what
                # was not heard of it, and nothing is owed a truncation
                continue
            played = player.pos.get(key[0], 0)
            if played + 1 < state.audio_length_ms:
                if untold:
                    name = "interrupt_before_first_play"
                elif tracker_item is not None:
                    name = "queued_item_never_truncated"
                else:
                    name = "barge_in_before_new_item_played"
                self.record(name, line)
        self.since.clear()

    # -- install ------------------------------------------------------------------------------

    def __enter__(self) -> Watch:
        global CURRENT
        CURRENT = self
        self.saved = [(c, dict(vars(c))) for c in _classes()]
        _install(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        global CURRENT
        restore(self.saved)
        CURRENT = None


def restore(saved: list[tuple[type, dict[str, Any]]]) -> None:
    """Each class as `saved` holds it (`(cls, dict(vars(cls)))`): what a hook or a patch added
    removed, what it replaced put back."""
    for cls, before in saved:
        for k in list(vars(cls)):
            if k not in before:
                delattr(cls, k)
        for k, v in before.items():
            if vars(cls).get(k) is not v and not k.startswith("__"):
                setattr(cls, k, v)


def _install(w: Watch) -> None:
    import harness
    from agents.realtime.model_events import RealtimeModelAudioEvent, RealtimeModelAudioInterruptedEvent
    from agents.realtime.openai_realtime import OpenAIRealtimeWebSocketModel as M

    handle, send_interrupt, send_raw, emit = M._handle_ws_event, M._send_interrupt, M._send_raw_message, M._emit_event
    enqueue, tick = harness.Player.enqueue, harness.Player.tick

    def interrupt_response(model: Any) -> bool:
        # the SDK's own test (_send_interrupt, the speech_started branch of _handle_ws_event)
        s = model._created_session
        td = s.audio.input.turn_detection if s is not None and s.audio is not None and s.audio.input is not None else None
        return td is not None and td.interrupt_response is True

    def tracker_item(model: Any) -> Any:
        t = model._playback_tracker
        return t.get_state().get("current_item_id") if t is not None else None

    async def watched_emit(self, event):  # type: ignore[no-untyped-def]
        if w.emitted is not None:
            w.emitted.append(event)
        if isinstance(event, RealtimeModelAudioEvent):
            key = (event.item_id, event.content_index)
            w.since[key] = None
            rid = event.response_id
            eid = getattr(w, "_delta_event_id", None)
            line = w.line_of("server", lambda e: e.get("event_id") == eid) if eid else w.line_of(
                "server", lambda e: e.get("type") == "response.output_audio.delta"
            )
            tag = None
            if rid in w.interrupted:
                tag = (w.interrupted[rid], line)
            elif rid in w.oob_survivors and any(r != rid and r in w.sounding for r in w.live()):
                # its audio and another live response's arriving interleaved: played at once
                tag = ("oob_response_outlives_barge_in", line)
            elif rid in w.responses and any(
                w.beside(rid, r) or w.beside(r, rid) for r in w.live() if r != rid and r in w.sounding
            ):
                tag = ("oob_response_beside_vad_response", line)
            if rid is not None:
                w.sounding.add(rid)
            if tag is not None:
                w.tags[id(event.data)] = (event.data, tag)
        return await emit(self, event)

    async def watched_send_raw(self, event):  # type: ignore[no-untyped-def]
        if w.sent is not None:
            w.sent.append(event)
        if event.type == "response.create" and getattr(getattr(event, "response", None), "conversation", None) == "none":
            w.oob_creates.append(not w.live())
        result = await send_raw(self, event)
        if event.type == "conversation.item.truncate" and w.player is not None and w.sent is not None:
            # the tracker (not yet reset: that comes after the truncate) names this item and
            # counts fewer ms of it than the player played
            t = self._playback_tracker.get_state() if self._playback_tracker is not None else {}
            played = w.player.pos.get(event.item_id, 0)
            # an out-of-band response's item is in no conversation: a truncate of it cuts no
            # context the model keeps, short or not (the server answers it with an error)
            state = self._audio_state_tracker.get_state(event.item_id, event.content_index or 0)
            rid = state.response_id if state is not None else None
            in_conversation = w.responses.get(rid, {}).get("conv", True)
            if in_conversation and t.get("current_item_id") == event.item_id and (t.get("elapsed_ms") or 0) < played and event.audio_end_ms < played:
                w.record("tracker_restarts", w.line_of("client", lambda e: e.get("type") == "conversation.item.truncate"))
        return result

    async def watched_handle(self, event):  # type: ignore[no-untyped-def]
        kind = event.get("type") if isinstance(event, dict) else None
        if kind == "response.created":
            r = event.get("response") or {}
            conv = r.get("conversation_id") is not None
            alone = not conv and bool(w.oob_creates) and w.oob_creates.pop(0)
            w.responses[r.get("id")] = {"conv": conv, "done": False, "alone": alone}
        elif kind == "response.done":
            rid = (event.get("response") or {}).get("id")
            if rid in w.responses:
                w.responses[rid]["done"] = True
            w.sounding.discard(rid)
        if kind == "response.output_audio.delta":
            w._delta_event_id = event.get("event_id")  # type: ignore[attr-defined]
        if kind != "input_audio_buffer.speech_started":
            return await handle(self, event)
        item = tracker_item(self)
        w.vad_interrupts = interrupt_response(self)
        w.sent, w.emitted = [], []
        try:
            result = await handle(self, event)
            if any(isinstance(e, RealtimeModelAudioInterruptedEvent) for e in w.emitted):
                eid = event.get("event_id")
                line = w.line_of("server", lambda e: e.get("event_id") == eid)
                w.interrupted_playback(self, item, line, "speech")
        finally:
            w.sent = w.emitted = None
        return result

    async def watched_interrupt(self, event):  # type: ignore[no-untyped-def]
        if event.playback_only or event.cancel_response_only or event.response_id is not None:
            return await send_interrupt(self, event)
        item = tracker_item(self)
        before = len(w.lines())
        w.sent, w.emitted = [], []
        try:
            result = await send_interrupt(self, event)
        finally:
            sent, emitted = w.sent, w.emitted
            w.sent = w.emitted = None
        told = any(isinstance(e, RealtimeModelAudioInterruptedEvent) for e in emitted or [])
        # with no item in the playback tracker, _interrupt_audio_playback skips ("Skipping
        # interrupt"): no audio_interrupted, no truncate, and the cancel goes out all the same
        untold = not told and item is None and any(e.type == "response.cancel" for e in sent or [])
        if told or untold:
            w.sent = sent
            try:
                w.interrupted_playback(self, item, before + 2, "app", untold=untold)
            finally:
                w.sent = None
        return result

    def watched_enqueue(self, item_id, response_id, content_index, data):  # type: ignore[no-untyped-def]
        w.player = self
        enqueue(self, item_id, response_id, content_index, data)
        tagged = w.tags.pop(id(data), None)
        if tagged is not None and tagged[0] is data and self.queue:
            w.chunks.append((self.queue[-1], tagged[1]))

    def watched_tick(self):  # type: ignore[no-untyped-def]
        w.player = self
        before = {id(c): len(c[3]) for c in self.queue}
        written = len(w.lines())
        tick(self)
        still = {id(c): len(c[3]) for c in self.queue}
        for chunk, tag in list(w.chunks):
            k = id(chunk)
            if k in before and still.get(k, 0) < before[k]:
                # the app played audio the SDK should not have handed it
                w.heard.setdefault(chunk[0], []).append(tag)
                w.chunks = [(c, t) for c, t in w.chunks if c is not chunk]
        # a witness once the log shows that audio played: the player's next line of the item
        # (it writes one at each 100 ms of an item and at its end; 40 ms played and then a
        # hang-up is audio the log never shows)
        for x in w.lines()[written:]:
            e = x["event"]
            if x["dir"] == "app" and e.get("type") in ("playback.started", "playback.played"):
                for name, line in w.heard.pop(e.get("item_id"), []):
                    w.record(name, line)

    M._emit_event = watched_emit
    M._send_raw_message = watched_send_raw
    M._handle_ws_event = watched_handle
    M._send_interrupt = watched_interrupt
    harness.Player.enqueue = watched_enqueue
    harness.Player.tick = watched_tick
