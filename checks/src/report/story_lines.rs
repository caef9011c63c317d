//! What is said of a judged trace's findings after its one pass, in the stack's words — the line
//! each is decided at and the one its story starts at for the baseline's fingerprints, each
//! story's lines for the Markdown report — from the lines the pass kept ([`Kept`]), and the
//! baseline applied. The trace is not read again.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use super::baseline::{self, Acknowledged, Entry, Matcher};
use super::markdown::MAX_STORIES;
use super::story::{self, Story, MAX_STORY_LINES};
use super::words::{said, Said};
use crate::trace::{Dialect, Finding, KeepLines, Reading, Verdict};

/// The lines of a trace a pass keeps for its findings' stories and fingerprints, each as the
/// stack said it.
///
/// **Bound:** it holds the lines from the first line of the oldest session still open (or still
/// held back by the reader), less a story's length ([`MAX_STORY_LINES`]), on — the lines read
/// ahead of the judging among them, six batches of 1 024 at most — and the lines the findings
/// already found name (a story's at most, each; where the reader's telling may move a story's
/// start, the finding's session's lines up to its own). A conforming log whose sessions end
/// keeps what its open sessions span, as the checker does, never the file; each line kept is
/// what the stack said (who to whom, the event's name, its session), not its text.
#[derive(Default)]
pub struct Kept {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// How the lines are said: the trace's dialect and its session key.
    said_as: Option<(Dialect, Option<String>)>,
    /// The lines from the first a finding still to come may name on.
    recent: BTreeMap<usize, Said>,
    /// Lines before those that a finding already found names.
    named: BTreeMap<usize, Said>,
    /// The lines the findings found so far name.
    wanted: BTreeSet<usize>,
    /// Spans of lines kept whole: a session's, up to a finding whose story its reader's
    /// telling may start anywhere in it.
    spans: Vec<(usize, usize)>,
    /// The most lines held at once.
    most: usize,
}

impl Kept {
    /// Every line kept, by number.
    pub fn lines(&self) -> BTreeMap<usize, Said> {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut lines = std::mem::take(&mut state.named);
        lines.append(&mut state.recent);
        lines
    }

    /// The most lines it held at once (its bound, measured).
    pub fn most(&self) -> usize {
        let state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        state.most
    }
}

impl KeepLines for Kept {
    fn begin(&self, reading: &Reading) {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        state.said_as = Some((reading.dialect, reading.session_key.clone()));
    }

    fn line(&self, line: usize, text: &str) {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (dialect, key) = state
            .said_as
            .clone()
            .unwrap_or((crate::dialect::CANONICAL, None));
        let s = said(dialect, key.as_deref(), text);
        state.recent.insert(line, s);
        state.most = state.most.max(state.recent.len() + state.named.len());
    }

    fn found(&self, f: &Finding, span: Option<(usize, usize)>) {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        state
            .wanted
            .extend(story::wanted(f, MAX_STORY_LINES).chain([f.line]));
        if let Some((first, last)) = span {
            let first = first.saturating_sub(MAX_STORY_LINES - 1);
            state.spans.push((first, last));
        }
    }

    fn settled(&self, line: usize) {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let from = line.saturating_sub(MAX_STORY_LINES - 1);
        let rest = state.recent.split_off(&from);
        let before = std::mem::replace(&mut state.recent, rest);
        let State {
            named,
            wanted,
            spans,
            ..
        } = &mut *state;
        let kept =
            |n: usize| wanted.contains(&n) || spans.iter().any(|(a, b)| (*a..=*b).contains(&n));
        named.extend(before.into_iter().filter(|(n, _)| kept(*n)));
    }
}

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

/// What `wants` asks of the trace `name` judged as `v`, from the `lines` its pass kept; the
/// findings the baseline acknowledges are taken out of `v`.
pub fn after(name: &str, lines: &BTreeMap<usize, Said>, v: &mut Verdict, wants: Wants) -> Extra {
    let mut extra = Extra::default();
    if wants.fingerprints {
        let printed: Vec<(Finding, String)> = std::mem::take(&mut v.findings)
            .into_iter()
            .map(|f| {
                let fp = baseline::fingerprint_of(&f, lines);
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
        extra.stories = drawn
            .iter()
            .map(|f| story::story(f, lines, MAX_STORY_LINES))
            .collect();
    }
    extra
}
