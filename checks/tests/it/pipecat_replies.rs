//! How the Pipecat dialect places a reply's steps: where a `TTSSpeakFrame` begins, when a TTS
//! context's reply is done, and what an interruption leaves of a response while the app's
//! speech waits in the LLM's queue.

use crate::{edited, effective_inputs};
use turnfence_checks::dialect;

fn kept(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/generated")
        .join(name);
    crate::read(&path)
}

/// When each step `input` of `turn` is given to the model (its `at`), in the effective trace.
fn steps_at(log: &str, input: &str, turn: &str) -> Vec<u64> {
    effective_inputs(log)
        .into_iter()
        .filter(|i| i["input"] == input && i["turn"] == turn)
        .map(|i| i["at"].as_u64().unwrap())
        .collect()
}

fn conforms(log: &str) {
    let v = dialect::check_input(log.as_bytes(), &Default::default())
        .verdict
        .unwrap();
    let found: Vec<(&str, usize)> = v.findings.iter().map(|f| (f.name(), f.line)).collect();
    assert!(found.is_empty(), "{found:?}");
}

/// The kept session of two `TTSSpeakFrame`s back to back, the TTS's first context started 5 ms
/// after the first: the first, with nothing before it for the TTS, begins at its own frame;
/// the second where the TTS takes it up (its context's `TTSStartedFrame`, 100 ms).
#[test]
fn a_speak_with_nothing_before_it_begins_at_its_own_frame() {
    let text = kept("pipecat@1.14.0/false_alarm_queued_speeches.jsonl");
    let later = edited(
        &text,
        r#"{"t_ms": 0, "frame": "TTSStartedFrame""#,
        r#"{"t_ms": 5, "frame": "TTSStartedFrame""#,
    );
    assert_eq!(steps_at(&later, "accept", "speak_1"), [0]);
    assert_eq!(steps_at(&later, "accept", "speak_2"), [100]);
    conforms(&later);
}

/// The same session with the first speech's last audio synthesized after its words
/// (`TTSTextFrame`) and before its context stops: the context still open, the reply is not
/// done at its words, and the audio is its own — played in full, the session conforms.
#[test]
fn audio_after_a_replys_words_is_its_own_until_its_context_stops() {
    let text = kept("pipecat@1.14.0/false_alarm_queued_speeches.jsonl");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[8].contains(r#""id": 86"#) && lines[9].contains("TTSTextFrame"));
    let mut moved = lines.clone();
    moved.swap(8, 9);
    let moved = moved.join("\n") + "\n";
    conforms(&moved);
    assert_eq!(steps_at(&moved, "model_done", "speak_1"), [100]);
}

/// The kept 0.0.84 session where the app's `TTSSpeakFrame` waits in the LLM's queue behind a
/// response and the user's interruption drops it, the response given two words first: the
/// interruption drops the response's words the TTS held too, so the response is done at its
/// `LLMFullResponseEndFrame` (3 659 ms), not left running until the `CancelFrame` stops it.
#[test]
fn a_speak_dropped_from_the_llms_queue_leaves_the_interrupted_response_done() {
    let text = kept("pipecat@0.0.84/false_alarm_speak_dropped_in_llm_queue.jsonl");
    let start = r#""frame": "LLMFullResponseStartFrame", "id": 103, "src": "ScriptedLLM#0", "dst": "ScriptedTTS#0", "dir": "down"}"#;
    let words = edited(
        &text,
        start,
        &format!(
            "{start}\n{}",
            r#"{"t_ms": 3100, "frame": "LLMTextFrame", "id": 900, "src": "ScriptedLLM#0", "dst": "ScriptedTTS#0", "dir": "down", "text": "Alpha bravo."}"#
        ),
    );
    conforms(&words);
    assert_eq!(steps_at(&words, "model_done", "response_2"), [3659]);
    assert!(steps_at(&words, "stop", "response_2").is_empty());
}
