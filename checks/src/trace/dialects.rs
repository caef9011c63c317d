//! A dialect as the engine knows it: one trait, [`DialectEntry`]. Which dialects there are is
//! the registry's business (`crate::dialect`, one line each); the engine reads a log through
//! the entry its [`Reading`] names and knows no stack by name.

use std::fmt;
use std::io::BufRead;
use std::sync::Arc;

use serde_json::{Map, Value};
use turnfence_model::turn::Profile;

use super::conform::Conform;
use super::live::LiveJudge;
use super::stream::Batching;
use super::{InputError, Keep, KeepLines, Reader, Verdict};

/// Which machine a trace is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Machine {
    Turn,
    Fence,
}

impl Machine {
    pub fn name(self) -> &'static str {
        match self {
            Machine::Turn => "turn",
            Machine::Fence => "fence",
        }
    }
}

/// One dialect: how a log in it is recognised, read and said.
pub trait DialectEntry: Sync {
    /// Its name, as `--dialect` and the meta line's `dialect` give it.
    fn name(&self) -> &'static str;

    /// What it reads, in a few words (`--help`).
    fn about(&self) -> &'static str;

    /// Why a log's first line (a JSON object of no canonical kind) is a log of this dialect, if
    /// its shape says so — never guessed: the keys its stack writes.
    fn recognise(&self, _first: &Map<String, Value>) -> Option<&'static str> {
        None
    }

    /// The profile its stack implies: another stack's rules cannot judge its log (the lab's may:
    /// they are the reference every stack is read against). `None`: the log names its own.
    fn profile(&self) -> Option<Profile> {
        None
    }

    /// Whether it reads the fence machine's traces (else the turn machine's only).
    fn reads_fence(&self) -> bool {
        false
    }

    /// Whether a line's session is named by a field the reading gives (`--session-key`).
    fn reads_session_key(&self) -> bool {
        false
    }

    /// Its reader of a log read as `read` says, with the machine its sessions start as
    /// ([`judging`] makes it), or why it cannot read it.
    fn reader(&self, read: &Reading) -> Result<Box<dyn Judging>, InputError>;

    /// The party its system under check is, in a story's diagram.
    fn home(&self) -> Party {
        Party::App
    }

    /// A line of its log (a JSON object, not the meta line) as the stack said it: from whom,
    /// to whom, and the event's own name as the line writes it.
    fn said(&self, line: &Value) -> (Party, Party, String);

    /// The session a line names, where it names one (`key`: the reading's session key).
    fn session_of(&self, line: &Value, key: Option<&str>) -> Option<String> {
        let _ = key;
        line.get("session")?.as_str().map(str::to_owned)
    }
}

/// A dialect of the registry: its entry, compared and shown by name.
#[derive(Clone, Copy)]
pub struct Dialect(pub &'static dyn DialectEntry);

impl Dialect {
    pub fn name(self) -> &'static str {
        self.0.name()
    }

    pub fn entry(self) -> &'static dyn DialectEntry {
        self.0
    }
}

impl PartialEq for Dialect {
    fn eq(&self, other: &Dialect) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Dialect {}

impl fmt::Debug for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A party a line's event passes between: the participants of a story's diagram, declared in
/// this order (only those its lines name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Party {
    User,
    /// The system under check, where it is an app.
    App,
    /// The system under check, where it is an agent session.
    Agent,
    /// A model served over the network.
    Server,
    Llm,
    Tts,
    /// The turn's children: model streams, retrievals, tools.
    Tools,
    Player,
}

impl Party {
    /// Its id in a Mermaid diagram.
    pub fn id(self) -> &'static str {
        match self {
            Party::User => "User",
            Party::App => "App",
            Party::Agent => "Agent",
            Party::Server => "Server",
            Party::Llm => "LLM",
            Party::Tts => "TTS",
            Party::Tools => "Tools",
            Party::Player => "Player",
        }
    }

    /// Its name as a reader sees it.
    pub fn label(self) -> &'static str {
        match self {
            Party::User => "user",
            Party::App => "app",
            Party::Agent => "agent session",
            Party::Server => "server",
            Party::Llm => "LLM",
            Party::Tts => "TTS",
            Party::Tools => "tools and children",
            Party::Player => "player",
        }
    }
}

/// A dialect's reader and the machine its sessions start as, their types forgotten: what the
/// engine does with them, whatever they are.
pub trait Judging {
    /// The whole trace `input` checked, the records of a `batch` judged at a time.
    fn check(
        self: Box<Self>,
        input: &mut dyn BufRead,
        keep: Keep,
        batch: Batching,
        lines: Option<Arc<dyn KeepLines>>,
    ) -> Result<Verdict, InputError>;

    /// A live monitor's judge of the log, a line at a time.
    fn live(self: Box<Self>) -> LiveJudge;
}

struct Typed<S, R> {
    reader: R,
    fresh: S,
}

impl<S: Conform + 'static, R: Reader<S> + Send + 'static> Judging for Typed<S, R> {
    fn check(
        mut self: Box<Self>,
        input: &mut dyn BufRead,
        keep: Keep,
        batch: Batching,
        lines: Option<Arc<dyn KeepLines>>,
    ) -> Result<Verdict, InputError> {
        super::check_batched(input, &mut self.reader, keep, self.fresh, batch, lines)
    }

    fn live(self: Box<Self>) -> LiveJudge {
        LiveJudge::new(self.reader, self.fresh)
    }
}

/// `reader` with the machine `S` made with `profile`: an input error when the machine has no
/// such profile.
pub fn judging<S: Conform + 'static, R: Reader<S> + Send + 'static>(
    reader: R,
    profile: Profile,
) -> Result<Box<dyn Judging>, InputError> {
    let Some(fresh) = S::for_profile(profile) else {
        return Err(InputError::at(
            1,
            format!(
                "the {} machine has no profile {:?}; its one profile is \"lab\"",
                S::NAME,
                profile.name()
            ),
        ));
    };
    Ok(Box::new(Typed { reader, fresh }))
}

/// Checks a trace read as `read` says: its dialect's reader, each session starting as the
/// machine made with its profile.
pub fn check_dialect(
    input: impl BufRead,
    read: &Reading,
    keep: Keep,
) -> Result<Verdict, InputError> {
    check_dialect_batched(input, read, keep, Batching::DEFAULT, None)
}

/// [`check_dialect`], each line handed to `lines` as it is read (and each finding as it is
/// found): what is said after the pass is said from what it kept, the trace read once.
pub fn check_dialect_keeping_lines(
    input: impl BufRead,
    read: &Reading,
    keep: Keep,
    lines: Arc<dyn KeepLines>,
) -> Result<Verdict, InputError> {
    lines.begin(read);
    check_dialect_batched(input, read, keep, Batching::DEFAULT, Some(lines))
}

/// [`check_dialect`], the records of a `batch` judged at a time.
pub(super) fn check_dialect_batched(
    mut input: impl BufRead,
    read: &Reading,
    keep: Keep,
    batch: Batching,
    lines: Option<Arc<dyn KeepLines>>,
) -> Result<Verdict, InputError> {
    read.dialect
        .entry()
        .reader(read)?
        .check(&mut input, keep, batch, lines)
}
/// How a trace was read: its dialect, machine and profile, and each place the reading departs
/// from what it was told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reading {
    pub dialect: Dialect,
    pub machine: Machine,
    pub profile: Profile,
    /// The field of a line that names its session (`--session-key`, else the meta line's
    /// `session_key`): a room, a call id. Read by a dialect that reads one (`DialectEntry::reads_session_key`).
    pub session_key: Option<String>,
    /// Where the reading departs from what it was told, each said as a sentence: a dialect
    /// recognised from the first line where no meta line names one, or a flag not used because
    /// the trace says otherwise (and why).
    pub overrides: Vec<String>,
}

/// An input error unless the trace is of the turn machine: a dialect that reads the turn
/// machine's traces only, asked for the fence machine's.
pub fn turn_only(read: &Reading) -> Result<(), InputError> {
    match read.machine {
        Machine::Turn => Ok(()),
        Machine::Fence => Err(InputError::at(
            0,
            format!(
                "the {} dialect has turn traces only; fence traces are canonical",
                read.dialect.name()
            ),
        )),
    }
}
