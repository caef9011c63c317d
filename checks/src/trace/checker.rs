//! The checker: a trace's events applied to its sessions, each session judged when it ends, the
//! verdict gathered.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{
    Conform, Event, Finding, InputError, Keep, KeepLines, MakeEvents, Meta, NotJudged, Sessions,
    Verdict,
};

/// A trace's sessions as its events left them, and the verdict so far.
pub(super) struct Checker<S: Conform> {
    pub(super) sessions: Sessions<S>,
    pub(super) verdict: Verdict,
    /// Judged as the lines come (`live`): each session that ended, with what its walk gave.
    pub(super) ended: Option<Vec<Ended>>,
    /// What keeps the trace's lines for what is said after the pass, if anything does.
    pub(super) lines: Option<Arc<dyn KeepLines>>,
    /// Each open session's first line (the lowest of its events'), where lines are kept.
    first_lines: BTreeMap<String, usize>,
    /// The reader's telling may start a story earlier than the checker found it.
    pub(super) stories_move: bool,
}

/// A session judged as its lines came, ended: its findings, and those its walk gave before.
pub(super) struct Ended {
    pub(super) session: String,
    pub(super) findings: Vec<Finding>,
    pub(super) given: Vec<Finding>,
}

impl<S: Conform> Checker<S> {
    pub(super) fn event(&mut self, event: Event<S>, line: usize) -> Result<(), InputError> {
        self.verdict.events += 1;
        if self.lines.is_some() {
            if let Some(session) = opening(&event) {
                self.first_lines
                    .entry(session.to_owned())
                    .and_modify(|first| *first = (*first).min(line))
                    .or_insert(line);
            }
        }
        match event {
            Event::Meta(meta) if line == 1 => self.meta(&meta),
            Event::Meta(_) => Err(InputError::at(
                line,
                "a meta line may only be the first line",
            )),
            Event::Input { session, input } => {
                let s = self.sessions.get(&session, line)?;
                s.advance(S::at(&input), line)?;
                s.input(input, line);
                s.held(line)?;
                self.open_peak();
                Ok(())
            }
            Event::Output {
                session,
                at,
                observed,
            } => {
                let s = self.sessions.get(&session, line)?;
                s.advance(at, line)?;
                s.output(&observed, at, line);
                s.held(line)?;
                self.open_peak();
                Ok(())
            }
            Event::Fact { session, at, fact } => {
                let s = self.sessions.get(&session, line)?;
                s.advance(at, line)?;
                s.fact(&fact, line);
                Ok(())
            }
            Event::End { session } => {
                self.end(&session, Some(line));
                Ok(())
            }
            Event::Begin { session, machine } => {
                if self.sessions.open.contains_key(&session) {
                    return Err(InputError::at(
                        line,
                        format!("session {session:?} is already open: its options come first"),
                    ));
                }
                let fresh = std::mem::replace(&mut self.sessions.fresh, machine);
                let opened = self.sessions.get(&session, line).map(|_| ());
                self.sessions.fresh = fresh;
                opened?;
                self.open_peak();
                Ok(())
            }
            Event::Held { line, event } => {
                self.verdict.events -= 1;
                self.event(*event, line)
            }
            Event::NotJudged {
                session,
                rule,
                ids,
                needs,
            } => {
                self.verdict.not_judged.push(NotJudged {
                    line,
                    session,
                    rule,
                    ids,
                    needs,
                });
                Ok(())
            }
        }
    }

    fn open_peak(&mut self) {
        self.verdict.peak_open_sessions = self
            .verdict
            .peak_open_sessions
            .max(self.sessions.open.len());
    }

    /// The meta line: `complete`, the output kinds the log records completely, and `partial`,
    /// a capture that may end with turns unfinished; the rest is read elsewhere (`machine`,
    /// `dialect`) or by the fixture tests (`expect`, `invariant`, …). A key it does not know is
    /// an input error, like any other line's.
    fn meta(&mut self, meta: &serde_json::Value) -> Result<(), InputError> {
        let meta: Meta = serde_json::from_value(meta.clone())
            .map_err(|e| InputError::at(1, format!("meta line: {e}")))?;
        self.sessions.partial = meta.partial;
        let Some(kinds) = meta.complete else {
            return Ok(());
        };
        for k in &kinds {
            let probe = serde_json::json!({ "output": k });
            let known = serde_json::from_value::<S::Output>(probe)
                .err()
                .is_none_or(|e| !e.to_string().starts_with("unknown variant"));
            if !known {
                return Err(InputError::at(
                    1,
                    format!("`complete` names an unknown output kind {k:?}"),
                ));
            }
        }
        self.sessions.complete = kinds;
        Ok(())
    }

    /// A session still open at the end of the input: judged as [`Checker::conclude`] judges it.
    pub(super) fn end_session(&mut self, session: &str) {
        self.end(session, None);
    }

    /// A session is over: judge it and drop its state. A later line naming it opens a new one.
    fn end(&mut self, session: &str, line: Option<usize>) {
        if let Some(s) = self.sessions.open.remove(session) {
            self.verdict.sessions += 1;
            if self.sessions.keep == Keep::Effective {
                self.verdict.effective.extend(s.effective());
                self.verdict.hidden.extend(s.hidden_kept().iter().cloned());
            }
            let given = s.given().to_vec();
            let not_judged = &self.verdict.not_judged;
            let judged: Vec<Finding> = s
                .finish(line)
                .into_iter()
                .filter(|f| !not_judged.iter().any(|n| n.covers(f)))
                .collect();
            if let Some(lines) = &self.lines {
                let first = self.first_lines.remove(session);
                for f in &judged {
                    let span = first
                        .filter(|_| self.stories_move)
                        .map(|first| (first, f.line));
                    lines.found(f, span);
                }
            }
            match &mut self.ended {
                None => self.verdict.findings.extend(judged),
                Some(ended) => ended.push(Ended {
                    session: session.to_owned(),
                    findings: judged,
                    given,
                }),
            }
        }
    }
}

impl<S: Conform> Checker<S> {
    /// A fresh checker: each session starts as `fresh`.
    pub(super) fn new(keep: Keep, fresh: S) -> Checker<S> {
        let mut c = Checker::<S> {
            sessions: Sessions::default(),
            verdict: Verdict::default(),
            ended: None,
            lines: None,
            first_lines: BTreeMap::new(),
            stories_move: false,
        };
        c.sessions.keep = keep;
        c.sessions.fresh = fresh;
        c
    }

    /// `records` made into events by `events`, each applied; `buf` is emptied and used again.
    pub(super) fn records<R, E: MakeEvents<S, R>>(
        &mut self,
        events: &mut E,
        records: impl IntoIterator<Item = (usize, R)>,
        buf: &mut Vec<Event<S>>,
    ) -> Result<(), InputError> {
        for (line, record) in records {
            events.events(record, line, &self.sessions, buf)?;
            for event in buf.drain(..) {
                self.event(event, line)?;
            }
        }
        Ok(())
    }

    /// Every record before `read_low` (the first line the reading may still make records of) is
    /// judged: the lines before it and before every open session's first line are needed by no
    /// finding still to come.
    pub(super) fn settle(&self, read_low: usize) {
        if let Some(lines) = &self.lines {
            let open = self.first_lines.values().copied().min();
            lines.settled(open.map_or(read_low, |first| first.min(read_low)));
        }
    }

    /// The end of a trace of `lines` lines, every one read and applied: the sessions still open
    /// are judged.
    pub(super) fn conclude(mut self, lines: usize) -> Verdict {
        self.verdict.lines = lines;
        let open: Vec<String> = self.sessions.open.keys().cloned().collect();
        for s in open {
            self.end(&s, None);
        }
        self.verdict.findings.sort_by_key(|f| f.line);
        self.verdict
    }
}

/// The session an event opens or carries on (none: the meta line, and a rule left unjudged, which
/// opens no session).
fn opening<S: Conform>(event: &Event<S>) -> Option<&str> {
    match event {
        Event::Meta(_) | Event::NotJudged { .. } | Event::End { .. } => None,
        Event::Held { event, .. } => opening(event),
        Event::Input { session, .. }
        | Event::Output { session, .. }
        | Event::Fact { session, .. }
        | Event::Begin { session, .. } => Some(session),
    }
}
