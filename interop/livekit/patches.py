"""Planted bugs: monkeypatches of the installed livekit-agents, one per rejected scenario.

``PATCHES`` maps a name to a function that patches the package inside the harness process; the
harness calls it before building the session, only for the scenario whose ``bug.patch`` names
it (each scenario runs in a process of its own). A patch's docstring is the one-sentence
``patch`` of the fixture's meta line. The designs follow interop/livekit/BUGS.md (the public
report each one reproduces, and why the patch sits where it does); the version switches are
the few places 1.6.4 differs (``SpeechHandle.interrupt`` has no ``source``, and
``AgentActivity`` no ``_cancel_false_interruption_timer``).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

PATCHES: dict[str, Callable[[], None]] = {}


def patch(fn: Callable[[], None]) -> Callable[[], None]:
    PATCHES[fn.__name__] = fn
    return fn


def _interrupt(handle: Any, *, force: bool = False, source: str) -> None:
    """``handle.interrupt(...)``, with the ``source`` only where the version has it."""
    if "source" in inspect.signature(handle.interrupt).parameters:
        handle.interrupt(force=force, source=source)
    else:
        handle.interrupt(force=force)


def _cancel_false_interruption_timer(activity: Any) -> None:
    if hasattr(activity, "_cancel_false_interruption_timer"):
        activity._cancel_false_interruption_timer()
    elif activity._false_interruption_timer is not None:
        activity._false_interruption_timer.cancel()
        activity._false_interruption_timer = None


@patch
def drop_tool_results_after_interruption() -> None:
    """The results of tools that finish after their reply was interrupted are neither emitted (function_tools_executed) nor committed to the session history, as before the fix of livekit/agents#3702."""  # noqa: E501
    from livekit.agents.voice import agent_activity
    from livekit.agents.voice.agent_session import AgentSession

    dropped: set[str] = set()
    mark = agent_activity._interrupted_tool_output  # imported by name into agent_activity

    def marked(out: Any) -> Any:
        o = mark(out)
        dropped.add(o.call_id)
        return o

    agent_activity._interrupted_tool_output = marked

    emit = AgentSession.emit

    def patched_emit(self: Any, event: Any, arg: Any) -> None:
        if (
            event == "function_tools_executed"
            and arg.function_call_outputs
            and all(o.call_id in dropped for o in arg.function_call_outputs)
        ):
            fired()
            return None
        return emit(self, event, arg)

    AgentSession.emit = patched_emit  # type: ignore[method-assign]

    added = AgentSession._tool_items_added

    def patched_added(self: Any, items: Any) -> None:
        if items and all(getattr(i, "call_id", None) in dropped for i in items):
            fired()
            return None
        return added(self, items)

    AgentSession._tool_items_added = patched_added  # type: ignore[method-assign]


@patch
def false_interruption_timer_never_resumes() -> None:
    """When the false-interruption timer fires it emits agent_false_interruption(resumed=false) and forgets the pause without restoring the agent state or resuming the output, so the paused reply is neither resumed nor interrupted."""  # noqa: E501
    from livekit.agents.voice.agent_activity import AgentActivity
    from livekit.agents.voice.events import AgentFalseInterruptionEvent

    def start(self: Any, timeout: float) -> None:
        _cancel_false_interruption_timer(self)

        def fire() -> None:
            self._false_interruption_timer = None
            paused = self._paused_speech
            if paused is None or (
                self._current_speech is not None and self._current_speech is not paused.handle
            ):
                self._paused_speech = None
                return
            if not paused.handle.done():
                fired()  # unpatched, this pause would be resumed or end otherwise
            self._session.emit(
                "agent_false_interruption", AgentFalseInterruptionEvent(resumed=False)
            )
            self._paused_speech = None  # the handle stays paused, undecided

        self._false_interruption_timer = self._session._loop.call_later(timeout, fire)

    AgentActivity._start_false_interruption_timer = start  # type: ignore[method-assign]


@patch
def speech_interrupts_uninterruptible() -> None:
    """AgentActivity._interrupt_by_audio_activity force-interrupts the current speech when it does not allow interruptions, so speech over a say(..., allow_interruptions=False) cuts it off."""  # noqa: E501
    from livekit.agents.voice.agent_activity import AgentActivity

    orig = AgentActivity._interrupt_by_audio_activity

    def patched(self: Any, *args: Any, **kwargs: Any) -> None:
        speech, session = self._current_speech, self._session
        # the session's speech allows no interruption (its options say so, in the log's meta
        # line), so the activity's own check would return here: the patch cuts in first
        if (
            not (session._aec_warmup_remaining > 0 and session._aec_warmup_timer is not None)
            and speech is not None
            and not speech.interrupted
            and not speech.allow_interruptions
            and session.agent_state == "speaking"  # over its audio, as #3627 reports
        ):
            fired()
            _interrupt(speech, force=True, source="audio_activity")
            return None
        return orig(self, *args, **kwargs)

    AgentActivity._interrupt_by_audio_activity = patched  # type: ignore[method-assign]


# how long the sink keeps playing the interrupted reply after the verdict (see the scenario)
LATE_CLEAR = 1.2


@patch
def resume_before_clear() -> None:
    """AgentActivity._cancel_speech_pause interrupts the paused reply and resumes the output at once, without waiting for the interrupted generation, and the output's clear_buffer() reaches the sink 1.2 s late, so the interrupted reply's audio plays on after the interruption was confirmed."""  # noqa: E501
    from livekit.agents.voice.agent_activity import AgentActivity

    async def cancel(self: Any, old_task: Any = None, *, interrupt: bool = True) -> None:
        if old_task is not None:
            try:
                await old_task
            except Exception:
                pass
        _cancel_false_interruption_timer(self)
        if not self._paused_speech:
            return
        audio = self._session.output.audio
        handle = self._paused_speech.handle
        if interrupt and not handle.interrupted and handle.allow_interruptions:
            fired()
            if audio is not None:
                clear = audio.clear_buffer

                def late_clear() -> None:
                    audio.clear_buffer = clear
                    asyncio.get_running_loop().call_later(LATE_CLEAR, clear)

                audio.clear_buffer = late_clear
            _interrupt(handle, source="user_turn")
            # the bug: no `await handle._wait_for_generation()` before reopening the output
        self._paused_speech = None
        if self._session.options.interruption["resume_false_interruption"] and audio:
            audio.resume()

    AgentActivity._cancel_speech_pause = cancel  # type: ignore[method-assign]


@patch
def commit_interrupted_reply_twice() -> None:
    """A reply whose speech is interrupted after its assistant message was committed (while it waits for its tools) commits the same text again, under a new id, marked interrupted=true."""  # noqa: E501
    from livekit.agents import llm
    from livekit.agents.voice.agent_activity import AgentActivity

    orig = AgentActivity._pipeline_reply_task_impl

    async def impl(self: Any, *, speech_handle: Any, **kwargs: Any) -> None:
        committed: list[Any] = []

        def seen(item: Any) -> None:
            if (
                isinstance(item, llm.ChatMessage)
                and item.role == "assistant"
                and not item.interrupted
            ):
                committed.append(item)

        speech_handle._add_item_added_callback(seen)
        try:
            await orig(self, speech_handle=speech_handle, **kwargs)
        finally:
            speech_handle._remove_item_added_callback(seen)
        if speech_handle.interrupted:
            for message in committed:
                fired()
                again = llm.ChatMessage(
                    role="assistant",
                    content=list(message.content),
                    interrupted=True,
                    created_at=message.created_at,
                )
                self._agent._chat_ctx.insert(again)
                self._session._conversation_item_added(again)

    AgentActivity._pipeline_reply_task_impl = impl  # type: ignore[method-assign]


# -- witnesses (generated sessions) ------------------------------------------------------------

_witness: Callable[[], None] | None = None


def set_witness(hook: Callable[[], None] | None) -> None:
    """The generator's hook: called by a patch where its code path first changes what the
    stack does (the generator notes the log's line count then). None: no one listens (the
    scripted scenarios)."""
    global _witness
    _witness = hook


def fired() -> None:
    if _witness is not None:
        _witness()


# -- patches for generated sessions only (no scripted scenario uses them) -----------------------

EXTRA_RULES: dict[str, str] = {}
"""The rule each generated-only patch breaks (the scripted ones carry theirs in script.Bug)."""


def _emit_twice(event_name: str) -> None:
    from livekit.agents.voice.agent_session import AgentSession

    emit = AgentSession.emit

    def patched_emit(self: Any, event: Any, arg: Any) -> None:
        emit(self, event, arg)
        if event == event_name:
            fired()
            emit(self, event, arg)

    AgentSession.emit = patched_emit  # type: ignore[method-assign]


@patch
def tools_executed_twice() -> None:
    """Every function_tools_executed is emitted twice for one tool step, as livekit/agents#2223 reports of a session whose one tool step was announced several times."""  # noqa: E501
    _emit_twice("function_tools_executed")


@patch
def false_interruption_decided_twice() -> None:
    """Every agent_false_interruption is emitted twice for one pause, as two false-interruption timers armed for one pause both fire (livekit/agents#4621: a late end of speech arms a second timer)."""  # noqa: E501
    _emit_twice("agent_false_interruption")


EXTRA_RULES["tools_executed_twice"] = "tool_call_settled"
EXTRA_RULES["false_interruption_decided_twice"] = "interruption_decided_once"


@patch
def clear_never_reaches_output() -> None:
    """The transcript synchronizer's audio output drops clear_buffer() instead of passing it to the room's output, so an interrupted reply's queued audio plays to its end, as the room output's clear_buffer that sometimes did nothing (livekit/agents#1695: audio played on for seconds after clear_queue)."""  # noqa: E501
    from livekit.agents.voice.agent_session import AgentSession
    from livekit.agents.voice.transcription.synchronizer import _SyncedAudioOutput

    clear, aclose = _SyncedAudioOutput.clear_buffer, AgentSession.aclose
    closing: list[bool] = []

    async def patched_aclose(self: Any, *args: Any, **kwargs: Any) -> Any:
        closing.append(True)  # the clears of the close pass: what plays after it is unlogged
        return await aclose(self, *args, **kwargs)

    AgentSession.aclose = patched_aclose  # type: ignore[method-assign]

    def clear_buffer(self: Any) -> None:
        if closing:
            return clear(self)
        sink = self.next_in_chain
        while sink is not None and not hasattr(sink, "_segments"):
            sink = getattr(sink, "next_in_chain", None) or getattr(sink, "_sink", None)
        segments = getattr(sink, "_segments", None) or []
        if any(s.captured - s.played > 1e-6 and not s.cleared for s in segments):
            fired()  # audio is queued: unpatched, it would be dropped now

    _SyncedAudioOutput.clear_buffer = clear_buffer  # type: ignore[method-assign]


EXTRA_RULES["clear_never_reaches_output"] = "no_late_delivery"
