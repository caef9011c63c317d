"""Planted bugs: monkeypatches of the installed openai-agents, one per rejected scenario.

``PATCHES`` maps a name to a function that patches the SDK inside the harness process; the
harness calls it before the session starts, only for the scenario whose ``bug.patch`` names it
(each scenario runs in a process of its own). A patch's docstring is the fixture's ``patch``.
BUGS.md gives the public report each one reproduces and why the patch sits where it does.
"""

from __future__ import annotations

from collections.abc import Callable

PATCHES: dict[str, Callable[[], None]] = {}


def patch(fn: Callable[[], None]) -> Callable[[], None]:
    PATCHES[fn.__name__] = fn
    return fn


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
            return None
        return await send(self, event)

    model._handle_ws_event = patched_handle
    model._send_raw_message = patched_send


@patch
def truncate_from_wall_clock() -> None:
    """The model ignores the app's RealtimePlaybackTracker and takes the played position from its wall clock since the item's first audio delta arrived (its fallback when no tracker is given), so a barge-in truncates the item to time elapsed, not to audio played: the reply's audio waited in the player's jitter buffer before it played."""  # noqa: E501
    model = _model()
    state = model._get_playback_state

    def patched(self):  # type: ignore[no-untyped-def]
        tracker = self._playback_tracker
        self._playback_tracker = None
        try:
            return state(self)
        finally:
            self._playback_tracker = tracker

    model._get_playback_state = patched


@patch
def forget_audio_at_audio_done() -> None:
    """When the server sends response.output_audio.done the model forgets the item's audio (its last audio item), as the JS SDK's transport resets its state there (openai/openai-agents-js#1173): a barge-in after the reply was generated, with its audio still queued in the player, finds nothing to interrupt, so the app is never told to stop and no truncate is sent."""  # noqa: E501
    model = _model()
    handle = model._handle_ws_event

    async def patched(self, event):  # type: ignore[no-untyped-def]
        await handle(self, event)
        if isinstance(event, dict) and event.get("type") == "response.output_audio.done":
            self._audio_state_tracker._last_audio_item = None

    model._handle_ws_event = patched


@patch
def out_of_band_create_at_once() -> None:
    """An out-of-band response.create (response.conversation "none") is sent at once, not queued behind the response in progress, so the server streams both responses together and the app's one playback queue interleaves their audio (the two-responses-at-once garble of HybridAIOne/hybridclaw#1502)."""  # noqa: E501
    from agents.realtime.model_inputs import RealtimeModelSendRawMessage
    from agents.realtime.openai_realtime import _ConversionHelper

    model = _model()
    send_event = model.send_event

    async def patched(self, event):  # type: ignore[no-untyped-def]
        if isinstance(event, RealtimeModelSendRawMessage) and event.message.get("type") == "response.create":
            response = event.message.get("other_data", {}).get("response") or {}
            if response.get("conversation") == "none":
                converted = _ConversionHelper.try_convert_raw_message(event)
                await self._send_raw_message(converted)
                return None
        return await send_event(self, event)

    model.send_event = patched


@patch
def run_incomplete_function_calls() -> None:
    """A function_call item the server closed incomplete (its response cancelled while the arguments streamed) is run as if completed: the tool runs on the partial arguments and its output is committed, with a new response.create, after the response.done that answered the cancel (the shape of ducks/claux#18: outputs for calls a cancelled response never completed)."""  # noqa: E501
    model = _model()
    handle = model._handle_output_item

    async def patched(self, item):  # type: ignore[no-untyped-def]
        if item.type == "function_call" and item.status == "incomplete":
            item = item.model_copy(update={"status": "completed"})
        return await handle(self, item)

    model._handle_output_item = patched
