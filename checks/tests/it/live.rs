//! The live monitor: a log fed line by line gives the findings `check` gives the whole file.

use std::path::PathBuf;

use turnfence_checks::trace::{self, live};

use crate::{fixtures, interop_corpus, read};

/// Every log `check` reads without an input error: the accepted and rejected fixtures and the
/// interop corpus.
fn logs() -> Vec<PathBuf> {
    let mut logs = fixtures("accepted");
    logs.extend(fixtures("rejected"));
    logs.extend(interop_corpus());
    logs
}

/// A finding's place and name, what a comparison of two verdicts holds equal.
fn key(f: &trace::Finding) -> String {
    format!(
        "{} {} {} {:?} {} {:?} {}",
        f.line,
        f.session,
        f.name(),
        f.ids,
        f.at,
        f.since,
        f.message
    )
}

#[test]
fn a_log_fed_line_by_line_gives_the_findings_of_the_whole_file() {
    let mut early = 0;
    let mut withdrawn = 0;
    let mut all = 0;
    let mut compared = 0;
    for path in logs() {
        let text = read(&path);
        let name = path.display().to_string();
        let checked = trace::check_input(text.as_bytes(), &Default::default());
        let (Some(reading), Ok(verdict)) = (checked.reading, checked.verdict) else {
            continue;
        };
        let mut monitor = live::Monitor::new(&reading).unwrap();
        for (i, line) in text.lines().enumerate() {
            for r in monitor.feed(line, i as u64) {
                if let live::Report::InputError { error, .. } = r {
                    panic!("{name}: {error}");
                }
            }
        }
        let (_, summary) = monitor.finish();
        let mut offline: Vec<String> = verdict.findings.iter().map(key).collect();
        let mut online: Vec<String> = summary.findings.iter().map(key).collect();
        offline.sort();
        online.sort();
        assert_eq!(online, offline, "{name}");
        early += summary.given_early;
        withdrawn += summary.withdrawn;
        all += summary.finding_count;
        compared += 1;
    }
    eprintln!(
        "{compared} logs: {all} findings, {early} given at their line, {withdrawn} withdrawn"
    );
    assert!(compared > 250);
}

/// `lines` fed to a monitor of the reading their first line names, then finished: every report,
/// and the summary.
fn fed(lines: &[&str]) -> (Vec<live::Report>, live::Summary) {
    let reading = trace::reading(lines[0], &Default::default()).unwrap();
    let mut monitor = live::Monitor::new(&reading).unwrap();
    let mut reports = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        reports.extend(monitor.feed(line, i as u64));
    }
    let (end, summary) = monitor.finish();
    reports.extend(end);
    (reports, summary)
}

#[test]
fn the_lines_of_a_session_not_judged_are_counted_once_each() {
    // A Pipecat log whose pipeline stops being judged at its sixth line: each later line makes
    // several events, and is one line not read.
    let path = crate::interop_corpus()
        .into_iter()
        .find(|p| p.ends_with("pipecat@0.0.84/tool_through_interruption.jsonl"))
        .unwrap();
    let text = read(&path);
    let mut lines: Vec<&str> = text.lines().collect();
    lines[5] = "1e400";
    let (_, summary) = fed(&lines);
    assert_eq!(summary.input_error_count, 1);
    assert!(summary.lines_not_read > 0);
    assert!(
        summary.lines_not_read <= lines.len() - 6,
        "{} lines not read of {}",
        summary.lines_not_read,
        lines.len() - 6
    );
}

#[test]
fn a_bad_line_of_a_session_already_not_judged_stops_no_other() {
    let lines = [
        r#"{"at":0,"session":"a","input":"accept","turn":"t1","generation":1,"mode":"text"}"#,
        r#"{"at":0,"session":"b","input":"accept","turn":"t1","generation":1,"mode":"text"}"#,
        r#"{"at":1e400,"session":"b","input":"tick"}"#,
        r#"{"at":1e400,"session":"b","input":"tick"}"#,
        r#"{"at":2,"session":"a","input":"tick"}"#,
    ];
    let (reports, summary) = fed(&lines);
    let stopped: Vec<(usize, Vec<String>)> = reports
        .iter()
        .filter_map(|r| match r {
            live::Report::InputError { error, sessions } => Some((error.line, sessions.clone())),
            _ => None,
        })
        .collect();
    let b = vec!["b".to_owned()];
    assert_eq!(stopped, [(3, b.clone()), (4, b)]);
    // `b` is said not judged once, and `a` is judged to its end.
    let not_judged: Vec<&str> = summary
        .not_judged
        .iter()
        .map(|n| n.session.as_str())
        .collect();
    assert_eq!(not_judged, ["b"]);
    assert_eq!(summary.sessions, 2);
}
