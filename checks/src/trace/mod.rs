//! `turnfence check`: conformance of a JSON Lines trace against the turn machine.
//!
//! The trace is read as a stream, one line at a time; state is kept per open session and dropped
//! when the session ends, so memory follows the open sessions, not the file. Each dialect turns
//! its lines into [`Event`]s; [`conform::SessionCheck`] does the rest.
//!
//! Dependencies: `trace` knows nothing of the gate. The gate writes its runs in the canonical
//! form ([`canonical::write`]), so `gate` uses `trace` and never the reverse. The lab dialect
//! lives with the lab's vocabulary in `crate::dialect::lab::reader` and implements [`Reader`].

pub(crate) mod borrowed;
pub mod canonical;
mod checker;
pub mod conform;
mod dialects;
pub mod fence_conform;
mod kept;
pub mod limits;
pub mod live;
mod stack;
pub mod stack_options;
mod stream;
pub mod turn_conform;
pub mod turn_facts;
mod wording;

pub use dialects::{
    check_dialect, check_dialect_keeping_lines, judging, turn_only, Dialect, DialectEntry, Judging,
    Machine, Party, Reading,
};
pub use kept::KeepLines;
pub use stack::{
    parse_stack_line, running_where_the_log_stops, StackDialect, StackEvents, StackLines,
    StackReader, StackRecord,
};
pub use turnfence_model::turn::Profile;

use checker::Checker;

use std::collections::BTreeMap;
use std::fmt;
use std::io::BufRead;

use serde::Serialize;
use turnfence_model::said::{Said, Vocabulary};
use turnfence_model::Millis;

use conform::{Conform, Observed, SessionCheck, Unlogged};

/// The meta line's fields (first line only). Strict: a key not listed here is an input error.
/// Every key may be left out. The checker reads `complete` and `partial` only: `dialect`,
/// `machine` and `profile` are read before the trace is (by `check_input`), a stack's `version`,
/// `options` and `session_key` by its dialect. `fixture` is ignored by rule: a test corpus's own
/// keys (what a fixture expects, where its bug is, its story: `fixtures/README.md`), which the
/// product never reads.
#[derive(Default, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
struct Meta {
    dialect: Option<String>,
    machine: Option<String>,
    profile: Option<String>,
    /// The output kinds the log records completely.
    complete: Option<Vec<String>>,
    /// The capture is partial: a session may end with its turns unfinished.
    partial: bool,
    /// The stack's version, its session options and the field naming a line's session: read by
    /// the dialect (one that reads a session key).
    version: Option<serde_json::Value>,
    options: Option<serde_json::Value>,
    session_key: Option<serde_json::Value>,
    /// A test corpus's own keys: not the product's, never read.
    fixture: Option<serde::de::IgnoredAny>,
}

/// What a dialect read from one line.
#[derive(Clone, Debug, PartialEq)]
pub enum Event<S: Conform> {
    /// The fixture's meta line (first line only).
    Meta(serde_json::Value),
    Input {
        session: String,
        input: S::Input,
    },
    Output {
        session: String,
        at: Millis,
        observed: Observed<S::Output>,
    },
    /// A fact the line states beside its events, judged where it is stated.
    Fact {
        session: String,
        at: Millis,
        fact: S::Fact,
    },
    /// The session is over: judge it and drop its state.
    End {
        session: String,
    },
    /// A session begins as this machine (made with what its log states: a stack's options),
    /// before its first input. A session already open is an input error.
    Begin {
        session: String,
        machine: S,
    },
    /// A rule the log cannot let the checker judge for some of a session's subjects (`ids`; none:
    /// a part of it the dialect judges nowhere): what it needs is missing from the log. The
    /// rule's findings about those subjects are dropped, and the rule is reported not judged —
    /// never a finding.
    NotJudged {
        session: String,
        rule: &'static str,
        ids: Vec<String>,
        needs: String,
    },
    /// An event the dialect held back at an earlier line (`line`) until a later one showed what
    /// it was, given now: judged as of the line that stated it.
    Held {
        line: usize,
        event: Box<Event<S>>,
    },
}

/// Why a trace could not be read: its own exit code, with the line (and column where it helps).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InputError {
    pub line: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    pub message: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            // Not about a line: the trace as a whole (it is empty).
            (0, _) => write!(f, "{}", self.message),
            (line, Some(c)) => write!(f, "line {line}, column {c}: {}", self.message),
            (line, None) => write!(f, "line {line}: {}", self.message),
        }
    }
}

impl std::error::Error for InputError {}

impl InputError {
    pub fn at(line: usize, message: impl Into<String>) -> InputError {
        InputError {
            line,
            column: None,
            message: message.into(),
        }
    }
}

/// The sort of thing found wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// An invariant of SPEC §2.5 or §3.5 is broken.
    Invariant,
    /// The trace shows an output the model does not produce.
    UnexpectedOutput,
    /// The trace shows an output in place of a different one the model produces.
    ContradictedOutput,
    /// The trace states a fact (a count, a remaining time) the model predicts otherwise.
    ContradictedFact,
    /// The trace shows an input the model refuses (`Misuse`).
    RefusedInput,
    /// The model produces an output of a kind the meta line declares complete, and the trace
    /// does not show it.
    MissingOutput,
    /// The session ended with a turn that never ended, waiting for something the trace never
    /// shows (unless the meta line declares the capture `partial`).
    LeftOpen,
}

impl FindingKind {
    /// The kind's name, its JSON form: what a finding that is not an invariant's leads with, and
    /// the rule a [`NotJudged`] names where it leaves a finding of this kind unjudged.
    pub const fn name(self) -> &'static str {
        match self {
            FindingKind::Invariant => "invariant",
            FindingKind::UnexpectedOutput => "unexpected_output",
            FindingKind::ContradictedOutput => "contradicted_output",
            FindingKind::ContradictedFact => "contradicted_fact",
            FindingKind::RefusedInput => "refused_input",
            FindingKind::MissingOutput => "missing_output",
            FindingKind::LeftOpen => "left_open",
        }
    }
}

/// One thing found wrong, with where and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub line: usize,
    /// The session the finding is about, and its time (ms) there.
    pub session: String,
    pub at: Millis,
    pub kind: FindingKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invariant: Option<&'static str>,
    pub ids: Vec<String>,
    /// Why, in the words of the trace's stack once the verdict is said in them
    /// ([`Finding::say_in`]), in the model's until then.
    pub message: String,
    /// Why, its subjects typed: what `message` says, in no one's words yet.
    #[serde(skip)]
    pub said: Said,
    /// The earlier line the story starts at (the stop a late delivery came after, the first of
    /// two terminal states, …), where there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<usize>,
    /// What this finding explains: the conformance findings at its line that follow from it (the
    /// output the model does not produce, because producing it breaks this invariant).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub derived: Vec<Finding>,
}

impl Finding {
    /// The name a report leads with: the invariant's, or the kind of non-conformance.
    pub fn name(&self) -> &'static str {
        self.invariant.unwrap_or(self.kind.name())
    }

    /// Its message, and those of the findings it explains, said in `words`.
    pub fn say_in(&mut self, words: &dyn Vocabulary) {
        self.message = self.said.said_in(words);
        for d in &mut self.derived {
            d.say_in(words);
        }
    }
}

/// A rule left unjudged for some subjects of a session: what the log would have to show for it to
/// be judged. Reported beside the findings, never as one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NotJudged {
    /// The line that made it unjudgeable (the first, where several did).
    pub line: usize,
    pub session: String,
    pub rule: &'static str,
    /// The subjects (reply, tool call) it is not judged for; empty: a part of the rule the dialect
    /// judged nowhere in the session.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<String>,
    pub needs: String,
}

impl NotJudged {
    /// Whether `f` is about what this leaves unjudged: the rule, or — where the rule is an
    /// invariant — the model's disagreement with the log (what it would have done rests on the
    /// fact the log lacks), about one of its subjects. A conformance finding left unjudged
    /// (`left_open`: where the log stops, not what it shows) is that finding alone. Without
    /// subjects it drops nothing: the dialect judged none of it.
    fn covers(&self, f: &Finding) -> bool {
        let conformance = self.rule == FindingKind::LeftOpen.name();
        f.session == self.session
            && (f.name() == self.rule || f.kind != FindingKind::Invariant && !conformance)
            && f.ids.iter().any(|i| self.ids.contains(i))
    }
}

/// The verdict on a whole trace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Verdict {
    pub lines: usize,
    pub events: usize,
    pub sessions: usize,
    /// The most sessions open at once: what the checker's memory follows.
    pub peak_open_sessions: usize,
    pub findings: Vec<Finding>,
    /// The rules left unjudged where the log does not show what they need.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_judged: Vec<NotJudged>,
    /// Each session's effective trace, one line per step (with [`Keep::Effective`] only).
    #[serde(skip)]
    pub effective: Vec<String>,
    /// The hidden inputs supplied, as JSON, in order (with [`Keep::Effective`] only).
    #[serde(skip)]
    pub hidden: Vec<String>,
}

impl Verdict {
    pub fn conforms(&self) -> bool {
        self.findings.is_empty()
    }

    /// How many findings of each name (an invariant's, or a kind of non-conformance), most first.
    pub fn counts(&self) -> Vec<(&'static str, usize)> {
        let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
        for f in &self.findings {
            *counts.entry(f.name()).or_default() += 1;
        }
        let mut counts: Vec<(&'static str, usize)> = counts.into_iter().collect();
        counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        counts
    }
}

/// Reads a dialect's lines, in two halves: [`ReadLines`] parses each line into records (a dialect
/// may hold lines back and release them later, e.g. a whole lab scenario); [`MakeEvents`] turns
/// one record into events, seeing the open sessions as they stand after every earlier event was
/// applied. The halves may run on two threads (`stream`): a long trace's lines are parsed on one
/// while the records already parsed are judged on the other, and either finds what one thread
/// would, line for line.
pub trait Reader<S: Conform> {
    type Record: Send;
    type Lines: ReadLines<Self::Record>;
    type Events: MakeEvents<S, Self::Record> + Send;

    /// The two halves, borrowed apart.
    fn halves(&mut self) -> (&mut Self::Lines, &mut Self::Events);

    /// The verdict told as the stack tells it, once every line is read: each finding said in
    /// the stack's vocabulary (a real stack's replies, tool calls and audio, not turns, children
    /// and frames), its story starting where the stack's does.
    fn tell(&self, _verdict: &mut Verdict) {}

    /// Whether [`Reader::tell`] may start a finding's story at an earlier line of its session
    /// than the checker found (what a pass keeps of its lines then keeps the session's lines up
    /// to the finding's).
    fn moves_stories(&self) -> bool {
        false
    }

    /// The steps the stack may take without a line of its log (its dialect's declaration).
    fn unlogged(&self) -> &'static [Unlogged<S>] {
        &[]
    }
}

/// A reader's first half: lines into records. Each pushes what it makes onto `out`.
pub trait ReadLines<Record> {
    fn read(
        &mut self,
        text: &str,
        line: usize,
        out: &mut Vec<(usize, Record)>,
    ) -> Result<(), InputError>;

    /// End of input: records still held back.
    fn flush(&mut self, _out: &mut Vec<(usize, Record)>) -> Result<(), InputError> {
        Ok(())
    }

    /// The first line read whose records are still held back, if any: a finding may yet name
    /// it (what a pass keeps of its lines keeps it).
    fn held_from(&self) -> Option<usize> {
        None
    }
}

/// A reader's second half: a record into events, pushed onto `out`, a buffer the checker empties
/// and uses again for every record.
pub trait MakeEvents<S: Conform, Record> {
    fn events(
        &mut self,
        record: Record,
        line: usize,
        sessions: &Sessions<S>,
        out: &mut Vec<Event<S>>,
    ) -> Result<(), InputError>;
}

/// The open sessions.
pub struct Sessions<S: Conform> {
    open: BTreeMap<String, SessionCheck<S>>,
    /// Output kinds the trace records completely (from the meta line).
    complete: Vec<String>,
    /// The capture is partial (from the meta line): sessions may end with turns unfinished.
    partial: bool,
    keep: Keep,
    /// The machine each session starts as (its profile's).
    fresh: S,
    /// Each session is judged as its lines come ([`SessionCheck::decided`]).
    live: bool,
    /// The steps each session's stack may take without a line (its dialect's declaration).
    unlogged: &'static [Unlogged<S>],
}

impl<S: Conform> Default for Sessions<S> {
    fn default() -> Sessions<S> {
        Sessions {
            open: BTreeMap::new(),
            complete: Vec::new(),
            partial: false,
            keep: Keep::Findings,
            fresh: S::default(),
            live: false,
            unlogged: &[],
        }
    }
}

impl<S: Conform> Sessions<S> {
    fn get(&mut self, session: &str, line: usize) -> Result<&mut SessionCheck<S>, InputError> {
        if !self.open.contains_key(session) {
            if self.open.len() >= limits::MAX_OPEN_SESSIONS {
                return Err(limits::too_many_sessions(line));
            }
            let keep = self.keep == Keep::Effective;
            let mut fresh = SessionCheck::new(
                session,
                self.fresh.clone(),
                &self.complete,
                self.partial,
                keep,
            )
            .with_unlogged(self.unlogged);
            if self.live {
                fresh = fresh.judged_as_it_comes();
            }
            self.open.insert(session.to_owned(), fresh);
        }
        Ok(self.open.get_mut(session).expect("inserted above"))
    }

    pub fn peek(&self, session: &str) -> Option<&SessionCheck<S>> {
        self.open.get(session)
    }

    /// The machine each session starts as unless its log says otherwise (the trace's profile).
    pub fn fresh(&self) -> &S {
        &self.fresh
    }
}

/// What a check keeps beside its findings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Keep {
    /// The findings and counts only (streaming, memory flat).
    #[default]
    Findings,
    /// Also each session's effective trace, one line per step ([`Verdict::effective`]): what
    /// the checker judged, for comparing two traces' stories (the checker's mutation test).
    Effective,
}

/// Checks a whole trace, streaming. `Err` is an input error; `Ok` is the verdict on every line.
pub fn check<S: Conform, R: Reader<S>>(
    input: impl BufRead,
    reader: &mut R,
) -> Result<Verdict, InputError> {
    check_keeping(input, reader, Keep::Findings)
}

/// [`check`], keeping what `keep` asks for beside the findings.
pub fn check_keeping<S: Conform, R: Reader<S>>(
    input: impl BufRead,
    reader: &mut R,
    keep: Keep,
) -> Result<Verdict, InputError> {
    check_as(input, reader, keep, S::default())
}

/// [`check_keeping`], each session starting as `fresh` (a machine made with the trace's
/// profile).
pub fn check_as<S: Conform, R: Reader<S>>(
    input: impl BufRead,
    reader: &mut R,
    keep: Keep,
    fresh: S,
) -> Result<Verdict, InputError> {
    check_batched(input, reader, keep, fresh, stream::Batching::DEFAULT, None)
}

/// [`check_as`], the records of a `batch` judged at a time (on a thread of their own past the
/// first batch), each line handed to `lines` as it is read, if given.
fn check_batched<S: Conform, R: Reader<S>>(
    input: impl BufRead,
    reader: &mut R,
    keep: Keep,
    fresh: S,
    batch: stream::Batching,
    lines: Option<std::sync::Arc<dyn KeepLines>>,
) -> Result<Verdict, InputError> {
    let mut checker = Checker::new(keep, fresh);
    checker.lines = lines;
    checker.stories_move = reader.moves_stories();
    checker.sessions.unlogged = reader.unlogged();
    let mut verdict = stream::check(input, reader, checker, batch)?;
    reader.tell(&mut verdict);
    Ok(verdict)
}

/// Checks events that were never text (a concurrency adapter's record): each with its line
/// (its position in the record), as a partial capture, each session starting as `fresh` (a
/// machine made with the record's profile), the output kinds in `complete` recorded completely.
/// An input error here is a bug of the recorder, reported as one.
pub fn check_events_as<S: Conform>(
    events: Vec<(usize, Event<S>)>,
    fresh: S,
    complete: &[&str],
) -> Verdict {
    let mut c = Checker::new(Keep::Findings, fresh);
    c.sessions.complete = complete.iter().map(|k| (*k).to_owned()).collect();
    // A record is a window of a system's activity: it may end with turns unfinished.
    c.sessions.partial = true;
    for (line, event) in events {
        if let Err(e) = c.event(event, line) {
            c.verdict.findings.push(Finding {
                line: e.line,
                session: "adapter".into(),
                at: 0,
                kind: FindingKind::RefusedInput,
                invariant: None,
                ids: Vec::new(),
                said: e.message.as_str().into(),
                message: e.message,
                since: None,
                derived: Vec::new(),
            });
        }
        c.verdict.lines = line;
    }
    let lines = c.verdict.lines;
    c.conclude(lines)
}

#[cfg(test)]
mod tests;
