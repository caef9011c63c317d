//! What the Realtime client's player and the server's WebRTC buffer say was heard: an
//! out-of-band response is heard over a reply only once the player began it, and the server's
//! clear is skipped only for a response that already stopped.

use turnfence_checks::dialect;
use turnfence_checks::trace;

fn judged(log: &str) -> trace::Verdict {
    dialect::check_input(log.as_bytes(), &Default::default())
        .verdict
        .unwrap()
}

fn found(v: &trace::Verdict) -> Vec<(&str, usize)> {
    v.findings.iter().map(|f| (f.name(), f.line)).collect()
}

/// The kept session where an out-of-band response the player began still had audio queued when
/// the conversation's reply began to play: two heard at once. Without the player's lines about
/// the out-of-band response (never begun), its audio received is nothing the user heard, and
/// the reply beginning is heard alone.
#[test]
fn an_out_of_band_response_never_begun_is_not_heard_over_the_reply() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../fixtures/generated/openai-realtime@0.24.0/bug_oob_response_beside_vad_response.jsonl",
    );
    let text = crate::read(&path);
    let v = judged(&text);
    assert_eq!(found(&v), [("single_running_turn", 299)]);
    let oob = "\"item_id\": \"item_GU0YHp6taChJ8HUs4QTFJu\"";
    let unplayed: String = text
        .lines()
        .filter(|l| !(l.contains("\"dir\": \"app\"") && l.contains(oob)))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(text.lines().count() - unplayed.lines().count(), 5);
    let v = judged(&unplayed);
    assert!(v.findings.is_empty(), "{:?}", found(&v));
}

/// A session whose app reports no player: the server's WebRTC `output_audio_buffer.cleared` is
/// what says its buffer was dropped.
const SERVER_CLEAR: &str = r#"{"meta":{"dialect":"openai-realtime","fixture":{"source":"written for the rule"}}}
{"t_ms":0,"dir":"server","event":{"type":"session.updated","event_id":"event_0","session":{"type":"realtime","audio":{"input":{"turn_detection":{"type":"server_vad","interrupt_response":false}},"output":{"format":{"type":"audio/pcm","rate":24000}}}}}}
{"t_ms":0,"dir":"client","event":{"type":"response.create","event_id":"evt_c1"}}
{"t_ms":20,"dir":"server","event":{"type":"response.created","event_id":"event_1","response":{"id":"resp_1","status":"in_progress","output_modalities":["audio"]}}}
{"t_ms":700,"dir":"server","event":{"type":"output_audio_buffer.cleared","event_id":"event_5","response_id":"resp_1"}}
{"t_ms":730,"dir":"server","event":{"type":"response.done","event_id":"event_7","response":{"id":"resp_1","status":"completed"}}}
"#;

/// The server clears its buffer of a response that still runs, with none of its audio out, and
/// nothing asked for the clear (no speech that interrupts, no clear of the client's): judged —
/// a clear the model does not make — not skipped as the clear of a response already stopped
/// (generated session `false_alarm_server_clear_before_first_play`), which the same clear after
/// the response's done is.
#[test]
fn the_servers_clear_is_skipped_only_for_a_response_already_stopped() {
    let v = judged(SERVER_CLEAR);
    assert_eq!(found(&v), [("unexpected_output", 5)]);
    let clear = SERVER_CLEAR.lines().nth(4).unwrap();
    let after_done: String = SERVER_CLEAR
        .lines()
        .filter(|l| *l != clear)
        .chain([clear.replace("\"t_ms\":700", "\"t_ms\":740").as_str()])
        .map(|l| format!("{l}\n"))
        .collect();
    let v = judged(&after_done);
    assert!(v.findings.is_empty(), "{:?}", found(&v));
}
