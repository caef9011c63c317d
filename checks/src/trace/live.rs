//! The engine of a live monitor (`crate::live`), one reader at a time: its lines read and made
//! into events as `check` makes them, each session no longer judged skipped, what each line
//! decides gathered in the stack's words. The reader's type is forgotten behind [`LiveJudge`].

use std::collections::{BTreeMap, HashSet, VecDeque};

use serde::Serialize;

use super::checker::{Checker, Ended};
use super::conform::{same, Conform};
use super::{Event, Finding, InputError, Keep, MakeEvents, NotJudged, ReadLines, Reader, Verdict};

/// Sessions ended for their silence remembered, so that a line of one after it is not read as a
/// new session's (the oldest forgotten first).
const EXPIRED_KEPT: usize = 65_536;

/// What one line (or the end, or an idle session) decided.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Report {
    /// A finding, at the line that decides it (`line`); given once.
    Finding(Finding),
    /// A finding given before its session ended that its end does not hold (a later line showed
    /// an output the walk had judged as the model's, or left a rule not judged).
    Withdrawn(Finding),
    /// A rule of a session not judged: what the log would have to show.
    NotJudged(NotJudged),
    /// A line that could not be read, and the sessions whose remaining rules are therefore not
    /// judged (none: it held no event of any open session).
    InputError {
        error: InputError,
        sessions: Vec<String>,
    },
}

/// A live monitor of one reader: the live monitor's work, whatever the dialect.
pub trait Judge {
    fn line(&mut self, text: &str, line: usize) -> Vec<Report>;
    /// A line that cannot be read at all: its error, for the sessions it may belong to.
    fn broken(&mut self, error: InputError, text: &str) -> Vec<Report>;
    fn expire(&mut self, session: &str, idle: u64) -> Vec<Report>;
    fn finish(&mut self) -> Vec<Report>;
    /// The sessions the last line named.
    fn touched(&mut self) -> Vec<String>;
    /// The sessions ended since the last call.
    fn ended_since(&mut self) -> Vec<String>;
    /// Findings given before their session ended, as its end holds them (with what each
    /// explains), since the last call.
    fn settled(&mut self) -> Vec<Finding>;
    fn open(&self) -> usize;
    /// Sessions ended, the peak open at once, lines not read, findings given early.
    fn counts(&self) -> Counts;
}

/// What a [`Judge`] counts.
pub struct Counts {
    pub sessions: usize,
    pub peak_open: usize,
    pub not_read: usize,
    pub given_early: usize,
    pub expired: usize,
}

/// The [`Judge`] of one log, its reader's type forgotten.
pub struct LiveJudge(pub Box<dyn Judge + Send>);

impl LiveJudge {
    /// The judge of `reader`'s log, each session starting as `fresh`.
    pub(crate) fn new<S: Conform + 'static, R: Reader<S> + Send + 'static>(
        reader: R,
        fresh: S,
    ) -> LiveJudge {
        let mut checker = Checker::new(Keep::Findings, fresh);
        checker.sessions.live = true;
        checker.sessions.unlogged = reader.unlogged();
        checker.ended = Some(Vec::new());
        LiveJudge(Box::new(Live {
            reader,
            checker,
            records: Vec::new(),
            events: Vec::new(),
            touched: Vec::new(),
            ended: Vec::new(),
            broken: BTreeMap::new(),
            expired: Expired::default(),
            given_early: 0,
            settled: Vec::new(),
            not_read: 0,
            last_not_read: 0,
        }))
    }
}

/// Sessions ended for their silence, the oldest forgotten first.
#[derive(Default)]
struct Expired {
    names: HashSet<String>,
    order: VecDeque<String>,
    /// How many were forgotten.
    forgotten: usize,
}

impl Expired {
    fn insert(&mut self, s: &str) {
        if self.names.insert(s.to_owned()) {
            self.order.push_back(s.to_owned());
            if self.order.len() > EXPIRED_KEPT {
                if let Some(old) = self.order.pop_front() {
                    self.names.remove(&old);
                    self.forgotten += 1;
                }
            }
        }
    }
}

struct Live<S: Conform, R: Reader<S>> {
    reader: R,
    checker: Checker<S>,
    records: Vec<(usize, R::Record)>,
    events: Vec<Event<S>>,
    touched: Vec<String>,
    ended: Vec<String>,
    /// Sessions whose remaining rules are not judged, after the line that could not be read.
    broken: BTreeMap<String, usize>,
    expired: Expired,
    /// Findings given before their session's end.
    given_early: usize,
    /// Findings given before their session's end, as its end holds them ([`Judge::settled`]).
    settled: Vec<Finding>,
    /// Lines at which an event was not read, and the last of them.
    not_read: usize,
    last_not_read: usize,
}

impl<S: Conform, R: Reader<S>> Live<S, R> {
    /// The sessions a line that cannot be read may belong to: the one its `session` field names
    /// (open, not judged any more, or not begun: its first lines made no event), else the one
    /// session, open or no longer judged after an input error, whose name it holds as a string,
    /// else the one session there is, else every open one.
    fn owners(&self, text: &str) -> Vec<String> {
        if let Some(s) = session_field(text) {
            return vec![s.to_owned()];
        }
        let open = &self.checker.sessions.open;
        let known = || open.keys().chain(self.broken.keys());
        let named: Vec<String> = known()
            .filter(|s| text.contains(&format!("\"{s}\"")))
            .cloned()
            .collect();
        if named.len() == 1 {
            return named;
        }
        // A log of one session (a stack's log without session names): that one.
        if known().count() == 1 {
            return known().cloned().collect();
        }
        open.keys().cloned().collect()
    }

    /// The sessions in `owners` stop being judged at `error`'s line: what their walks gave stands,
    /// their state is dropped, and their later lines are counted until they end.
    fn break_sessions(&mut self, error: InputError, owners: Vec<String>) -> Vec<Report> {
        let mut reports = Vec::new();
        for s in &owners {
            if self.broken.contains_key(s) {
                // Not judged since an earlier line: said once.
                continue;
            }
            if self.checker.sessions.open.remove(s).is_some() {
                self.checker.verdict.sessions += 1;
                self.ended.push(s.clone());
            }
            self.broken.insert(s.clone(), error.line);
            reports.push(Report::NotJudged(NotJudged {
                line: error.line,
                session: s.clone(),
                rule: "every rule after this line",
                ids: Vec::new(),
                needs: format!("line {} to be readable: {}", error.line, error.message),
            }));
        }
        self.checker
            .verdict
            .not_judged
            .retain(|n| !owners.contains(&n.session));
        reports.insert(
            0,
            Report::InputError {
                error,
                sessions: owners,
            },
        );
        reports
    }

    /// Whether an event is one of a session no longer judged (then counted, not applied). Its
    /// end makes the name a new session's again.
    fn not_judged(&mut self, event: &Event<S>) -> bool {
        let (session, end) = match event {
            Event::Held { event, .. } => return self.not_judged(event),
            Event::Meta(_) => return false,
            Event::End { session } => (session, true),
            Event::Input { session, .. }
            | Event::Output { session, .. }
            | Event::Fact { session, .. }
            | Event::Begin { session, .. }
            | Event::NotJudged { session, .. } => (session, false),
        };
        let gone = self.broken.contains_key(session) || self.expired.names.contains(session);
        if gone && end {
            // Its log ends it: a later line of the name is a new session's.
            self.broken.remove(session);
            self.expired.names.remove(session);
        }
        gone
    }

    /// The checker's findings and not-judged rules since the last call, and each touched
    /// session's decided findings, in the stack's words.
    fn gather(&mut self) -> Vec<Report> {
        let mut reports: Vec<Report> = Vec::new();
        let mut decided = Vec::new();
        for s in &self.touched {
            if let Some(check) = self.checker.sessions.open.get_mut(s) {
                let not_judged = &self.checker.verdict.not_judged;
                decided.extend(check.decided(|f| !not_judged.iter().any(|n| n.covers(f))));
            }
        }
        self.given_early += decided.len();
        let early = self.told(decided);
        reports.extend(early.into_iter().map(Report::Finding));
        for ended in self
            .checker
            .ended
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
        {
            reports.extend(self.reconcile(ended));
        }
        reports
    }

    /// `findings` told in the stack's words.
    fn told(&self, findings: Vec<Finding>) -> Vec<Finding> {
        let mut v = Verdict {
            findings,
            ..Verdict::default()
        };
        self.reader.tell(&mut v);
        v.findings
    }

    /// A session's end: what its walk had not given, and what it gave that the end does not hold.
    fn reconcile(&mut self, ended: Ended) -> Vec<Report> {
        let Ended {
            session,
            findings,
            given,
        } = ended;
        self.ended.push(session.clone());
        let (new, held, gone) = at_the_end(findings, given);
        let (new, held, gone) = (self.told(new), self.told(held), self.told(gone));
        self.settled.extend(held);
        self.checker
            .verdict
            .not_judged
            .retain(|n| n.session != session);
        let mut reports: Vec<Report> = gone.into_iter().map(Report::Withdrawn).collect();
        reports.extend(new.into_iter().map(Report::Finding));
        reports
    }
}

impl<S: Conform, R: Reader<S>> Live<S, R> {
    /// An event not read at `line`: the line counted once, however many events it makes.
    fn count_not_read(&mut self, line: usize) {
        if line > self.last_not_read {
            self.last_not_read = line;
            self.not_read += 1;
        }
    }

    /// Applies `event`s of a line, each session no longer judged skipped; what they decide.
    fn apply(&mut self, text: &str) -> Vec<Report> {
        let mut reports = Vec::new();
        let records = std::mem::take(&mut self.records);
        let mut failed = None;
        for (at, record) in records {
            let (_, events) = self.reader.halves();
            let made = events.events(record, at, &self.checker.sessions, &mut self.events);
            if let Err(e) = made {
                failed.get_or_insert(e);
                self.events.clear();
                continue;
            }
            for event in std::mem::take(&mut self.events) {
                if self.not_judged(&event) {
                    self.count_not_read(at);
                    continue;
                }
                let session = event_session(&event).map(str::to_owned);
                if let Some(s) = &session {
                    if !self.touched.contains(s) {
                        self.touched.push(s.clone());
                    }
                }
                let before = self.checker.verdict.not_judged.len();
                let applied = self.checker.event(event, at);
                let fresh = &self.checker.verdict.not_judged
                    [before.min(self.checker.verdict.not_judged.len())..];
                reports.extend(fresh.iter().cloned().map(Report::NotJudged));
                if let Err(e) = applied {
                    let owners = match session {
                        Some(s) => vec![s],
                        None => self.owners(text),
                    };
                    reports.extend(self.break_sessions(e, owners));
                }
            }
        }
        if let Some(e) = failed {
            let owners = self.owners(text);
            reports.extend(self.break_sessions(e, owners));
        }
        reports.extend(self.gather());
        reports
    }
}

/// A session's findings at its end beside what its walk `given` before: those not given (to give
/// now), those given that explain something since (to hold as the end does), and those given
/// that the end does not hold (withdrawn).
fn at_the_end(
    findings: Vec<Finding>,
    given: Vec<Finding>,
) -> (Vec<Finding>, Vec<Finding>, Vec<Finding>) {
    let gone = given
        .iter()
        .filter(|g| !findings.iter().any(|f| same(g, f)))
        .cloned()
        .collect();
    let (held, new): (Vec<Finding>, Vec<Finding>) = findings
        .into_iter()
        .partition(|f| given.iter().any(|g| same(g, f)));
    let held = held.into_iter().filter(|f| !f.derived.is_empty()).collect();
    (new, held, gone)
}

/// The name a line's `session` field gives (the canonical form's, and the field most stacks' envelopes
/// name a session by), read from its text as it is — whole or torn, valid JSON or not —
/// where it holds one plainly (no escapes).
fn session_field(text: &str) -> Option<&str> {
    let after = &text[text.find("\"session\"")? + "\"session\"".len()..];
    let value = after
        .trim_start()
        .strip_prefix(':')?
        .trim_start()
        .strip_prefix('"')?;
    let name = &value[..value.find('"')?];
    (!name.is_empty() && !name.contains('\\')).then_some(name)
}

/// The session an event is about (none: the meta line).
fn event_session<S: Conform>(event: &Event<S>) -> Option<&str> {
    match event {
        Event::Meta(_) => None,
        Event::Held { event, .. } => event_session(event),
        Event::End { session }
        | Event::Input { session, .. }
        | Event::Output { session, .. }
        | Event::Fact { session, .. }
        | Event::Begin { session, .. }
        | Event::NotJudged { session, .. } => Some(session),
    }
}

impl<S: Conform, R: Reader<S>> Judge for Live<S, R> {
    fn line(&mut self, text: &str, line: usize) -> Vec<Report> {
        let (lines, _) = self.reader.halves();
        let mut records = std::mem::take(&mut self.records);
        records.clear();
        let read = lines.read(text, line, &mut records);
        self.records = records;
        match read {
            Ok(()) => self.apply(text),
            Err(e) => {
                self.records.clear();
                let owners = self.owners(text);
                let mut reports = self.break_sessions(e, owners);
                reports.extend(self.gather());
                reports
            }
        }
    }

    fn broken(&mut self, error: InputError, text: &str) -> Vec<Report> {
        let owners = self.owners(text);
        self.break_sessions(error, owners)
    }

    fn expire(&mut self, session: &str, idle: u64) -> Vec<Report> {
        // What the session decided stands (given after its last line); its end is not seen.
        let mut reports = self.gather();
        if let Some(check) = self.checker.sessions.open.remove(session) {
            drop(check);
            self.checker.verdict.sessions += 1;
            self.ended.push(session.to_owned());
            self.expired.insert(session);
            self.checker
                .verdict
                .not_judged
                .retain(|n| n.session != session);
            reports.push(Report::NotJudged(NotJudged {
                line: self.checker.verdict.lines,
                session: session.to_owned(),
                rule: "end of session",
                ids: Vec::new(),
                needs: format!(
                    "the session's end: no line of it for {idle} ms (--idle-timeout); a later \
                     line of it is not read"
                ),
            }));
        }
        reports
    }

    fn finish(&mut self) -> Vec<Report> {
        let (lines_half, _) = self.reader.halves();
        let mut records = std::mem::take(&mut self.records);
        records.clear();
        let flushed = lines_half.flush(&mut records);
        self.records = records;
        let mut reports = match flushed {
            Ok(()) => self.apply(""),
            Err(e) => {
                let owners = self.owners("");
                self.break_sessions(e, owners)
            }
        };
        let open: Vec<String> = self.checker.sessions.open.keys().cloned().collect();
        for s in open {
            self.checker.end_session(&s);
        }
        reports.extend(self.gather());
        reports
    }

    fn touched(&mut self) -> Vec<String> {
        std::mem::take(&mut self.touched)
    }

    fn ended_since(&mut self) -> Vec<String> {
        std::mem::take(&mut self.ended)
    }

    fn settled(&mut self) -> Vec<Finding> {
        std::mem::take(&mut self.settled)
    }

    fn open(&self) -> usize {
        self.checker.sessions.open.len()
    }

    fn counts(&self) -> Counts {
        Counts {
            sessions: self.checker.verdict.sessions,
            peak_open: self.checker.verdict.peak_open_sessions,
            not_read: self.not_read,
            given_early: self.given_early,
            expired: self.expired.order.len() + self.expired.forgotten,
        }
    }
}

#[cfg(test)]
pub mod tests {
    use super::{at_the_end, session_field};
    use crate::trace::{Finding, FindingKind};

    /// A `no_late_delivery` finding at `line` of session `s`, explaining `derived` (the live
    /// monitor's tests too).
    pub(crate) fn finding(line: usize, derived: Vec<Finding>) -> Finding {
        Finding {
            line,
            session: "s".into(),
            at: 0,
            kind: FindingKind::Invariant,
            invariant: Some("no_late_delivery"),
            ids: Vec::new(),
            message: "late".into(),
            said: "late".into(),
            since: None,
            derived,
        }
    }

    #[test]
    fn the_sessions_ended_for_their_silence_are_remembered_up_to_a_bound_the_oldest_forgotten() {
        let mut expired = super::Expired::default();
        for i in 0..=super::EXPIRED_KEPT {
            expired.insert(&format!("s{i}"));
        }
        assert_eq!(expired.forgotten, 1);
        assert_eq!(expired.order.len(), super::EXPIRED_KEPT);
        assert!(!expired.names.contains("s0"));
        assert!(expired.names.contains("s1"));
        expired.insert("s1");
        assert_eq!(
            expired.order.len(),
            super::EXPIRED_KEPT,
            "a name already held is held once"
        );
    }

    #[test]
    fn at_its_end_a_session_gives_what_was_not_given_holds_what_grew_and_withdraws_the_rest() {
        let explains = vec![finding(9, Vec::new())];
        let (new, held, gone) = at_the_end(
            vec![
                finding(3, explains.clone()),
                finding(5, Vec::new()),
                finding(7, Vec::new()),
            ],
            vec![
                finding(3, Vec::new()),
                finding(4, Vec::new()),
                finding(5, Vec::new()),
            ],
        );
        assert_eq!(new, [finding(7, Vec::new())]);
        assert_eq!(held, [finding(3, explains)]);
        assert_eq!(gone, [finding(4, Vec::new())]);
    }

    #[test]
    fn a_lines_session_is_its_session_field_plainly_written_whole_or_torn() {
        assert_eq!(
            session_field(r#"{"at":1,"session":"a","input":"#),
            Some("a")
        );
        assert_eq!(session_field(r#"{"session" : "call-7"}"#), Some("call-7"));
        for none in [
            r#"{"at":1,"input":"tick"}"#,
            r#"{"session":""}"#,
            r#"{"session":"a\"b"}"#,
            r#"{"session":"a\\b"}"#,
            r#"{"session":7}"#,
            r#"{"session":"torn"#,
        ] {
            assert_eq!(session_field(none), None, "{none}");
        }
    }
}
