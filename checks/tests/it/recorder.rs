//! The recorder: `tracing` events as canonical lines — the field mapping, the meta line, a
//! malformed event reported and not written — and the tokio turn manager of its example
//! (`checks/examples/tokio_turn_manager/`, run in-process here) recorded and held to `check`,
//! with and without its planted bug (judged as it is written: `recorder_live.rs`).

use std::collections::BTreeSet;
use std::io::{self, Write};
use std::process::Command;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use turnfence_checks::dialect;
use turnfence_checks::recorder::{ManualClock, Recorder, SharedBuffer};
use turnfence_checks::trace::{Machine, Verdict};

#[path = "../../examples/tokio_turn_manager/main.rs"]
#[allow(dead_code)] // Its `main` is the example's own.
pub(crate) mod tokio_turn_manager;

use tokio_turn_manager::Bug;

/// The lines written so far.
fn lines(buffer: &SharedBuffer) -> Vec<String> {
    buffer.contents().lines().map(str::to_owned).collect()
}

/// A recorded trace as `turnfence check` judges it (reading its meta line).
pub(crate) fn checked(text: &str) -> Verdict {
    let checked = dialect::check_input(text.as_bytes(), &Default::default());
    checked
        .verdict
        .unwrap_or_else(|e| panic!("not a trace: {e}\n{text}"))
}

#[test]
fn fields_become_the_canonical_line() {
    let (trace, clock) = (SharedBuffer::new(), ManualClock::new());
    let scoped = Recorder::new(trace.clone(), clock.clone()).install_scoped();
    let turn = String::from("t1");
    let budget = r#"{"retrieval_ms":100,"model_ms":300,"reserve_ms":100}"#;
    tracing::info!(target: "turnfence", session = "call-7", input = "accept", turn = turn.as_str(),
        generation = 1, mode = "text", deadline_ms = 500, budget_json = budget);
    clock.advance(3);
    tracing::info!(target: "turnfence", session = "call-7", input = "spawn", turn = %turn,
        child = "lookup", kind.tool.name = "order_lookup", kind.tool.cancellable = true);
    tracing::info!(target: "turnfence", session = "call-7", input = "spawn", turn = %turn,
        child = "llm", kind = "model", need_ms = None::<u64>);
    clock.set(40);
    tracing::info!(target: "turnfence", session = "call-7", input = "child_completed",
        turn = "t1", child = "lookup");
    clock.set(61);
    // The kind may come after other fields, `session` last, a message beside them.
    tracing::info!(target: "turnfence", turn = "t1", input = "delta", generation = 1u64, seq = 1,
        text = "Storage ", session = "call-7", "the model's first piece");
    tracing::info!(target: "turnfence", session = "call-7", output = "delivered", turn = "t1",
        generation = 1, seq = 1);
    tracing::info!(
        session = "call-7",
        input = "tick",
        "another target: not recorded"
    );
    clock.set(75);
    tracing::warn!(target: "turnfence", session = "call-7", input = "stop", turn = "t1",
        request_id = "r1");
    tracing::info!(target: "turnfence", session = "call-7", output = "stop_answered", turn = "t1",
        request_id = "r1", answer = "requested");
    clock.set(80);
    tracing::info!(target: "turnfence", session = "call-7", input = "checkpoint", turn = "t1",
        child = "llm", phase = "before_decode");
    tracing::info!(target: "turnfence", session = "call-7", output = "terminal", turn = "t1",
        state = "cancelled");
    clock.set(85);
    tracing::info!(target: "turnfence", session = "call-7", input = "stop", turn = "t1",
        request_id = "r2");
    tracing::info!(target: "turnfence", session = "call-7", output = "stop_answered", turn = "t1",
        request_id = "r2", answer.already_terminal.state = "cancelled");
    clock.set(88);
    tracing::info!(target: "turnfence", session = "call-7", input = "speech_started",
        confidence = 0.92);
    clock.set(90);
    tracing::info!(target: "turnfence", session = "call-7", session_end = true);

    let want = [
        r#"{"at":0,"session":"call-7","input":"accept","turn":"t1","generation":1,"mode":"text","deadline_ms":500,"budget":{"retrieval_ms":100,"model_ms":300,"reserve_ms":100}}"#,
        r#"{"at":3,"session":"call-7","input":"spawn","turn":"t1","child":"lookup","kind":{"tool":{"name":"order_lookup","cancellable":true}}}"#,
        r#"{"at":3,"session":"call-7","input":"spawn","turn":"t1","child":"llm","kind":"model"}"#,
        r#"{"at":40,"session":"call-7","input":"child_completed","turn":"t1","child":"lookup"}"#,
        r#"{"at":61,"session":"call-7","input":"delta","turn":"t1","generation":1,"seq":1,"text":"Storage "}"#,
        r#"{"at":61,"session":"call-7","output":"delivered","turn":"t1","generation":1,"seq":1}"#,
        r#"{"at":75,"session":"call-7","input":"stop","turn":"t1","request_id":"r1"}"#,
        r#"{"at":75,"session":"call-7","output":"stop_answered","turn":"t1","request_id":"r1","answer":"requested"}"#,
        r#"{"at":80,"session":"call-7","input":"checkpoint","turn":"t1","child":"llm","phase":"before_decode"}"#,
        r#"{"at":80,"session":"call-7","output":"terminal","turn":"t1","state":"cancelled"}"#,
        r#"{"at":85,"session":"call-7","input":"stop","turn":"t1","request_id":"r2"}"#,
        r#"{"at":85,"session":"call-7","output":"stop_answered","turn":"t1","request_id":"r2","answer":{"already_terminal":{"state":"cancelled"}}}"#,
        r#"{"at":88,"session":"call-7","input":"speech_started","confidence":0.92}"#,
        r#"{"at":90,"session":"call-7","session_end":true}"#,
    ];
    assert_eq!(lines(&trace), want);
    assert_eq!(scoped.recording.lines(), want.len());
    assert_eq!(scoped.recording.rejected(), 0);
    let verdict = checked(&trace.contents());
    assert!(verdict.conforms(), "{:?}", verdict.findings);
    assert_eq!((verdict.lines, verdict.sessions), (want.len(), 1));
}

#[test]
fn a_malformed_event_is_reported_and_not_written() {
    let (trace, report) = (SharedBuffer::new(), SharedBuffer::new());
    let scoped = Recorder::new(trace.clone(), ManualClock::new())
        .report_to(report.clone())
        .install_scoped();
    let unknown_field = line!() + 1;
    tracing::info!(target: "turnfence", input = "delta", turn = "t1", generation = 1, seq = 1, colour = "blue");
    tracing::info!(target: "turnfence", input = "stop", turn = "t1");
    tracing::info!(target: "turnfence", input = "accept", turn = "t1", generation = -1);
    tracing::info!(target: "turnfence", input = "accept", turn = "t1", generation = 1, budget_json = "{not json");
    tracing::info!(target: "turnfence", turn = "t1", generation = 1);
    tracing::info!(target: "turnfence", input = "tick", at = 5);
    tracing::info!(target: "turnfence", input = "spawn", turn = "t1", child = "c", kind = "model", kind.tool.name = "x");
    tracing::info!(target: "turnfence", input = "accept", turn = "t1", generation = 1);

    // The well-formed event alone is written; the host went on after each malformed one.
    assert_eq!(
        lines(&trace),
        [r#"{"at":0,"input":"accept","turn":"t1","generation":1}"#]
    );
    let rejections = scoped.recording.rejections();
    assert_eq!(scoped.recording.rejected(), 7, "{rejections:#?}");
    let whys = [
        "unknown field `colour`",
        "missing field `request_id`",
        "field `generation`: expected a non-negative integer, got -1",
        "field `budget_json`: not JSON text",
        "a `turnfence` event needs `input`, `output` or `session_end`",
        "`at` is the recorder's clock",
        "field `kind.tool.name`: `kind` already has a value",
    ];
    for (rejection, why) in rejections.iter().zip(whys) {
        assert!(
            rejection.contains(why),
            "{rejection:?} does not say {why:?}"
        );
    }
    // Each is reported as one line naming the event's source line.
    let report = report.contents();
    let reported: Vec<&str> = report.lines().collect();
    assert_eq!(reported.len(), 7, "{report}");
    let first = format!("recorder.rs:{unknown_field}: not recorded: input line: ");
    assert!(
        reported[0].starts_with("turnfence recorder: event at ") && reported[0].contains(&first),
        "{}",
        reported[0]
    );
}

#[test]
fn the_meta_line_comes_first_when_asked_for() {
    let (trace, report) = (SharedBuffer::new(), SharedBuffer::new());
    let scoped = Recorder::new(trace.clone(), ManualClock::new())
        .complete(["delivered", "terminl", "terminal"])
        .partial()
        .report_to(report.clone())
        .install_scoped();
    // Written when installed, before any event; the unknown kind reported and left out.
    assert_eq!(
        lines(&trace),
        [r#"{"meta":{"complete":["delivered","terminal"],"partial":true}}"#]
    );
    assert_eq!(scoped.recording.rejected(), 1);
    assert!(
        report
            .contents()
            .contains("unknown output kind \"terminl\""),
        "{}",
        report.contents()
    );
    tracing::info!(target: "turnfence", input = "accept", turn = "t1", generation = 1);
    assert_eq!(lines(&trace).len(), 2);
    // Partial: the turn left running is no finding.
    assert!(checked(&trace.contents()).conforms());

    // No meta line unless asked for.
    let plain = SharedBuffer::new();
    let _scoped = Recorder::new(plain.clone(), ManualClock::new()).install_scoped();
    assert_eq!(plain.contents(), "");
}

#[test]
fn a_fence_recorder_validates_against_the_fence_machine() {
    let (trace, report) = (SharedBuffer::new(), SharedBuffer::new());
    let scoped = Recorder::new(trace.clone(), ManualClock::new())
        .machine(Machine::Fence)
        .report_to(report)
        .install_scoped();
    tracing::info!(target: "turnfence", session = "s", input = "worker_start", worker = "w",
        path = "pooled", task = "root-1", root = "root-1");
    tracing::info!(target: "turnfence", session = "s", input = "delta", turn = "t1",
        generation = 1, seq = 1);
    assert_eq!(
        lines(&trace),
        [
            r#"{"meta":{"machine":"fence"}}"#,
            r#"{"at":0,"session":"s","input":"worker_start","worker":"w","path":"pooled","task":"root-1","root":"root-1"}"#,
        ]
    );
    assert_eq!(scoped.recording.rejected(), 1);
    assert!(checked(&trace.contents()).conforms());
}

/// A writer that fails every write.
struct Broken;

impl Write for Broken {
    fn write(&mut self, _: &[u8]) -> io::Result<usize> {
        Err(io::Error::other("disk full"))
    }

    fn flush(&mut self) -> io::Result<()> {
        Err(io::Error::other("disk full"))
    }
}

#[test]
fn a_failing_writer_is_counted_not_panicked_on() {
    let report = SharedBuffer::new();
    let scoped = Recorder::new(Broken, ManualClock::new())
        .report_to(report.clone())
        .install_scoped();
    tracing::info!(target: "turnfence", input = "accept", turn = "t1", generation = 1);
    assert_eq!(
        (scoped.recording.lines(), scoped.recording.rejected()),
        (0, 1)
    );
    assert!(report.contents().contains("the writer failed: disk full"));
}

#[test]
fn install_records_every_thread() {
    // The one process-wide default of this test binary; every other test installs for its
    // thread alone, which takes precedence there. It judges: its warning is dispatched from
    // inside its own `on_event`, after its lock is released, so it neither waits on that lock
    // nor is recorded.
    let trace = SharedBuffer::new();
    let clock = ManualClock::new();
    let found = Arc::new(Mutex::new(Vec::new()));
    let calls = Arc::clone(&found);
    let recording = Recorder::new(trace.clone(), clock.clone())
        .on_finding(move |f| calls.lock().unwrap().push((f.line, f.name())))
        .install()
        .expect("no default yet");
    clock.set(7);
    std::thread::spawn(|| {
        tracing::info!(target: "turnfence", session = "elsewhere", input = "tick");
        tracing::info!(target: "turnfence", session = "elsewhere", output = "delivered",
            turn = "t1", generation = 1, seq = 1);
        // What no invariant explains is known at the session's end.
        tracing::info!(target: "turnfence", session = "elsewhere", session_end = true);
    })
    .join()
    .unwrap();
    assert_eq!(
        lines(&trace),
        [
            r#"{"at":7,"session":"elsewhere","input":"tick"}"#,
            r#"{"at":7,"session":"elsewhere","output":"delivered","turn":"t1","generation":1,"seq":1}"#,
            r#"{"at":7,"session":"elsewhere","session_end":true}"#,
        ]
    );
    assert_eq!(recording.rejected(), 0);
    assert_eq!(*found.lock().unwrap(), [(2, "unexpected_output")]);
}

/// The example's conversation recorded in memory, as its `main` records it to a file, without
/// judging (the recorder installed for this thread, which runs the whole single-threaded
/// runtime).
pub(crate) fn record_example(bug: Option<Bug>) -> String {
    let (runtime, start) = tokio_turn_manager::runtime();
    let trace = SharedBuffer::new();
    let scoped = Recorder::new(trace.clone(), tokio_turn_manager::virtual_ms(start))
        .complete(tokio_turn_manager::COMPLETE)
        .install_scoped();
    runtime.block_on(tokio_turn_manager::converse(bug));
    let recording = scoped.recording.clone();
    drop(scoped);
    assert_eq!(recording.rejected(), 0, "{:#?}", recording.rejections());
    trace.contents()
}

/// The trace's lines as JSON, numbered from 1.
fn numbered(text: &str) -> Vec<(usize, Value)> {
    let parse = |line: &str| serde_json::from_str(line).unwrap();
    text.lines()
        .map(parse)
        .enumerate()
        .map(|(i, v)| (i + 1, v))
        .collect()
}

/// The lines that deliver a delta of a turn after that turn's client asked it to stop.
pub(crate) fn deliveries_after_a_stop(text: &str) -> Vec<usize> {
    let mut stopped = BTreeSet::new();
    let mut late = Vec::new();
    for (line, v) in numbered(text) {
        let turn = (v["session"].to_string(), v["turn"].to_string());
        if v["input"] == "stop" {
            stopped.insert(turn);
        } else if v["output"] == "delivered" && stopped.contains(&turn) {
            late.push(line);
        }
    }
    late
}

#[test]
fn the_example_trace_conforms() {
    let text = record_example(None);
    let verdict = checked(&text);
    assert!(verdict.conforms(), "{:?}\n{text}", verdict.findings);
    assert_eq!(verdict.sessions, 1);
    // Virtual time: every run writes the same bytes.
    assert_eq!(record_example(None), text);
    // What the conversation is made of: a tool call, deltas delivered and dropped at the gate,
    // frames played, a stop, a barge-in, and each turn ended once.
    let lines = numbered(&text);
    let has = |key: &str, kind: &str| lines.iter().any(|(_, v)| v[key] == kind);
    for (key, kind) in [
        ("input", "stop"),
        ("input", "speech_started"),
        ("input", "child_completed"),
        ("output", "late_dropped"),
        ("output", "played"),
        ("output", "generation_fenced"),
    ] {
        assert!(has(key, kind), "no {key} {kind} in\n{text}");
    }
    assert!(text.contains(r#""kind":{"tool":{"name":"order_lookup","cancellable":true}}"#));
    let ends: Vec<(&str, &str)> = lines
        .iter()
        .filter(|(_, v)| v["output"] == "terminal")
        .filter_map(|(_, v)| Some((v["turn"].as_str()?, v["state"].as_str()?)))
        .collect();
    assert_eq!(
        ends,
        [
            ("t1", "completed"),
            ("t2", "cancelled"),
            ("t3", "cancelled")
        ]
    );
    assert!(deliveries_after_a_stop(&text).is_empty());
}

#[test]
fn the_late_delivery_bug_is_rejected_at_the_late_line() {
    let text = record_example(Some(Bug::LateDelivery));
    let late = deliveries_after_a_stop(&text);
    assert_eq!(late.len(), 1, "one delta delivered after the stop:\n{text}");
    let late = late[0];
    let verdict = checked(&text);
    let invariants: Vec<(usize, &str)> = verdict
        .findings
        .iter()
        .filter(|f| f.invariant.is_some())
        .map(|f| (f.line, f.name()))
        .collect();
    assert_eq!(
        invariants,
        [(late, "no_late_delivery")],
        "{:?}",
        verdict.findings
    );
    // The model's gate drops that delta: the delivery is also an output the model never gives,
    // which the invariant explains: it goes with it, not beside it.
    let names: Vec<(usize, &str)> = verdict
        .findings
        .iter()
        .map(|f| (f.line, f.name()))
        .collect();
    assert_eq!(names, [(late, "no_late_delivery")]);
    let derived: Vec<&str> = verdict.findings[0]
        .derived
        .iter()
        .map(|f| f.name())
        .collect();
    assert_eq!(derived, ["unexpected_output"]);
}

#[test]
fn turnfence_check_judges_the_example_files() {
    let dir = tempfile::tempdir().unwrap();
    for (bug, code) in [(None, 0), (Some(Bug::LateDelivery), 1)] {
        let text = record_example(bug);
        let path = dir.path().join(format!("{bug:?}.jsonl"));
        std::fs::write(&path, &text).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_turnfence"))
            .arg("check")
            .arg(&path)
            .output()
            .expect("the turnfence binary runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(code), "{stdout}");
        if let Some(&late) = deliveries_after_a_stop(&text).first() {
            let v = &numbered(&text)[late - 1].1;
            let text_of = |key: &str| v[key].as_str().unwrap_or_default().to_owned();
            let (session, turn) = (text_of("session"), text_of("turn"));
            let (at, generation, seq) = (&v["at"], &v["generation"], &v["seq"]);
            let said = format!("no_late_delivery at line {late} ({session}, {at} ms; since line ");
            assert!(stdout.contains(&said), "{said:?} not in\n{stdout}");
            let said = format!(") [{turn}, {generation}, {seq}]: ");
            assert!(stdout.contains(&said), "{said:?} not in\n{stdout}");
        } else {
            assert!(stdout.starts_with("CONFORMS: 0 findings"), "{stdout}");
        }
    }
}
