"""Planted bugs: monkeypatches of the installed openai-agents, one per rejected scenario.

``PATCHES`` maps a name to a function that patches the SDK inside the harness process; the
harness calls it before the session starts, only for the scenario whose ``bug.patch`` names it
(each scenario runs in a process of its own). A patch's docstring is the fixture's ``patch``.
BUGS.md gives the public report each one reproduces and why the patch sits where it does.
"""

from __future__ import annotations

from collections.abc import Callable

PATCHES: dict[str, Callable[[], None]] = {}
RULES: dict[str, str] = {}
"""The rule each patch breaks when it fires (the invariant a generated session must show)."""

WITNESS: Callable[[str], None] | None = None
"""Set by the session generator (``generate.py``): a patch calls ``witness`` at the moment it
makes the SDK do something the released SDK would not, ``"last"`` when the line that differs is
the one the SDK is handling (the server event just logged), ``"next"`` when it is the next line
to be written (a client event about to go out). The harness leaves it unset: the corpus records
exactly as before."""


def witness(where: str) -> None:
    if WITNESS is not None:
        WITNESS(where)


def patch(fn: Callable[[], None]) -> Callable[[], None]:
    PATCHES[fn.__name__] = fn
    return fn


TICK_MS = 40
"""The app's device period (``script.TICK_MS``): the player acts on what it is told once a period."""


def _interrupts_responses(model: object) -> bool:
    """The SDK's own test of whether speech ends the response at the server (the speech_started
    branch of ``_handle_ws_event``, ``_send_interrupt``): the session's turn detection has
    ``interrupt_response`` true. Without it the user's speech obliges no one to stop: whether the
    app stops is its own choice, and a log where it plays on breaks no rule."""
    s = getattr(model, "_created_session", None)
    audio = getattr(s, "audio", None)
    inp = getattr(audio, "input", None)
    td = getattr(inp, "turn_detection", None)
    return td is not None and getattr(td, "interrupt_response", None) is True


def _model() -> type:
    from agents.realtime.openai_realtime import OpenAIRealtimeWebSocketModel

    return OpenAIRealtimeWebSocketModel


@patch
def no_truncate_on_speech_started() -> None:
    """On input_audio_buffer.speech_started the model still tells the app to stop playing (audio_interrupted) but sends no conversation.item.truncate, as openai-agents-python 0.4.2 did (openai/openai-agents-python#2009): the server keeps the whole reply as if it had been heard."""  # noqa: E501
    model = _model()
    handle = model._handle_ws_event
    send = model._send_raw_message

    async def patched_handle(self, event):  # type: ignore[no-untyped-def]
        self._interop_in_speech_started = (
            isinstance(event, dict) and event.get("type") == "input_audio_buffer.speech_started"
        )
        try:
            return await handle(self, event)
        finally:
            self._interop_in_speech_started = False

    async def patched_send(self, event):  # type: ignore[no-untyped-def]
        if getattr(self, "_interop_in_speech_started", False) and event.type == "conversation.item.truncate":
            state = self._audio_state_tracker.get_state(event.item_id, event.content_index or 0)
            if state is None or event.audio_end_ms < int(state.audio_length_ms):
                witness("last")  # the speech_started: the item keeps audio nobody heard
            return None
        return await send(self, event)

    model._handle_ws_event = patched_handle
    model._send_raw_message = patched_send


@patch
def truncate_from_wall_clock() -> None:
    """The model ignores the app's RealtimePlaybackTracker and takes the played position from its wall clock since the item's first audio delta arrived (its fallback when no tracker is given), so a barge-in truncates the item to time elapsed, not to audio played: the reply's audio waited in the player's jitter buffer before it played."""  # noqa: E501
    model = _model()
    state = model._get_playback_state
    send = model._send_raw_message

    def patched(self):  # type: ignore[no-untyped-def]
        tracker = self._playback_tracker
        self._interop_played = tracker.get_state() if tracker is not None else None
        self._playback_tracker = None
        try:
            return state(self)
        finally:
            self._playback_tracker = tracker

    async def patched_send(self, event):  # type: ignore[no-untyped-def]
        played = getattr(self, "_interop_played", None)
        if event.type == "conversation.item.truncate" and played is not None:
            elapsed = played.get("elapsed_ms")
            same_item = played.get("current_item_id") == event.item_id
            if not same_item or elapsed is None or int(round(elapsed)) != event.audio_end_ms:
                witness("next")  # this truncate: the wall clock's position, not the player's
        return await send(self, event)

    model._get_playback_state = patched
    model._send_raw_message = patched_send


@patch
def forget_audio_at_audio_done() -> None:
    """When the server sends response.output_audio.done the model forgets the item's audio (its last audio item), as the JS SDK's transport resets its state there (openai/openai-agents-js#1173): a barge-in after the reply was generated, with its audio still queued in the player, finds nothing to interrupt, so the app is never told to stop and no truncate is sent."""  # noqa: E501
    # (Not in the docstring, which is the corpus fixture's `patch`.) Where the app had already
    # interrupted that reply and the SDK did not cancel it (its documented bug
    # interrupt_under_server_vad_no_cancel: session.interrupt() under server VAD that interrupts
    # responses sends no response.cancel), the reply plays on past its stop and the checker finds
    # that (no_late_delivery, each later frame explained by it). The barge-in this patch makes
    # interrupt nothing then comes after the reply's stop, and no truncation is owed of a reply
    # already stopped: the patch's rule is hidden by the SDK's bug, witnessed before it (2 of the
    # 200 patched sessions of seed 1 are missed so).
    model = _model()
    handle = model._handle_ws_event

    async def patched(self, event):  # type: ignore[no-untyped-def]
        kind = event.get("type") if isinstance(event, dict) else None
        forgotten = getattr(self, "_interop_forgotten", None)
        if kind == "input_audio_buffer.speech_started" and forgotten is not None:
            if (
                self._audio_state_tracker.get_last_audio_item() is None
                and self._playback_tracker is not None
                and _interrupts_responses(self)
            ):
                played = self._playback_tracker.get_state()
                state = self._audio_state_tracker.get_state(*forgotten)
                # more left than the player plays in the one period it takes to act on a clear:
                # what it plays within that period it plays whether told to stop or not
                if (
                    played.get("current_item_id") == forgotten[0]
                    and state is not None
                    and (played.get("elapsed_ms") or 0) + TICK_MS < state.audio_length_ms
                ):
                    witness("last")  # the speech that interrupts nothing while the item plays
        await handle(self, event)
        if kind == "response.output_audio.done":
            self._interop_forgotten = self._audio_state_tracker.get_last_audio_item()
            self._audio_state_tracker._last_audio_item = None
        elif kind == "response.output_audio.delta":
            self._interop_forgotten = None

    model._handle_ws_event = patched


@patch
def out_of_band_create_at_once() -> None:
    """An out-of-band response.create (response.conversation "none") is sent at once, not queued behind the response in progress, so the server streams both responses together and the app's one playback queue interleaves their audio (the two-responses-at-once garble of HybridAIOne/hybridclaw#1502)."""  # noqa: E501
    from agents.realtime.model_inputs import RealtimeModelSendRawMessage
    from agents.realtime.openai_realtime import _ConversionHelper

    model = _model()
    send_event = model.send_event
    handle = model._handle_ws_event

    async def patched(self, event):  # type: ignore[no-untyped-def]
        if isinstance(event, RealtimeModelSendRawMessage) and event.message.get("type") == "response.create":
            response = event.message.get("other_data", {}).get("response") or {}
            if response.get("conversation") == "none":
                converted = _ConversionHelper.try_convert_raw_message(event)
                if self._ongoing_response or self._response_control != "free":
                    self.__dict__["_interop_early"] = self.__dict__.get("_interop_early", 0) + 1
                await self._send_raw_message(converted)
                return None
        return await send_event(self, event)

    import harness

    seen: dict[str, set[str]] = {"early": set(), "conv": set()}  # response ids, as the SDK saw them
    event_of = harness.Player._event

    def patched_event(self, kind, item_id, **kw):  # type: ignore[no-untyped-def]
        # the witness: an item of one of the two responses (an out-of-band one sent early, a
        # conversation's) begins to play while the other, begun, still has audio queued in the
        # player: the two heard at once, what the held create would never have let happen. Their
        # audio merely arriving interleaved is not yet that: a clear can drop the queue before
        # the second is heard, and then each plays alone.
        if kind == "playback.started":
            rid = self.response.get(item_id)
            if rid in seen["early"]:
                others = seen["conv"]
            elif rid in seen["conv"]:
                others = seen["early"]
            else:
                others = set()
            begun = {self.response.get(i) for i in self.started if i != item_id}
            if any(c[1] in others and c[1] in begun for c in self.queue):
                witness("next")  # this playback.started, about to be written
        return event_of(self, kind, item_id, **kw)

    harness.Player._event = patched_event

    async def patched_handle(self, event):  # type: ignore[no-untyped-def]
        kind = event.get("type") if isinstance(event, dict) else None
        if kind == "response.created":
            r = event.get("response") or {}
            in_conversation = r.get("conversation_id") is not None
            if not in_conversation and self.__dict__.get("_interop_early", 0):
                self._interop_early -= 1
                self.__dict__.setdefault("_interop_early_ids", set()).add(r.get("id"))
            if in_conversation:
                seen["conv"].add(r.get("id"))
            elif r.get("id") in self.__dict__.get("_interop_early_ids", set()):
                seen["early"].add(r.get("id"))
        return await handle(self, event)

    model.send_event = patched
    model._handle_ws_event = patched_handle


@patch
def run_incomplete_function_calls() -> None:
    """A function_call item the server closed incomplete (its response cancelled while the arguments streamed) is run as if completed: the tool runs on the partial arguments and its output is committed, with a new response.create, after the response.done that answered the cancel (the shape of ducks/claux#18: outputs for calls a cancelled response never completed)."""  # noqa: E501
    model = _model()
    handle = model._handle_output_item

    async def patched(self, item):  # type: ignore[no-untyped-def]
        if item.type == "function_call" and item.status == "incomplete":
            witness("last")  # the output_item.done of the call the cancel settled
            item = item.model_copy(update={"status": "completed"})
        return await handle(self, item)

    model._handle_output_item = patched


@patch
def truncate_last_received_item() -> None:
    """On an interruption the model truncates the assistant item it last received audio for, at the position the player reports for the item it is playing: with one item partly played and the next one already queued, the queued item is cut to a position nobody heard and the item being heard is never cut (the shape of openclaw/openclaw#138592, fixed in openclaw/openclaw#138619, and of openai/openai-agents-js#1173's fix openai/openai-agents-js#1608, which truncates the audible item, not the last one)."""  # noqa: E501
    model = _model()
    state = model._get_playback_state
    send = model._send_raw_message

    def patched(self):  # type: ignore[no-untyped-def]
        played = state(self)
        last = self._audio_state_tracker.get_last_audio_item()
        self._interop_swapped = False
        if played.get("current_item_id") is not None and last is not None:
            if (played["current_item_id"], played.get("current_item_content_index") or 0) != last:
                self._interop_swapped = True
                return {**played, "current_item_id": last[0], "current_item_content_index": last[1]}
        return played

    async def patched_send(self, event):  # type: ignore[no-untyped-def]
        if event.type == "conversation.item.truncate" and getattr(self, "_interop_swapped", False):
            self._interop_swapped = False
            witness("next")  # this truncate names the queued item, not the one heard
        return await send(self, event)

    model._get_playback_state = patched
    model._send_raw_message = patched_send


@patch
def no_cancel_when_server_does_not_interrupt() -> None:
    """On input_audio_buffer.speech_started the model tells the app to stop and truncates, but never sends response.cancel, even when the session's turn detection has interrupt_response false: it leaves the response to the server, as the handler's comment in openai/openai-agents-python#1999 left truncation to it. 0.24.0 guards this (its speech_started handler cancels when the session's turn detection does not interrupt responses); without the guard the server streams on and its audio reaches the player after the clear."""  # noqa: E501
    model = _model()
    handle = model._handle_ws_event
    cancel = model._cancel_response

    async def patched_handle(self, event):  # type: ignore[no-untyped-def]
        self._interop_in_speech_started = (
            isinstance(event, dict) and event.get("type") == "input_audio_buffer.speech_started"
        )
        try:
            return await handle(self, event)
        finally:
            self._interop_in_speech_started = False

    async def patched_cancel(self, *, response_id=None):  # type: ignore[no-untyped-def]
        if getattr(self, "_interop_in_speech_started", False):
            if self._ongoing_response:
                witness("last")  # the speech after which the response streams on
            return None
        return await cancel(self, response_id=response_id)

    model._handle_ws_event = patched_handle
    model._cancel_response = patched_cancel


@patch
def run_tool_on_arguments_done() -> None:
    """The model runs a function call's tool as soon as response.function_call_arguments.done arrives, and again on its response.output_item.done: each call is answered twice (two function_call_output items, two response.create), the session's guard against a second dispatch of one call id removed with it. The SDK runs a tool on the output item only and drops a duplicate dispatch; a client that also acts on the arguments' done runs it twice, the repeated tool calls of openai/openai-realtime-api-beta#31 and the call "ran twice" on two confirmations of NousResearch/hermes-agent#94961."""  # noqa: E501
    from openai.types.realtime.realtime_conversation_item_function_call import (
        RealtimeConversationItemFunctionCall,
    )

    model = _model()
    handle = model._handle_ws_event
    send = model._send_raw_message

    async def patched_send(self, event):  # type: ignore[no-untyped-def]
        if event.type == "conversation.item.create" and getattr(event.item, "type", None) == "function_call_output":
            answered = self.__dict__.setdefault("_interop_answered", set())
            if event.item.call_id in answered:
                witness("next")  # the second answer to one call
            answered.add(event.item.call_id)
        return await send(self, event)

    async def patched(self, event):  # type: ignore[no-untyped-def]
        await handle(self, event)
        if isinstance(event, dict) and event.get("type") == "response.function_call_arguments.done":
            item = RealtimeConversationItemFunctionCall(
                type="function_call",
                id=event.get("item_id"),
                call_id=event.get("call_id"),
                name=event.get("name"),
                arguments=event.get("arguments"),
                status="completed",
            )
            await self._handle_output_item(item)

    from agents.realtime.session import RealtimeSession

    handle_call = RealtimeSession._handle_tool_call

    async def patched_call(self, event, *args, **kw):  # type: ignore[no-untyped-def]
        # the session's duplicate-call guard gone: a second dispatch of one call runs again
        seen = self.__dict__.setdefault("_interop_dispatched", set())
        if event.call_id in seen:
            kw["call_id_reserved"] = True
        seen.add(event.call_id)
        return await handle_call(self, event, *args, **kw)

    model._handle_ws_event = patched
    model._send_raw_message = patched_send
    RealtimeSession._handle_tool_call = patched_call


RULES.update(
    {
        "no_truncate_on_speech_started": "truncated_to_heard",
        "truncate_from_wall_clock": "truncated_to_heard",
        "forget_audio_at_audio_done": "truncated_to_heard",
        "out_of_band_create_at_once": "single_running_turn",
        "run_incomplete_function_calls": "tool_call_settled",
        "truncate_last_received_item": "truncated_to_heard",
        "no_cancel_when_server_does_not_interrupt": "no_late_delivery",
        "run_tool_on_arguments_done": "tool_call_settled",
    }
)
