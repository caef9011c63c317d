//! A log judged as it is written: [`Monitor::feed`] takes one line and gives what it decides.
//!
//! Every dialect's reader is used as `check` uses it; each session is judged as its lines come
//! (`conform/live.rs`), so a finding is given at the line that decides it, and what only a
//! session's end decides (a turn left open, an output a complete log never showed, the invariants
//! judged at the end) when the session ends. The verdict of a session is the one `check` gives:
//! at its end, what the walk had not given is given, and what it gave that the end does not hold
//! is withdrawn, saying so.
//!
//! A live monitor never stops on a line. A line it cannot read is an input error for the session
//! it belongs to (the one session whose name it holds, open or not judged since an earlier bad
//! line, else every open session), whose remaining rules are then not judged: its later lines are
//! counted, not read, until it ends. A session silent longer than the caller's idle time
//! ([`Monitor::expire`]) is ended without its end-of-session rules: they are reported not judged,
//! never as findings. Memory follows the sessions open: a session's state is dropped when it
//! ends, and the findings kept for the summary are capped ([`KEPT`]).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::trace::conform::same;
use crate::trace::live::LiveJudge;
pub use crate::trace::live::Report;
use crate::trace::{limits, Finding, InputError, NotJudged, Reading};

pub mod run;
pub mod tail;

/// Findings, not-judged rules and input errors a summary keeps, of each; the rest are counted.
pub const KEPT: usize = 10_000;

/// What a live monitor saw, at its end (or when asked).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub lines: usize,
    /// Sessions ended (by their log, for their silence, or at the end of input).
    pub sessions: usize,
    pub peak_open_sessions: usize,
    /// The findings (the first [`KEPT`]), each as the session's end holds it.
    pub findings: Vec<Finding>,
    /// How many findings in all, and of each name.
    pub finding_count: usize,
    pub counts: BTreeMap<&'static str, usize>,
    /// Findings given at the line that decided them, before their session ended.
    pub given_early: usize,
    /// Findings given before their session ended and withdrawn at its end.
    pub withdrawn: usize,
    pub not_judged: Vec<NotJudged>,
    pub not_judged_count: usize,
    pub input_errors: Vec<InputError>,
    pub input_error_count: usize,
    /// Sessions ended for their silence.
    pub expired: usize,
    /// Lines of sessions not judged any more (after an input error, or their silence), counted.
    pub lines_not_read: usize,
}

impl Summary {
    /// Whether no finding was given.
    pub fn conforms(&self) -> bool {
        self.finding_count == 0
    }

    fn add(&mut self, report: &Report) {
        match report {
            Report::Finding(f) => {
                self.finding_count += 1;
                *self.counts.entry(f.name()).or_default() += 1;
                if self.findings.len() < KEPT {
                    self.findings.push(f.clone());
                }
            }
            Report::Withdrawn(f) => {
                self.withdrawn += 1;
                self.finding_count -= 1;
                if let Some(n) = self.counts.get_mut(f.name()) {
                    *n -= 1;
                }
                self.findings.retain(|g| !same(g, f));
            }
            Report::NotJudged(n) => {
                self.not_judged_count += 1;
                if self.not_judged.len() < KEPT {
                    self.not_judged.push(n.clone());
                }
            }
            Report::InputError { error, .. } => {
                self.input_error_count += 1;
                if self.input_errors.len() < KEPT {
                    self.input_errors.push(error.clone());
                }
            }
        }
    }
}

/// A log judged line by line, in any dialect.
pub struct Monitor {
    judge: LiveJudge,
    summary: Summary,
    /// The line fed last.
    line: usize,
    /// When each open session last had a line, in the caller's milliseconds.
    heard: BTreeMap<String, u64>,
}

impl Monitor {
    /// A monitor of a log read as `read` says (its dialect, machine and profile).
    pub fn new(read: &Reading) -> Result<Monitor, InputError> {
        let judge = read.dialect.entry().reader(read)?.live();
        Ok(Monitor {
            judge,
            summary: Summary::default(),
            line: 0,
            heard: BTreeMap::new(),
        })
    }

    /// The next line of the log (its line ending cut), read at `now` (milliseconds on any clock
    /// the caller keeps, for [`Monitor::expire`]): what it decides.
    pub fn feed(&mut self, text: &str, now: u64) -> Vec<Report> {
        self.line += 1;
        let mut reports = Vec::new();
        if text.len() > limits::MAX_LINE_BYTES {
            let error = limits::line_too_long(self.line, text.len());
            reports.extend(self.judge.0.broken(error, text));
        } else if text.trim().is_empty() {
            reports.push(Report::InputError {
                error: InputError::at(self.line, "empty line"),
                sessions: Vec::new(),
            });
        } else {
            reports.extend(self.judge.0.line(text, self.line));
        }
        for s in self.judge.0.touched() {
            self.heard.insert(s, now);
        }
        self.ended();
        self.tally(&reports);
        reports
    }

    /// The next line as bytes: text that is not UTF-8 is an input error at its line.
    pub fn feed_bytes(&mut self, bytes: &[u8], now: u64) -> Vec<Report> {
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        match std::str::from_utf8(bytes) {
            Ok(text) if self.line == 0 => self.feed(text.trim_start_matches('\u{feff}'), now),
            Ok(text) => self.feed(text, now),
            Err(e) => {
                self.line += 1;
                let error = InputError::at(self.line, format!("not UTF-8 text: {e}"));
                let text = String::from_utf8_lossy(bytes);
                let reports = self.judge.0.broken(error, &text);
                self.tally(&reports);
                reports
            }
        }
    }

    /// Sessions without a line since `now - idle` are ended: what they decided stands, and their
    /// end-of-session rules are not judged. A later line of one is not read.
    pub fn expire(&mut self, now: u64, idle: u64) -> Vec<Report> {
        let silent: Vec<String> = self
            .heard
            .iter()
            .filter(|(_, at)| now.saturating_sub(**at) > idle)
            .map(|(s, _)| s.clone())
            .collect();
        let mut reports = Vec::new();
        for s in silent {
            self.heard.remove(&s);
            reports.extend(self.judge.0.expire(&s, idle));
        }
        self.ended();
        self.tally(&reports);
        reports
    }

    /// The end of the input: the sessions still open are judged.
    pub fn finish(mut self) -> (Vec<Report>, Summary) {
        let reports = self.judge.0.finish();
        self.heard.clear();
        self.tally(&reports);
        let mut summary = self.summary;
        summary.lines = self.line;
        (reports, summary)
    }

    /// What the monitor saw so far.
    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    /// The sessions open now.
    pub fn open_sessions(&self) -> usize {
        self.judge.0.open()
    }

    fn ended(&mut self) {
        for s in self.judge.0.ended_since() {
            self.heard.remove(&s);
        }
    }

    fn tally(&mut self, reports: &[Report]) {
        for r in reports {
            self.summary.add(r);
        }
        for f in self.judge.0.settled() {
            if let Some(kept) = self.summary.findings.iter_mut().find(|g| same(g, &f)) {
                *kept = f;
            }
        }
        let counts = self.judge.0.counts();
        self.summary.sessions = counts.sessions;
        self.summary.peak_open_sessions = counts.peak_open;
        self.summary.lines_not_read = counts.not_read;
        self.summary.given_early = counts.given_early;
        self.summary.expired = counts.expired;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(line: usize) -> Finding {
        crate::trace::live::tests::finding(line, Vec::new())
    }

    #[test]
    fn a_withdrawn_finding_leaves_the_summary_as_if_never_given() {
        let mut s = Summary::default();
        s.add(&Report::Finding(finding(3)));
        s.add(&Report::Finding(finding(7)));
        s.add(&Report::Withdrawn(finding(3)));
        assert_eq!((s.finding_count, s.withdrawn), (1, 1));
        assert_eq!(s.counts.get("no_late_delivery"), Some(&1));
        assert_eq!(s.findings, [finding(7)]);
        assert!(!s.conforms());
        s.add(&Report::Withdrawn(finding(7)));
        assert!(s.conforms());
    }

    #[test]
    fn a_summary_keeps_the_first_findings_rules_and_errors_and_counts_the_rest() {
        let mut s = Summary::default();
        let not_judged = NotJudged {
            line: 1,
            session: "s".into(),
            rule: "left_open",
            ids: Vec::new(),
            needs: "its end".into(),
        };
        for line in 0..=KEPT {
            s.add(&Report::Finding(finding(line)));
            s.add(&Report::NotJudged(not_judged.clone()));
            s.add(&Report::InputError {
                error: InputError::at(line, "bad"),
                sessions: Vec::new(),
            });
        }
        assert_eq!(s.findings.len(), KEPT);
        assert_eq!(s.not_judged.len(), KEPT);
        assert_eq!(s.input_errors.len(), KEPT);
        assert_eq!(s.finding_count, KEPT + 1);
        assert_eq!(s.not_judged_count, KEPT + 1);
        assert_eq!(s.input_error_count, KEPT + 1);
        assert_eq!(s.findings.last().map(|f| f.line), Some(KEPT - 1));
    }
}
