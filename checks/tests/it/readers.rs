//! Rules of the dialect readers that no fixture's verdict pins on its own: what a real stack's
//! log reads as, stated as the rule it is. (Found by mutation testing: docs/TESTING.md, "Mutation testing".)

use std::path::Path;

use turnfence_checks::dialect;
use turnfence_checks::trace::{Keep, Verdict};

/// A fixture's verdict, keeping its effective trace: what the checker judged, one line per step.
fn effective(fixture: &str) -> Verdict {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures")
        .join(fixture);
    let text = crate::read(&path);
    let checked =
        dialect::check_input_keeping(text.as_bytes(), &Default::default(), Keep::Effective);
    checked.verdict.unwrap_or_else(|e| panic!("{fixture}: {e}"))
}

/// A LiveKit reply's audio is out once, at its first `speaking`: the agent speaking again after
/// a false interruption resumed it (fixture 0092) is the same audio going on, not a new delta.
#[test]
fn a_livekit_reply_speaking_again_after_a_resume_delivers_nothing_new() {
    let v = effective("accepted/0092_livekit_log_false_interruption_resumed.jsonl");
    assert!(v.conforms());
    let deltas: Vec<&String> = v
        .effective
        .iter()
        .filter(|l| l.contains(r#""input":"delta""#))
        .collect();
    assert_eq!(deltas.len(), 1, "{:#?}", v.effective);
    assert!(deltas[0].contains(r#""at":500,"#), "{}", deltas[0]);
}

/// A realtime refusal is of the create its error names (`error.event_id`); an error naming none
/// refuses the oldest create still waiting. Here the capture missed one extra create (`evt_c2`,
/// sent by another part of the app) and kept the other (`evt_c3`); the server refuses `evt_c2`
/// by its id, then `evt_c3` in an error that names no event.
#[test]
fn a_realtime_refusal_is_of_the_create_its_error_names_else_the_oldest_waiting() {
    let log = [
        r#"{"meta":{"dialect":"openai-realtime","fixture":{"expect":"accepted"}}}"#,
        r#"{"t_ms":0,"dir":"client","event":{"type":"response.create","event_id":"evt_c1"}}"#,
        r#"{"t_ms":20,"dir":"server","event":{"type":"response.created","event_id":"event_1","response":{"id":"resp_1","status":"in_progress","output_modalities":["text"]}}}"#,
        r#"{"t_ms":41,"dir":"client","event":{"type":"response.create","event_id":"evt_c3"}}"#,
        r#"{"t_ms":60,"dir":"server","event":{"type":"error","event_id":"event_e1","error":{"type":"invalid_request_error","code":"conversation_already_has_active_response","message":"Conversation already has an active response in progress: resp_1.","event_id":"evt_c2"}}}"#,
        r#"{"t_ms":61,"dir":"server","event":{"type":"error","event_id":"event_e2","error":{"type":"invalid_request_error","code":"conversation_already_has_active_response","message":"Conversation already has an active response in progress: resp_1."}}}"#,
        r#"{"t_ms":70,"dir":"server","event":{"type":"response.done","event_id":"event_2","response":{"id":"resp_1","status":"completed","status_details":null}}}"#,
    ]
    .join("\n");
    let checked =
        dialect::check_input_keeping(log.as_bytes(), &Default::default(), Keep::Effective);
    let v = checked.verdict.expect("a realtime log");
    assert!(v.conforms(), "{:#?}", v.findings);
    let refused: Vec<&str> = v
        .effective
        .iter()
        .filter(|l| l.contains(r#""output":"turn_refused""#))
        .map(|l| match (l.contains("evt_c2"), l.contains("evt_c3")) {
            (true, false) => "evt_c2",
            (false, true) => "evt_c3",
            _ => "another",
        })
        .collect();
    assert_eq!(refused, ["evt_c2", "evt_c3"], "{:#?}", v.effective);
}

/// A child shown started that the model already has, or of a turn it does not know, has no
/// hidden spawn to explain it: nothing unlogged starts a child twice or in no turn. Each is an
/// unexpected output, and the checker supplies no step for it.
#[test]
fn no_hidden_spawn_explains_a_child_started_again_or_in_no_turn() {
    let log = [
        r#"{"meta":{"dialect":"canonical","fixture":{"expect":"rejected","invariant":"unexpected_output"},"partial":true}}"#,
        r#"{"at":0,"session":"s","input":"accept","turn":"t1","generation":1,"mode":"text","deadline_ms":500}"#,
        r#"{"at":14,"session":"s","input":"spawn","turn":"t1","child":"report-build","kind":{"tool":{"name":"report.build","cancellable":true}}}"#,
        r#"{"at":14,"session":"s","output":"child_started","turn":"t1","child":"report-build"}"#,
        r#"{"at":20,"session":"s","output":"child_started","turn":"t1","child":"report-build"}"#,
        r#"{"at":21,"session":"s","output":"child_started","turn":"t9","child":"lookup"}"#,
    ]
    .join("\n");
    found_unexplained(&log, &[(5, "unexpected_output"), (6, "unexpected_output")]);
}

/// Checks a canonical trace: its findings, by line and name, are `expected`, and the checker
/// supplied no hidden step to explain any of them.
fn found_unexplained(log: &str, expected: &[(usize, &str)]) {
    let checked =
        dialect::check_input_keeping(log.as_bytes(), &Default::default(), Keep::Effective);
    let v = checked.verdict.expect("a canonical trace");
    let found: Vec<(usize, &str)> = v.findings.iter().map(|f| (f.line, f.name())).collect();
    assert_eq!(found, expected, "{:#?}", v.findings);
    assert!(v.hidden.is_empty(), "{:#?}", v.hidden);
}

/// A resume shown for a turn that is not paused has no hidden tick to explain it: only a
/// paused output resumes when its timer fires. It breaks `interruption_decided_once` (the
/// turn's interruption was decided already), and the checker supplies no step for it.
#[test]
fn no_hidden_tick_explains_a_resume_of_a_turn_not_paused() {
    let log = [
        r#"{"meta":{"dialect":"canonical","fixture":{"expect":"rejected","invariant":"interruption_decided_once"},"profile":"livekit-agents","partial":true}}"#,
        r#"{"at":0,"session":"s","input":"accept","turn":"t1","generation":1,"mode":"audio","deadline_ms":5000}"#,
        r#"{"at":10,"session":"s","input":"delta","turn":"t1","generation":1,"seq":1,"text":"Hi","frames":20}"#,
        r#"{"at":3000,"session":"s","output":"playback_resumed","turn":"t1"}"#,
    ]
    .join("\n");
    found_unexplained(&log, &[(4, "interruption_decided_once")]);
}

/// In the lab dialect a child's own component names its kind, whatever the child is called: a
/// `retriever` line's child is a retrieval, a `tts` line's a TTS buffer, a `model` line's a model
/// stream, a `tool` line's a tool by the child's name. Only a `cancel-tree` line, which speaks
/// for every kind, leaves the kind to the name (docs/MAPPING.md).
#[test]
fn a_lab_childs_own_component_names_its_kind() {
    let log = [
        r#"{"t_ms":0,"scenario":"s","turn_id":"t1","component":"turn","event":"accepted","detail":{"deadline_ms":500}}"#,
        r#"{"t_ms":1,"scenario":"s","turn_id":"t1","component":"retriever","event":"started","detail":{"child":"search-docs"}}"#,
        r#"{"t_ms":2,"scenario":"s","turn_id":"t1","component":"tts","event":"started","detail":{"child":"voice-1"}}"#,
        r#"{"t_ms":3,"scenario":"s","turn_id":"t1","component":"model","event":"started","detail":{"child":"llm"}}"#,
        r#"{"t_ms":4,"scenario":"s","turn_id":"t1","component":"tool","event":"started","detail":{"child":"model-eval","cancellable":false}}"#,
        r#"{"t_ms":5,"scenario":"s","turn_id":"t1","component":"cancel-tree","event":"child.spawned","detail":{"child":"retriever-2"}}"#,
    ];
    let kinds: Vec<String> = lab_inputs(&log, "spawn")
        .iter()
        .map(|s| format!("{} {}", s["child"], s["kind"]))
        .collect();
    assert_eq!(
        kinds,
        [
            r#""search-docs" "retrieval""#,
            r#""voice-1" "tts""#,
            r#""llm" "model""#,
            r#""model-eval" {"tool":{"name":"model-eval","cancellable":false}}"#,
            r#""retriever-2" "retrieval""#,
        ]
    );
}

/// The inputs of `kind` the checker read from a lab log of `lines` (a meta line of an accepted,
/// partial capture put first), each step as JSON; the log conforms.
fn lab_inputs(lines: &[&str], kind: &str) -> Vec<serde_json::Value> {
    let meta = r#"{"meta":{"dialect":"lab","fixture":{"expect":"accepted"},"partial":true}}"#;
    let log = std::iter::once(meta)
        .chain(lines.iter().copied())
        .collect::<Vec<_>>()
        .join("\n");
    let checked =
        dialect::check_input_keeping(log.as_bytes(), &Default::default(), Keep::Effective);
    let v = checked.verdict.expect("a lab log");
    assert!(v.conforms(), "{:#?}", v.findings);
    v.effective
        .iter()
        .filter_map(|l| {
            let json = &l[l.find('{')?..l.rfind("} [")? + 1];
            let step: serde_json::Value = serde_json::from_str(json).ok()?;
            (step["input"] == kind).then_some(step)
        })
        .collect()
}

/// The turns a lab log accepts, as the checker read them: each one's generation and mode.
fn accepted_turns(lines: &[&str]) -> Vec<String> {
    lab_inputs(lines, "accept")
        .iter()
        .map(|s| format!("{} {} {}", s["turn"], s["generation"], s["mode"]))
        .collect()
}

/// A lab turn that names no generation takes the lowest the model allows: one past every
/// generation the session used, or, after a barge-in fenced the old one off (the log naming no
/// `barge_in.accepted` generation), the generation the fence made active.
#[test]
fn a_lab_turn_naming_no_generation_takes_the_next_the_model_allows() {
    let t1_done = [
        r#"{"t_ms":0,"scenario":"s","turn_id":"t1","component":"turn","event":"accepted","detail":{"mode":"text"}}"#,
        r#"{"t_ms":5,"scenario":"s","turn_id":"t1","component":"turn","event":"completed","detail":{}}"#,
    ];
    let t2 = r#"{"t_ms":9,"scenario":"s","turn_id":"t2","component":"turn","event":"accepted","detail":{"mode":"text"}}"#;
    assert_eq!(
        accepted_turns(&[t1_done[0], t1_done[1], t2]),
        [r#""t1" 1 "text""#, r#""t2" 2 "text""#]
    );
    let after_a_barge_in = [
        r#"{"t_ms":0,"scenario":"s","turn_id":"v1","component":"turn","event":"accepted","detail":{"mode":"realtime_audio","generation":7}}"#,
        r#"{"t_ms":18,"scenario":"s","turn_id":"v1","component":"model","event":"response.audio.delta","detail":{"seq":1}}"#,
        r#"{"t_ms":70,"scenario":"s","turn_id":"v1","component":"vad","event":"input_audio.speech_started","detail":{"confidence":0.94}}"#,
        r#"{"t_ms":84,"scenario":"s","turn_id":"v1","component":"turn","event":"created_from_barge_in","detail":{"new_turn":"v2"}}"#,
    ];
    assert_eq!(
        accepted_turns(&after_a_barge_in),
        [r#""v1" 7 "audio""#, r#""v2" 8 "audio""#]
    );
    // A turn made from another takes the other's mode.
    let made_from_t1 = r#"{"t_ms":9,"scenario":"s","turn_id":"t1","component":"turn","event":"created_from_barge_in","detail":{"new_turn":"t2"}}"#;
    assert_eq!(
        accepted_turns(&[t1_done[0], t1_done[1], made_from_t1]),
        [r#""t1" 1 "text""#, r#""t2" 2 "text""#]
    );
}
