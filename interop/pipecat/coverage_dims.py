"""The dimensions a generated Pipecat session can hit: what its configuration asked for and
what its log shows happened. A dimension no session of a run hit fails the run (from
``generate.COVERAGE_MIN`` sessions up).

Configuration dimensions say the space was drawn; log dimensions say Pipecat actually went
there (an interruption while the bot spoke, a call cancelled, a session ended mid-reply).
"""

from __future__ import annotations

from typing import Any

from strategies import Features, Session

INTERRUPTIONS = ("InterruptionFrame", "StartInterruptionFrame")


def dimensions(feat: Features) -> list[str]:
    dims = [
        # configuration
        "interruptions_off",
        "mute_always",
        "mute_first_speech",
        "mute_function_call",
        "mute_until_first_bot_complete",
        "tool_cancel_on_interruption",
        "tool_through_interruption",
        "parallel_calls",
        "result_late",
        "result_never",
        "result_silent",
        "result_progress",
        "noise_no_transcript",
        "app_speak",
        "app_interrupt",
        "ending_end_mid_session",
        "ending_cancel",
        "ending_drain",
        # what the log shows
        "interrupt_while_bot_speaks",
        "interrupt_while_llm_streams",
        "interrupt_before_first_audio",
        "interrupt_while_tool_runs",
        "interrupt_with_nothing_to_interrupt",
        "speech_over_bot_not_interrupting",
        "tool_cancelled_by_interruption",
        "tool_result",
        "tool_result_after_interruption",
        "speech_queued_behind_reply",
        "reply_without_text",
        "end_while_bot_speaks",
        "cancel_while_bot_speaks",
        "end_while_tool_runs",
        "user_muted_while_speaking",
    ]
    if feat.v1:
        dims += ["start_vad", "start_transcription", "start_min_words", "start_mixed_interruptions", "speech_timeout_drawn"]
    if feat.tool_timeout or feat.global_timeout:
        dims += ["tool_timeout_set", "tool_timed_out"]
    if feat.uninterruptible_speak:
        dims += ["say_uninterruptible", "interrupt_over_uninterruptible"]
    return dims


def hit(s: Session, lines: list[dict[str, Any]], feat: Features, notes: list[str]) -> set[str]:
    d: set[str] = set()
    if not s.interruptions:
        d.add("interruptions_off")
    for m in s.mute:
        d.add(f"mute_{m}")
    for t in s.tools:
        d.add("tool_cancel_on_interruption" if t.cancel_on_interruption else "tool_through_interruption")
        d.add(f"result_{t.ends}" if t.ends != "result" else "tool_result_drawn")
        if t.timeout_ms is not None:
            d.add("tool_timeout_set")
    if s.function_call_timeout_ms is not None and s.tools:
        d.add("tool_timeout_set")
    if any(len(r.calls) >= 2 for r in s.replies) and s.tools:
        d.add("parallel_calls")
    if any(u.words == 0 for u in s.utterances):
        d.add("noise_no_transcript")
    for a in s.actions:
        d.add({"speak": "app_speak", "interrupt": "app_interrupt", "speak_uninterruptible": "say_uninterruptible"}[a.kind])
    if s.ending == "cancel":
        d.add("ending_cancel")
    elif s.ending == "end":
        d.add("ending_end_mid_session")
    else:
        d.add("ending_drain")
    if feat.v1:
        for name in s.start:
            d.add("start_" + name.split(":")[0])
        if len(set(s.start_interrupts)) > 1:
            d.add("start_mixed_interruptions")
        if s.speech_timeout_ms != 600:
            d.add("speech_timeout_drawn")

    # the log
    bot = False
    streaming = False
    responded_no_audio = False
    in_progress: set[str] = set()
    muted = False
    uninterruptible_playing = False
    last_bot_stop: int | None = None
    text_in_response = False
    for ln in lines:
        f = ln["frame"]
        if f == "BotStartedSpeakingFrame":
            bot = True
            responded_no_audio = False
            if last_bot_stop is not None and ln["t_ms"] - last_bot_stop <= 50:
                d.add("speech_queued_behind_reply")
        elif f == "BotStoppedSpeakingFrame":
            bot = False
            last_bot_stop = ln["t_ms"]
            uninterruptible_playing = False
        elif f == "LLMFullResponseStartFrame":
            streaming = True
            responded_no_audio = True
            text_in_response = False
        elif f == "LLMTextFrame":
            text_in_response = True
        elif f == "LLMFullResponseEndFrame":
            streaming = False
            if not text_in_response:
                d.add("reply_without_text")
        elif f == "FunctionCallInProgressFrame":
            in_progress.add(ln["tool_call_id"])
        elif f == "FunctionCallResultFrame":
            d.add("tool_result")
            if ln["tool_call_id"] in in_progress and ln.get("_after_interrupt"):
                pass
            in_progress.discard(ln["tool_call_id"])
        elif f == "FunctionCallCancelFrame":
            if ln.get("run_llm"):
                d.add("tool_timed_out")
            in_progress.discard(ln["tool_call_id"])
        elif f in ("UserMuteStartedFrame",) or (f == "STTMuteFrame" and ln.get("mute")):
            muted = True
        elif f in ("UserMuteStoppedFrame",) or (f == "STTMuteFrame" and not ln.get("mute")):
            muted = False
        elif f == "VADUserStartedSpeakingFrame":
            if muted:
                d.add("user_muted_while_speaking")
            elif bot and s.interruptions is False:
                d.add("speech_over_bot_not_interrupting")
        elif f == "TTSAudioRawFrame" and ln.get("played") and ln.get("uninterruptible"):
            uninterruptible_playing = True
        elif f in INTERRUPTIONS and not (muted and not feat.v1):
            if bot:
                d.add("interrupt_while_bot_speaks")
                if uninterruptible_playing:
                    d.add("interrupt_over_uninterruptible")
            if streaming:
                d.add("interrupt_while_llm_streams")
            if responded_no_audio and not bot:
                d.add("interrupt_before_first_audio")
            if in_progress:
                d.add("interrupt_while_tool_runs")
                d.add("_pending_interrupted_calls")
            if not (bot or streaming or in_progress or responded_no_audio):
                d.add("interrupt_with_nothing_to_interrupt")
            interrupted_calls = set(in_progress)
            ln["_interrupted"] = interrupted_calls
        elif f == "EndFrame":
            if bot:
                d.add("end_while_bot_speaks")
            if in_progress:
                d.add("end_while_tool_runs")
        elif f == "CancelFrame":
            if bot:
                d.add("cancel_while_bot_speaks")
            if in_progress:
                d.add("end_while_tool_runs")
    # a result of a call that was in progress at an interruption
    interrupted: set[str] = set()
    for ln in lines:
        if "_interrupted" in ln:
            interrupted |= ln.pop("_interrupted")
        elif ln["frame"] == "FunctionCallCancelFrame" and ln["tool_call_id"] in interrupted:
            d.add("tool_cancelled_by_interruption")
        elif ln["frame"] == "FunctionCallResultFrame" and ln["tool_call_id"] in interrupted:
            d.add("tool_result_after_interruption")
    d.discard("_pending_interrupted_calls")
    d.discard("tool_result_drawn")
    for n in notes:
        d.add(n)
    return d
