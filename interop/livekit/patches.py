"""Planted bugs: monkeypatches of the installed livekit-agents, one per rejected scenario.

``PATCHES`` maps a name to a function that patches the package inside the harness process; the
harness calls it before building the session, only for the scenario whose ``bug.patch`` names
it (each scenario runs in a process of its own). A patch's docstring is the one-sentence
``patch`` of the fixture's meta line.
"""

from __future__ import annotations

from collections.abc import Callable

PATCHES: dict[str, Callable[[], None]] = {}


def patch(fn: Callable[[], None]) -> Callable[[], None]:
    PATCHES[fn.__name__] = fn
    return fn


@patch
def drop_tool_results_after_interruption() -> None:
    """AgentSession.emit drops every function_tools_executed whose outputs all ask for no reply (the results of tools that finished after their reply was interrupted), so those calls are never answered."""  # noqa: E501
    from livekit.agents.voice.agent_session import AgentSession

    emit = AgentSession.emit

    def patched(self, event, arg):  # type: ignore[no-untyped-def]
        if (
            event == "function_tools_executed"
            and arg.function_call_outputs
            and all(not out.reply_required for out in arg.function_call_outputs)
        ):
            return None
        return emit(self, event, arg)

    AgentSession.emit = patched  # type: ignore[method-assign]


@patch
def never_arm_false_interruption_timer() -> None:
    """AgentActivity._start_false_interruption_timer does nothing, so a reply paused by speech that brings no transcript is neither resumed nor interrupted until the session closes."""  # noqa: E501
    from livekit.agents.voice.agent_activity import AgentActivity

    def patched(self, timeout):  # type: ignore[no-untyped-def]
        return None

    AgentActivity._start_false_interruption_timer = patched  # type: ignore[method-assign]


@patch
def ignore_allow_interruptions() -> None:
    """AgentActivity.say ignores its allow_interruptions argument, so speech pauses and interrupts a say(..., allow_interruptions=False) like any other reply (and its audio is not withheld from the STT)."""  # noqa: E501
    from livekit.agents.types import NOT_GIVEN
    from livekit.agents.voice.agent_activity import AgentActivity

    say = AgentActivity.say

    def patched(self, text, *, allow_interruptions=NOT_GIVEN, **kw):  # type: ignore[no-untyped-def]
        return say(self, text, **kw)

    AgentActivity.say = patched  # type: ignore[method-assign]


@patch
def resume_after_confirmed_interruption() -> None:
    """AgentActivity._cancel_speech_pause, once a final transcript has interrupted the paused reply, resumes the audio output and restores the speaking state, so output goes on after the interruption was confirmed."""  # noqa: E501
    from livekit.agents.voice.agent_activity import AgentActivity

    cancel = AgentActivity._cancel_speech_pause

    async def patched(self, old_task=None, *, interrupt=True):  # type: ignore[no-untyped-def]
        paused = self._paused_speech
        await cancel(self, old_task, interrupt=interrupt)
        if paused is not None and interrupt and paused.handle.interrupted:
            self._session._update_agent_state("speaking")
            if self._session.output.audio is not None:
                self._session.output.audio.resume()

    AgentActivity._cancel_speech_pause = patched  # type: ignore[method-assign]


@patch
def commit_interrupted_reply_twice() -> None:
    """AgentSession._conversation_item_added commits an interrupted assistant message twice: first a copy marked interrupted=false (a new id), then the message itself."""  # noqa: E501
    from livekit.agents.voice.agent_session import AgentSession

    added = AgentSession._conversation_item_added

    def patched(self, message):  # type: ignore[no-untyped-def]
        if message.role == "assistant" and message.interrupted:
            copy = message.model_copy(update={"interrupted": False, "id": message.id + "_copy"})
            added(self, copy)
        return added(self, message)

    AgentSession._conversation_item_added = patched  # type: ignore[method-assign]
