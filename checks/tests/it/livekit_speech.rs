//! How LiveKit dates a user's speech held over a reply, read from its code
//! (`AgentActivity._interrupt_by_audio_activity`): a turn of fewer words than
//! `min_interruption_words` returns first, so its speech counts from the transcript at the
//! earliest; a turn of that many words or more counts from the speech's start.

use crate::{edited, effective_inputs};
use turnfence_checks::dialect;
use turnfence_checks::trace;

/// An app's `say()` speaking; the user talks over it from 1.0 s; a one-word final transcript at
/// 1.3 s; the reply is interrupted there.
const OVER_A_SAY: &str = r#"{"meta": {"dialect": "livekit-agents", "version": "1.8.9", "options": {"allow_interruptions": true, "min_interruption_duration": 1.0, "min_interruption_words": 1, "false_interruption_timeout": 2.0, "resume_false_interruption": false, "discard_audio_if_uninterruptible": true, "user_away_timeout": 15.0, "aec_warmup_duration": null}, "fixture": {"source": "written for the rule, after a session of interop/livekit generate.py"}}}
{"type": "agent_state_changed", "old_state": "initializing", "new_state": "listening", "created_at": 1750000000.0}
{"type": "speech_created", "user_initiated": true, "source": "say", "created_at": 1750000000.0}
{"type": "agent_state_changed", "old_state": "listening", "new_state": "speaking", "created_at": 1750000000.2}
{"type": "user_state_changed", "old_state": "listening", "new_state": "speaking", "created_at": 1750000001.0}
{"type": "user_input_transcribed", "transcript": "Stop", "is_final": true, "item_id": null, "speaker_id": null, "language": "en", "created_at": 1750000001.3}
{"type": "conversation_item_added", "item": {"id": "item_1", "type": "message", "role": "assistant", "content": ["Hello there"], "interrupted": true, "created_at": 1750000000.0}, "created_at": 1750000001.3}
{"type": "agent_state_changed", "old_state": "speaking", "new_state": "listening", "created_at": 1750000001.3}
{"type": "user_state_changed", "old_state": "speaking", "new_state": "listening", "created_at": 1750000002.0}
{"type": "close", "error": null, "reason": "user_initiated", "created_at": 1750000003.0}
"#;

/// The `since` of each speech step of the log's effective trace.
fn speech_since(log: &str) -> Vec<u64> {
    effective_inputs(log)
        .into_iter()
        .filter(|i| i["input"] == "speech_started")
        .map(|i| i["since"].as_u64().unwrap())
        .collect()
}

#[test]
fn a_turn_of_exactly_min_interruption_words_counts_from_its_speech() {
    assert_eq!(speech_since(OVER_A_SAY), [1000]);
}

#[test]
fn a_turn_of_fewer_than_min_interruption_words_counts_from_its_transcript() {
    let two = edited(
        OVER_A_SAY,
        r#""min_interruption_words": 1"#,
        r#""min_interruption_words": 2"#,
    );
    assert_eq!(speech_since(&two), [1300]);
}

/// An interim transcript pauses the reply speaking with no speech the voice detector shows
/// (`on_interim_transcript` calls `_interrupt_by_audio_activity`): the generated 1.6.4 session
/// conforms, its resume deciding the pause; the same log with the `say()` made
/// `allow_interruptions=False` is a reply the transcript cut that allowed no interruption.
#[test]
fn an_interim_transcript_is_the_speech_that_paused_the_reply() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../fixtures/generated/livekit-agents@1.6.4/interim_transcript_pauses_without_speech.events.jsonl",
    );
    let text = crate::read(&path);
    let v = dialect::check_input(text.as_bytes(), &Default::default())
        .verdict
        .unwrap();
    assert!(v.conforms(), "{:?}", v.findings);
    let fixed = text.replacen(
        r#""source": "say", "created_at": 1750000003.89, "allow_interruptions": true"#,
        r#""source": "say", "created_at": 1750000003.89, "allow_interruptions": false"#,
        1,
    );
    assert_ne!(fixed, text);
    let v = dialect::check_input(fixed.as_bytes(), &Default::default())
        .verdict
        .unwrap();
    let found: Vec<(&str, usize)> = v.findings.iter().map(|f| (f.name(), f.line)).collect();
    assert!(
        found.contains(&("uninterruptible_output_survives", 13)),
        "{found:?}"
    );
    // An interim with no words is no activity (`if ev.alternatives[0].text`): the stop at its
    // instant is no pause of the model's, and the resume two seconds on decides none.
    let empty = text.replacen(
        r#""transcript": "Question2 juliet quebec xray echo lima sierra zulu", "is_final": false"#,
        r#""transcript": "", "is_final": false"#,
        1,
    );
    assert_ne!(empty, text);
    let v = dialect::check_input(empty.as_bytes(), &Default::default())
        .verdict
        .unwrap();
    let found: Vec<(&str, usize)> = v.findings.iter().map(|f| (f.name(), f.line)).collect();
    assert_eq!(found, [("interruption_decided_once", 17)]);
}

/// A reply that plays out while the user's speech, too short to count yet, is held over it was
/// not interrupted at once: with the options unstated nothing about a pause is left unjudged,
/// and the speech goes on over no reply.
#[test]
fn a_reply_played_out_under_held_speech_leaves_no_pause_unjudged() {
    let log = r#"{"meta": {"dialect": "livekit-agents", "version": "1.8.9", "fixture": {"source": "written for the rule"}}}
{"type": "agent_state_changed", "old_state": "initializing", "new_state": "listening", "created_at": 1750000000.0}
{"type": "speech_created", "user_initiated": true, "source": "say", "created_at": 1750000000.0}
{"type": "agent_state_changed", "old_state": "listening", "new_state": "speaking", "created_at": 1750000000.2}
{"type": "user_state_changed", "old_state": "listening", "new_state": "speaking", "created_at": 1750000001.0}
{"type": "conversation_item_added", "item": {"id": "item_1", "type": "message", "role": "assistant", "content": ["Hello there"], "interrupted": false, "created_at": 1750000000.0}, "created_at": 1750000001.1}
{"type": "agent_state_changed", "old_state": "speaking", "new_state": "listening", "created_at": 1750000001.1}
{"type": "user_state_changed", "old_state": "speaking", "new_state": "listening", "created_at": 1750000001.3}
{"type": "close", "error": null, "reason": "user_initiated", "created_at": 1750000003.0}
"#;
    let v = dialect::check_input(log.as_bytes(), &Default::default())
        .verdict
        .unwrap();
    assert!(v.conforms(), "{:?}", v.findings);
    let at_once: Vec<&str> = v
        .not_judged
        .iter()
        .map(|n| n.needs.as_str())
        .filter(|n| n.contains("interrupted at once"))
        .collect();
    assert!(at_once.is_empty(), "{at_once:?}");
}

/// The user talks over a `say()` for a second and a half with no word a transcript shows
/// (`min_interruption_words` 2): `_interrupt_by_audio_activity` returns at the words, however
/// long the speech, so the say plays out — judged so, not left open as a reply that played on
/// through speech that counted.
#[test]
fn speech_of_too_few_words_interrupts_nothing_however_long() {
    let log = r#"{"meta": {"dialect": "livekit-agents", "version": "1.8.9", "options": {"allow_interruptions": true, "min_interruption_duration": 1.0, "min_interruption_words": 2, "false_interruption_timeout": 2.0, "resume_false_interruption": false, "discard_audio_if_uninterruptible": true, "user_away_timeout": 15.0, "aec_warmup_duration": null}, "fixture": {"source": "written for the rule, after a session of interop/livekit generate.py"}}}
{"type": "agent_state_changed", "old_state": "initializing", "new_state": "listening", "created_at": 1750000000.0}
{"type": "speech_created", "user_initiated": true, "source": "say", "created_at": 1750000000.0}
{"type": "agent_state_changed", "old_state": "listening", "new_state": "speaking", "created_at": 1750000000.2}
{"type": "user_state_changed", "old_state": "listening", "new_state": "speaking", "created_at": 1750000001.0}
{"type": "user_state_changed", "old_state": "speaking", "new_state": "listening", "created_at": 1750000002.5}
{"type": "conversation_item_added", "item": {"id": "item_1", "type": "message", "role": "assistant", "content": ["Hello there"], "interrupted": false, "created_at": 1750000000.0}, "created_at": 1750000003.0}
{"type": "agent_state_changed", "old_state": "speaking", "new_state": "listening", "created_at": 1750000003.0}
{"type": "close", "error": null, "reason": "user_initiated", "created_at": 1750000004.0}
"#;
    let v = dialect::check_input(log.as_bytes(), &Default::default())
        .verdict
        .unwrap();
    assert!(v.conforms(), "{:?}", v.findings);
    assert!(v.not_judged.is_empty(), "{:?}", v.not_judged);
}

/// A reply paused before its first audio by speech held over it (too few words until an
/// interim brings enough): the pause took the speech, and the generated session conforms with
/// nothing left unjudged.
#[test]
fn a_pause_before_the_first_audio_takes_the_held_speech() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../fixtures/generated/livekit-agents@1.8.9/pause_before_audio_takes_held_speech.events.jsonl",
    );
    let v = dialect::check_input(crate::read(&path).as_bytes(), &Default::default())
        .verdict
        .unwrap();
    assert!(v.conforms(), "{:?}", v.findings);
    assert!(v.not_judged.is_empty(), "{:?}", v.not_judged);
}

/// The kept generated sessions `name` of LiveKit 1.8.9, judged keeping the effective trace.
fn judged_kept(name: &str) -> trace::Verdict {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/generated/livekit-agents@1.8.9")
        .join(format!("{name}.events.jsonl"));
    let text = crate::read(&path);
    dialect::check_input_keeping(text.as_bytes(), &Default::default(), trace::Keep::Effective)
        .verdict
        .unwrap()
}

/// A reply none of whose audio is out, interrupted by the user's turn committing with its reply
/// created (`_user_turn_completed_task`): it is stopped there, and what follows is the new
/// reply's — not the silent one's, going on.
#[test]
fn a_silent_reply_interrupted_by_the_users_turn_is_stopped_there() {
    let v = judged_kept("silent_reply_interrupted_by_user_turn");
    assert!(v.conforms(), "{:?}", v.findings);
    let step = |what: &str| v.effective.iter().position(|l| l.contains(what));
    let stop = step(r#""input":"stop","turn":"speech_2","request_id":"speech_2-user-turn""#);
    let next = step(r#""input":"accept","turn":"speech_3""#);
    assert!(stop.is_some() && stop < next, "{:#?}", v.effective);
}

/// When each `speech_started` of a log's effective trace is given to the model (its `at`).
fn speech_given_at(log: &str) -> Vec<u64> {
    effective_inputs(log)
        .into_iter()
        .filter(|i| i["input"] == "speech_started")
        .map(|i| i["at"].as_u64().unwrap())
        .collect()
}

/// Speech over a reply still thinking, the user's turn already of `min_interruption_words`
/// words (an interim said them): enough to interrupt, it is given to the model at once, not
/// held as a turn of too few words is.
#[test]
fn speech_over_a_thinking_reply_with_words_enough_is_given_at_once() {
    let log = r#"{"meta": {"dialect": "livekit-agents", "version": "1.8.9", "options": {"allow_interruptions": true, "min_interruption_duration": 0.3, "min_interruption_words": 2, "false_interruption_timeout": 2.0, "resume_false_interruption": false, "discard_audio_if_uninterruptible": true, "user_away_timeout": 15.0, "aec_warmup_duration": null}, "fixture": {"source": "written for the rule"}}}
{"type": "agent_state_changed", "old_state": "initializing", "new_state": "listening", "created_at": 1750000000.0}
{"type": "speech_created", "user_initiated": true, "source": "generate_reply", "created_at": 1750000000.0}
{"type": "agent_state_changed", "old_state": "listening", "new_state": "thinking", "created_at": 1750000000.0}
{"type": "user_input_transcribed", "transcript": "Hold on", "is_final": false, "item_id": null, "speaker_id": null, "language": "en", "created_at": 1750000000.5}
{"type": "user_state_changed", "old_state": "listening", "new_state": "speaking", "created_at": 1750000001.0}
{"type": "user_state_changed", "old_state": "speaking", "new_state": "listening", "created_at": 1750000002.0}
{"type": "close", "error": null, "reason": "user_initiated", "created_at": 1750000003.0}
"#;
    assert_eq!(speech_given_at(log), [1000]);
    let one = log.replacen(r#""transcript": "Hold on""#, r#""transcript": "Hold""#, 1);
    assert_ne!(one, log);
    assert_eq!(speech_given_at(&one), [2000]);
}

/// The reply each call was spawned on, in a log's effective trace.
fn calls_placed(log: &str) -> Vec<(String, String)> {
    effective_inputs(log)
        .into_iter()
        .filter(|i| i["input"] == "spawn")
        .map(|i| {
            let s = |k: &str| i[k].as_str().unwrap().to_owned();
            (s("child"), s("turn"))
        })
        .collect()
}

/// A reply's message commits with its call still running; another speech is created; a
/// second call of the same generation starts: it is that reply's, going on with its calls —
/// only a call of another generation begins the waiting speech's reply.
#[test]
fn a_call_of_the_reply_going_on_stays_its_own() {
    let log = r#"{"meta": {"dialect": "livekit-agents", "version": "1.8.9", "fixture": {"source": "written for the rule"}}}
{"type": "agent_state_changed", "old_state": "initializing", "new_state": "listening", "created_at": 1750000000.0}
{"type": "speech_created", "user_initiated": true, "source": "generate_reply", "created_at": 1750000000.0}
{"type": "agent_state_changed", "old_state": "listening", "new_state": "thinking", "created_at": 1750000000.0}
{"type": "tool_execution_updated", "update": {"type": "tool_call_started", "function_call": {"id": "item_a/fnc_0", "type": "function_call", "call_id": "call_1", "arguments": "{}", "name": "lookup"}}, "created_at": 1750000000.5}
{"type": "agent_state_changed", "old_state": "thinking", "new_state": "speaking", "created_at": 1750000000.6}
{"type": "conversation_item_added", "item": {"id": "item_a", "type": "message", "role": "assistant", "content": ["One moment"], "interrupted": false, "created_at": 1750000000.6}, "created_at": 1750000001.0}
{"type": "agent_state_changed", "old_state": "speaking", "new_state": "thinking", "created_at": 1750000001.0}
{"type": "speech_created", "user_initiated": true, "source": "say", "created_at": 1750000001.2}
{"type": "tool_execution_updated", "update": {"type": "tool_call_started", "function_call": {"id": "item_a/fnc_1", "type": "function_call", "call_id": "call_2", "arguments": "{}", "name": "lookup"}}, "created_at": 1750000001.3}
{"type": "close", "error": null, "reason": "user_initiated", "created_at": 1750000002.0}
"#;
    let placed = |log: &str| {
        calls_placed(log)
            .into_iter()
            .map(|(call, turn)| format!("{call}@{turn}"))
            .collect::<Vec<_>>()
    };
    assert_eq!(placed(log), ["call_1@speech_1", "call_2@speech_1"]);
    let other = log.replacen("item_a/fnc_1", "item_b/fnc_0", 1);
    assert_ne!(other, log);
    assert_eq!(placed(&other), ["call_1@speech_1", "call_2@speech_2"]);
}

/// A reply thinking; the user speaks from 1.0 s; the agent first speaks at 1.1 s, which starts
/// AEC warm-up (`aec_warmup_duration`); the user stops at 2.0 s and the reply plays out.
const SPEECH_BEFORE_THE_FIRST_AUDIO: &str = r#"{"meta": {"dialect": "livekit-agents", "version": "1.8.9", "options": {"allow_interruptions": true, "min_interruption_duration": 0.5, "min_interruption_words": 0, "false_interruption_timeout": 2.0, "resume_false_interruption": false, "discard_audio_if_uninterruptible": true, "user_away_timeout": 15.0, "aec_warmup_duration": 3.0}, "fixture": {"source": "written for the rule, after session 90 of interop/livekit generate.py (seed 2)"}}}
{"type": "agent_state_changed", "old_state": "initializing", "new_state": "listening", "created_at": 1750000000.0}
{"type": "speech_created", "user_initiated": true, "source": "generate_reply", "created_at": 1750000000.5}
{"type": "agent_state_changed", "old_state": "listening", "new_state": "thinking", "created_at": 1750000000.5}
{"type": "user_state_changed", "old_state": "listening", "new_state": "speaking", "created_at": 1750000001.0}
{"type": "agent_state_changed", "old_state": "thinking", "new_state": "speaking", "created_at": 1750000001.1}
{"type": "user_state_changed", "old_state": "speaking", "new_state": "listening", "created_at": 1750000002.0}
{"type": "conversation_item_added", "item": {"id": "item_1", "type": "message", "role": "assistant", "content": ["Hello there"], "interrupted": false, "created_at": 1750000000.5}, "created_at": 1750000004.0}
{"type": "agent_state_changed", "old_state": "speaking", "new_state": "listening", "created_at": 1750000004.0}
{"type": "close", "error": null, "reason": "user_initiated", "created_at": 1750000005.0}
"#;

/// Speech begun before the agent's first audio counts, once that audio starts AEC warm-up, as
/// one begun during it: from its minimum before the warm-up's end (1.1 + 3.0 - 0.5 s), given to
/// the model again from there — so the reply LiveKit played through it conforms.
#[test]
fn speech_begun_before_the_first_audio_waits_out_aec_warmup() {
    assert_eq!(speech_since(SPEECH_BEFORE_THE_FIRST_AUDIO), [1000, 3600]);
    let v = dialect::check_input(
        SPEECH_BEFORE_THE_FIRST_AUDIO.as_bytes(),
        &Default::default(),
    )
    .verdict
    .unwrap();
    assert!(v.findings.is_empty(), "{:?}", v.findings);
}

/// A warm-up no longer than `min_interruption_duration` ends before the speech could count: the
/// speech keeps its start.
#[test]
fn a_warmup_shorter_than_the_minimum_leaves_the_speech_its_start() {
    let short = edited(
        SPEECH_BEFORE_THE_FIRST_AUDIO,
        r#""aec_warmup_duration": 3.0"#,
        r#""aec_warmup_duration": 0.3"#,
    );
    assert_eq!(speech_since(&short), [1000]);
}

/// Two one-word final transcripts over a `say()`, no speech the voice detector shows, with
/// `min_interruption_words` 2: the first is too few words; at the second the user's turn has
/// two, but this transcript one, so LiveKit interrupts unless the app cleared the turn between
/// them (`clear_user_turn`, which logs nothing) — left not judged, not read as no interruption.
#[test]
fn finals_that_make_up_the_words_together_leave_the_turn_clear_unjudged() {
    let log = r#"{"meta": {"dialect": "livekit-agents", "version": "1.8.9", "options": {"allow_interruptions": true, "min_interruption_duration": 0.5, "min_interruption_words": 2, "false_interruption_timeout": 2.0, "resume_false_interruption": false, "discard_audio_if_uninterruptible": true, "user_away_timeout": 15.0, "aec_warmup_duration": null}, "fixture": {"source": "written for the rule"}}}
{"type": "agent_state_changed", "old_state": "initializing", "new_state": "listening", "created_at": 1750000000.0}
{"type": "speech_created", "user_initiated": true, "source": "say", "created_at": 1750000000.0}
{"type": "agent_state_changed", "old_state": "listening", "new_state": "speaking", "created_at": 1750000000.2}
{"type": "user_input_transcribed", "transcript": "Wait", "is_final": true, "item_id": null, "speaker_id": null, "language": "en", "created_at": 1750000001.0}
{"type": "user_input_transcribed", "transcript": "Stop", "is_final": true, "item_id": null, "speaker_id": null, "language": "en", "created_at": 1750000001.3}
{"type": "conversation_item_added", "item": {"id": "item_1", "type": "message", "role": "assistant", "content": ["Hello there"], "interrupted": false, "created_at": 1750000000.0}, "created_at": 1750000003.0}
{"type": "agent_state_changed", "old_state": "speaking", "new_state": "listening", "created_at": 1750000003.0}
{"type": "close", "error": null, "reason": "user_initiated", "created_at": 1750000004.0}
"#;
    let unjudged = |log: &str| {
        let v = dialect::check_input(log.as_bytes(), &Default::default())
            .verdict
            .unwrap();
        assert!(v.findings.is_empty(), "{:?}", v.findings);
        v.not_judged
            .iter()
            .filter(|n| n.needs.contains("whether the app cleared the user's turn"))
            .map(|n| n.needs.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(unjudged(log).len(), 1, "{:?}", unjudged(log));
    // The first final alone is too few words: nothing to leave open.
    let one = edited(
        log,
        r#""transcript": "Stop", "is_final": true"#,
        r#""transcript": "Stop", "is_final": false"#,
    );
    assert!(unjudged(&one).is_empty());
}
