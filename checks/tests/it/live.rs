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
