//! The recorder judging as it writes: the tokio turn manager of its example run with its live
//! judge, the findings told at the line that decides them — to the callback and as a warning
//! event beside the recorder — and at the end what `check` finds in the written trace.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use turnfence_checks::live::Summary;
use turnfence_checks::recorder::{self, ManualClock, Recorder, SharedBuffer};
use turnfence_checks::trace::Finding;

use crate::recorder::tokio_turn_manager::{self, Bug};
use crate::recorder::{checked, deliveries_after_a_stop, record_example};

/// One run of the example: its trace, and what its live judge told as it wrote it.
struct Run {
    trace: String,
    /// Each finding the callback was called with, and the lines written when it was.
    called: Vec<(usize, Finding)>,
    /// The events of another target than `turnfence`, each with the lines written when it came.
    warnings: Vec<(usize, Warning)>,
    /// What the example's warnings layer printed.
    printed: String,
    /// The live judge's summary, at the end of the trace.
    summary: Summary,
}

/// An event as a layer beside the recorder receives it.
#[derive(Debug)]
struct Warning {
    level: Level,
    target: String,
    fields: BTreeMap<&'static str, String>,
}

/// A layer that keeps every event whose target is not the recorder's, with the lines `trace`
/// held when it came.
struct Capture {
    trace: SharedBuffer,
    kept: Arc<Mutex<Vec<(usize, Warning)>>>,
}

impl<S: Subscriber> Layer<S> for Capture {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let metadata = event.metadata();
        if metadata.target() == recorder::TARGET {
            return;
        }
        let mut fields = FieldText::default();
        event.record(&mut fields);
        let warning = Warning {
            level: *metadata.level(),
            target: metadata.target().to_owned(),
            fields: fields.0,
        };
        let lines = self.trace.contents().lines().count();
        self.kept.lock().unwrap().push((lines, warning));
    }
}

/// An event's fields as text, by name.
#[derive(Default)]
struct FieldText(BTreeMap<&'static str, String>);

impl Visit for FieldText {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name(), format!("{value:?}"));
    }
}

/// The example's conversation recorded in memory, as its `main` records it to a file: its
/// recorder, judging, beside its warnings layer and a layer that captures the warnings, installed
/// for this thread, which runs the whole single-threaded runtime.
fn run_example(bug: Option<Bug>) -> Run {
    let (runtime, start) = tokio_turn_manager::runtime();
    let (trace, printed) = (SharedBuffer::new(), SharedBuffer::new());
    let called = Arc::new(Mutex::new(Vec::new()));
    let (calls, written) = (Arc::clone(&called), trace.clone());
    let recorder = tokio_turn_manager::recorder(trace.clone(), start, move |f| {
        let lines = written.contents().lines().count();
        calls.lock().unwrap().push((lines, f.clone()));
    });
    let recording = recorder.recording();
    let capture = Capture {
        trace: trace.clone(),
        kept: Arc::default(),
    };
    let warnings = Arc::clone(&capture.kept);
    let subscriber = tracing_subscriber::registry()
        .with(recorder)
        .with(tokio_turn_manager::Warnings::to(printed.clone()))
        .with(capture);
    let summary = tracing::subscriber::with_default(subscriber, || {
        runtime.block_on(tokio_turn_manager::converse(bug));
        recording
            .finish_judging()
            .expect("the example's recorder judges")
    });
    assert_eq!(recording.rejected(), 0, "{:#?}", recording.rejections());
    Run {
        trace: trace.contents(),
        called: taken(&called),
        warnings: taken(&warnings),
        printed: printed.contents(),
        summary,
    }
}

fn taken<T>(kept: &Mutex<Vec<T>>) -> Vec<T> {
    std::mem::take(&mut *kept.lock().unwrap())
}

/// A finding's place and name, what a comparison of live and offline judging holds equal.
fn key(f: &Finding) -> String {
    let (line, session, name, ids) = (f.line, &f.session, f.name(), &f.ids);
    let (at, since, message) = (f.at, f.since, &f.message);
    format!("{line} {session} {name} {ids:?} {at} {since:?} {message}")
}

#[test]
fn the_late_delivery_is_told_live_at_its_line() {
    let run = run_example(Some(Bug::LateDelivery));
    let late = deliveries_after_a_stop(&run.trace)[0];
    let verdict = checked(&run.trace);
    // The callback: called once, with the finding, right after the late line was written.
    let called: Vec<(usize, usize, &str)> = run
        .called
        .iter()
        .map(|(lines, f)| (*lines, f.line, f.name()))
        .collect();
    assert_eq!(
        called,
        [(late, late, "no_late_delivery")],
        "{:#?}",
        run.called
    );
    // Given at its line, before the session's end attaches what it explains.
    let (_, finding) = &run.called[0];
    assert_eq!(key(finding), key(&verdict.findings[0]));
    // The warning: the same finding, in its fields, as the late line was written.
    let [(lines, warning)] = &run.warnings[..] else {
        panic!("one warning, not {:#?}", run.warnings);
    };
    assert_eq!(*lines, late);
    assert_eq!(
        (warning.level, warning.target.as_str()),
        (Level::WARN, recorder::FINDING_TARGET)
    );
    let since = finding.since.expect("a late delivery has its stop");
    let want = [
        ("at", finding.at.to_string()),
        ("ids", finding.ids.join(", ")),
        ("line", late.to_string()),
        ("message", finding.message.clone()),
        ("rule", "no_late_delivery".to_owned()),
        ("session", tokio_turn_manager::SESSION.to_owned()),
        ("since", since.to_string()),
        ("withdrawn", "false".to_owned()),
    ];
    let want: BTreeMap<&str, String> = want.into_iter().collect();
    assert_eq!(warning.fields, want);
    // The example's warnings layer printed it.
    let said = format!(
        "warning: no_late_delivery at line {late} (call-7, {} ms): ",
        finding.at
    );
    assert!(run.printed.starts_with(&said), "{}", run.printed);
    assert_eq!(run.printed.lines().count(), 1);
    // At the end: what `check` finds in the written trace, nothing withdrawn.
    let summed: Vec<String> = run.summary.findings.iter().map(key).collect();
    assert_eq!(summed, [key(&verdict.findings[0])]);
    assert_eq!((run.summary.finding_count, run.summary.withdrawn), (1, 0));
    assert_eq!(run.summary.lines, verdict.lines);
}

#[test]
fn without_the_bug_nothing_is_told() {
    let run = run_example(None);
    assert!(run.called.is_empty(), "{:#?}", run.called);
    assert!(run.warnings.is_empty(), "{:#?}", run.warnings);
    assert_eq!(run.printed, "");
    assert!(run.summary.conforms(), "{:#?}", run.summary);
    assert_eq!(run.summary.lines, run.trace.lines().count());
    // Judging writes nothing of its own: the trace is the one a recorder that does not judge
    // writes, with or without the bug.
    assert_eq!(record_example(None), run.trace);
    let with_bug = run_example(Some(Bug::LateDelivery)).trace;
    assert_eq!(record_example(Some(Bug::LateDelivery)), with_bug);
    // A recorder that does not judge has nothing to finish.
    let scoped = Recorder::new(SharedBuffer::new(), ManualClock::new()).install_scoped();
    assert_eq!(scoped.recording.finish_judging(), None);
    assert_eq!(scoped.recording.judged(), None);
}

/// Two sessions: one with a finding decided at its line (a delivery of nothing streamed), one
/// with a finding only the end decides (a turn left running).
fn record_two_findings() {
    tracing::info!(target: "turnfence", session = "s", input = "accept", turn = "t1",
        generation = 1);
    tracing::info!(target: "turnfence", session = "s", output = "delivered", turn = "t1",
        generation = 1, seq = 1);
    tracing::info!(target: "turnfence", session = "r", input = "accept", turn = "t1",
        generation = 1);
}

#[test]
fn live_findings_are_check_s_findings_of_the_written_trace() {
    for bug in [None, Some(Bug::LateDelivery)] {
        let run = run_example(bug);
        let verdict = checked(&run.trace);
        let offline: Vec<String> = verdict.findings.iter().map(key).collect();
        let told: Vec<String> = run.called.iter().map(|(_, f)| key(f)).collect();
        let summed: Vec<String> = run.summary.findings.iter().map(key).collect();
        assert_eq!((&told, &summed), (&offline, &offline), "{bug:?}");
    }
    // A finding the end decides is told when judging finishes: without a meta line, the
    // recorder's reading is `check`'s of its first event.
    let (trace, clock) = (SharedBuffer::new(), ManualClock::new());
    let called = Arc::new(Mutex::new(Vec::new()));
    let calls = Arc::clone(&called);
    let scoped = Recorder::new(trace.clone(), clock.clone())
        .on_finding(move |f| calls.lock().unwrap().push(key(f)))
        .install_scoped();
    record_two_findings();
    let early = called.lock().unwrap().clone();
    assert_eq!(early.len(), 1, "{early:?}");
    assert_eq!(scoped.recording.judged().map(|s| s.finding_count), Some(1));
    let summary = scoped.recording.finish_judging().expect("it judges");
    assert_eq!(scoped.recording.finish_judging(), None, "judging ends once");
    let verdict = checked(&trace.contents());
    let offline: Vec<String> = verdict.findings.iter().map(key).collect();
    let mut told = called.lock().unwrap().clone();
    assert_eq!(told.len(), 2, "{told:?}");
    told.sort();
    let mut sorted = offline.clone();
    sorted.sort();
    assert_eq!(told, sorted);
    assert_eq!(
        summary.findings.iter().map(key).collect::<Vec<_>>(),
        offline
    );
}
