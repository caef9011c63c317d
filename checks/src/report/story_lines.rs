//! After a trace is judged: its findings' lines read again, in the stack's words — the line each
//! is decided at and the one its story starts at for the baseline's fingerprints, each story's
//! lines for the Markdown report — and the baseline applied. Only the lines needed are kept.

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufReader;
use std::path::Path;

use super::baseline::{self, Acknowledged, Entry, Matcher};
use super::markdown::MAX_STORIES;
use super::story::{self, Story, MAX_STORY_LINES};
use super::words::Said;
use crate::trace::{Finding, Reading, Verdict};

/// What the report and the baseline made of a judged trace's findings.
#[derive(Default)]
pub struct Extra {
    /// The findings the baseline acknowledges (taken out of the verdict).
    pub acknowledged: Vec<Acknowledged>,
    /// The stories of the verdict's first findings, in order.
    pub stories: Vec<Story>,
    /// Every finding as a baseline entry (with the baseline's reason, where it gave one).
    pub entries: Vec<Entry>,
}

/// What is asked of a judged trace.
pub struct Wants<'m, 'b> {
    pub stories: bool,
    pub fingerprints: bool,
    pub matcher: Option<&'m mut Matcher<'b>>,
}

/// Where a trace's lines are read again: its file, or standard input as it was kept.
pub enum Source<'a> {
    File(&'a Path),
    Kept(&'a [u8]),
}

/// Reads again what `wants` needs of the trace `name` judged as `v`, and takes the findings the
/// baseline acknowledges out of `v`.
pub fn after(
    name: &str,
    source: &Source,
    v: &mut Verdict,
    reading: &Reading,
    wants: Wants,
) -> Extra {
    let mut extra = Extra::default();
    if wants.fingerprints {
        let wanted: BTreeSet<usize> = v
            .findings
            .iter()
            .flat_map(|f| [story::first_line(f), f.line])
            .collect();
        let lines = read(name, source, &wanted, reading);
        let printed: Vec<(Finding, String)> = std::mem::take(&mut v.findings)
            .into_iter()
            .map(|f| {
                let fp = baseline::fingerprint_of(&f, &lines);
                (f, fp)
            })
            .collect();
        for (f, fp) in &printed {
            extra.entries.push(Entry {
                trace: baseline::trace_name(name).to_owned(),
                rule: f.name().to_owned(),
                line: f.line,
                fingerprint: fp.clone(),
                reason: baseline::PLACEHOLDER_REASON.to_owned(),
            });
        }
        match wants.matcher {
            Some(m) => {
                let (new, acknowledged) = m.split(name, printed);
                v.findings = new;
                // An acknowledged finding keeps its reason when the baseline is written again.
                for a in &acknowledged {
                    if let Some(e) = extra.entries.iter_mut().find(|e| {
                        e.line == a.finding.line
                            && e.rule == a.finding.name()
                            && e.reason == baseline::PLACEHOLDER_REASON
                    }) {
                        e.reason.clone_from(&a.reason);
                    }
                }
                extra.acknowledged = acknowledged;
            }
            None => v.findings = printed.into_iter().map(|(f, _)| f).collect(),
        }
    }
    if wants.stories && !v.findings.is_empty() {
        let drawn = &v.findings[..v.findings.len().min(MAX_STORIES)];
        let wanted: BTreeSet<usize> = drawn
            .iter()
            .flat_map(|f| story::wanted(f, MAX_STORY_LINES))
            .collect();
        let lines = read(name, source, &wanted, reading);
        extra.stories = drawn
            .iter()
            .map(|f| story::story(f, &lines, MAX_STORY_LINES))
            .collect();
    }
    extra
}

/// The lines `wanted` of a trace, as the stack said them; none (and a warning) if it cannot be
/// read again.
#[allow(clippy::disallowed_methods)] // The CLI reads the traces it is asked to check.
fn read(
    name: &str,
    source: &Source,
    wanted: &BTreeSet<usize>,
    reading: &Reading,
) -> BTreeMap<usize, Said> {
    if wanted.is_empty() {
        return BTreeMap::new();
    }
    let key = reading.session_key.as_deref();
    let read = match source {
        Source::Kept(bytes) => story::read_lines(*bytes, wanted, reading.dialect, key),
        Source::File(path) => std::fs::File::open(path)
            .and_then(|f| story::read_lines(BufReader::new(f), wanted, reading.dialect, key)),
    };
    read.unwrap_or_else(|e| {
        eprintln!("turnfence check: cannot read {name} again for its findings' lines: {e}");
        BTreeMap::new()
    })
}
