//! How a trace is read: in the dialect, for the machine and under the profile its meta line
//! names, else (the dialect) its first line shows, else a flag says — a flag the trace
//! contradicts not used, and said — and the check of a whole trace from a reader.

use std::io::BufRead;

use turnfence_model::fence::FenceMachine;
use turnfence_model::turn::{self, TurnMachine};

use super::conform::Conform;
use super::stream::Batching;
use super::{canonical, Dialect, InputError, Keep, Reader, Verdict};
use crate::dialect::lab::reader::LabReader;
use crate::dialect::livekit::{Livekit, LivekitReader};
use crate::dialect::openai_realtime::RealtimeReader;
use crate::dialect::pipecat::PipecatReader;

/// Which machine a trace is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Machine {
    Turn,
    Fence,
}

/// Which rule choices a trace's system follows (the model's [`turn::Profile`], by name).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Profile {
    #[default]
    Lab,
    #[value(name = "openai-realtime")]
    OpenaiRealtime,
    #[value(name = "livekit-agents")]
    LivekitAgents,
    Pipecat,
}

impl Profile {
    /// The model's profile of this name.
    pub fn model(self) -> turn::Profile {
        match self {
            Profile::Lab => turn::Profile::Lab,
            Profile::OpenaiRealtime => turn::Profile::OpenaiRealtime,
            Profile::LivekitAgents => turn::Profile::LivekitAgents,
            Profile::Pipecat => turn::Profile::Pipecat,
        }
    }

    pub fn name(self) -> &'static str {
        self.model().name()
    }
}

impl Default for Reading {
    fn default() -> Reading {
        Reading {
            dialect: Dialect::Canonical,
            machine: Machine::Turn,
            profile: Profile::Lab,
            session_key: None,
            overrides: Vec::new(),
        }
    }
}

impl Machine {
    pub fn name(self) -> &'static str {
        match self {
            Machine::Turn => "turn",
            Machine::Fence => "fence",
        }
    }
}

/// Checks a trace of a machine in a dialect, each session starting as the machine made with the
/// profile. The lab dialect is the turn machine's only; the fence machine has the lab profile
/// only.
pub fn check_dialect(
    input: impl BufRead,
    read: &Reading,
    keep: Keep,
) -> Result<Verdict, InputError> {
    check_dialect_batched(input, read, keep, Batching::DEFAULT)
}

/// [`check_dialect`], the records of a `batch` judged at a time.
pub(super) fn check_dialect_batched(
    input: impl BufRead,
    read: &Reading,
    keep: Keep,
    batch: Batching,
) -> Result<Verdict, InputError> {
    struct Check<I> {
        input: I,
        keep: Keep,
        batch: Batching,
    }
    impl<I: BufRead> OnReader for Check<I> {
        type Out = Result<Verdict, InputError>;
        fn on<S: Conform + 'static, R: Reader<S> + Send + 'static>(
            self,
            mut reader: R,
            fresh: S,
        ) -> Self::Out {
            super::check_batched(self.input, &mut reader, self.keep, fresh, self.batch)
        }
    }
    on_reader(read, Check { input, keep, batch }).and_then(|checked| checked)
}

/// What is done with the reader of a trace's dialect and the machine its sessions start as.
pub(super) trait OnReader {
    type Out;
    fn on<S: Conform + 'static, R: Reader<S> + Send + 'static>(
        self,
        reader: R,
        fresh: S,
    ) -> Self::Out;
}

/// `then` given the reader `read` names and the machine made with its profile, or an input error:
/// a dialect of another machine, a profile the machine does not have.
pub(super) fn on_reader<T: OnReader>(read: &Reading, then: T) -> Result<T::Out, InputError> {
    let profile = read.profile;
    match (read.dialect, read.machine) {
        (Dialect::Canonical, Machine::Turn) => on_machine(
            canonical::CanonicalReader::<TurnMachine>::default(),
            profile,
            then,
        ),
        (Dialect::Canonical, Machine::Fence) => on_machine(
            canonical::CanonicalReader::<FenceMachine>::default(),
            profile,
            then,
        ),
        (Dialect::Lab, Machine::Turn) => on_machine(LabReader::default(), profile, then),
        (Dialect::OpenaiRealtime, Machine::Turn) => {
            on_machine(RealtimeReader::default(), profile, then)
        }
        (Dialect::LivekitAgents, Machine::Turn) => {
            let dialect = Livekit::keyed(read.session_key.clone());
            on_machine(LivekitReader::new(dialect), profile, then)
        }
        (Dialect::Pipecat, Machine::Turn) => on_machine(PipecatReader::default(), profile, then),
        (Dialect::OpenaiRealtime | Dialect::LivekitAgents | Dialect::Pipecat, Machine::Fence) => {
            Err(InputError::at(
                0,
                format!("the {} dialect has turn traces only", read.dialect.name()),
            ))
        }
        (Dialect::Lab, Machine::Fence) => Err(InputError::at(
            0,
            "the lab dialect has turn traces only; fence traces are canonical",
        )),
    }
}

/// `then` given `reader` and the machine made with `profile`: an input error when the machine has
/// no such profile.
fn on_machine<S: Conform + 'static, R: Reader<S> + Send + 'static, T: OnReader>(
    reader: R,
    profile: Profile,
    then: T,
) -> Result<T::Out, InputError> {
    let Some(fresh) = S::for_profile(profile.model()) else {
        return Err(InputError::at(
            1,
            format!(
                "the {} machine has no profile {:?}; its one profile is \"lab\"",
                S::NAME,
                profile.name()
            ),
        ));
    };
    Ok(then.on(reader, fresh))
}

/// How a trace was read: its dialect, machine and profile, and each place the reading departs
/// from what it was told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reading {
    pub dialect: Dialect,
    pub machine: Machine,
    pub profile: Profile,
    /// The field of a line that names its session (`--session-key`, else the meta line's
    /// `session_key`): a room, a call id. Read by the `livekit-agents` dialect.
    pub session_key: Option<String>,
    /// Where the reading departs from what it was told, each said as a sentence: a dialect
    /// recognised from the first line where no meta line names one, or a flag not used because
    /// the trace says otherwise (and why).
    pub overrides: Vec<String>,
}

/// Which dialect, machine and profile a trace is read as, each part from the trace itself where
/// it says — its meta line (`first`, the trace's first line), else, for the dialect, its first
/// line recognised as a stack's — else from the flag, else canonical, turn, and the dialect's
/// own profile (the lab's for canonical and lab). A flag that contradicts what the trace says is
/// not used, and the reading says so; a real stack's dialect implies its profile.
pub fn reading(first: &str, flags: &Flags) -> Result<Reading, InputError> {
    let first = first.trim_start_matches('\u{feff}');
    let meta = serde_json::from_str::<serde_json::Value>(first)
        .ok()
        .and_then(|v| v.get("meta").cloned());
    let mut overrides = Vec::new();
    let mut own = Own {
        dialect: named(meta.as_ref())?,
        machine: named(meta.as_ref())?,
        profile: named(meta.as_ref())?,
    };
    if own.dialect.is_none() {
        if let Some((dialect, why)) = super::recognise::recognise(first) {
            overrides.push(format!(
                "read as {}: no meta line names a dialect, and {why}",
                dialect.name()
            ));
            let said = format!("its first line is recognised as {}", dialect.name());
            own.dialect = Some((dialect, said));
        }
    }
    let notes = &mut overrides;
    let dialect = settle(&own.dialect, flags.dialect, notes, |d| {
        own.clash(Some(d), None, None)
    });
    let machine = settle(&own.machine, flags.machine, notes, |m| {
        own.clash(None, Some(m), None)
    });
    let profile = settle(&own.profile, flags.profile, notes, |p| {
        own.clash(None, None, Some(p))
    });
    let dialect = dialect.unwrap_or(Dialect::Canonical);
    let implied = own_profile(dialect);
    if let Some(why) = clash(Some(dialect), None, profile) {
        return Err(InputError::at(0, format!("{why}: leave the profile out")));
    }
    let meta_key = meta
        .as_ref()
        .and_then(|m| m.get("session_key")?.as_str().map(str::to_owned));
    let session_key = flags.session_key.clone().or(meta_key);
    if session_key.is_some() && dialect != Dialect::LivekitAgents {
        return Err(InputError::at(
            0,
            format!(
                "a session key is read by the livekit-agents dialect only, not {}",
                dialect.name()
            ),
        ));
    }
    Ok(Reading {
        dialect,
        machine: machine.unwrap_or(Machine::Turn),
        profile: profile.or(implied).unwrap_or_default(),
        session_key,
        overrides,
    })
}

/// The profile a real stack's dialect implies: another stack's rules cannot judge its log (the
/// lab's may: they are the reference every stack is read against). `None` for canonical and lab.
fn own_profile(dialect: Dialect) -> Option<Profile> {
    match dialect {
        Dialect::OpenaiRealtime => Some(Profile::OpenaiRealtime),
        Dialect::LivekitAgents => Some(Profile::LivekitAgents),
        Dialect::Pipecat => Some(Profile::Pipecat),
        Dialect::Canonical | Dialect::Lab => None,
    }
}

/// Why the parts given cannot be read together, if they cannot: a real stack's dialect under
/// another stack's profile, a dialect other than canonical for the fence machine, the fence
/// machine under a profile other than the lab's.
fn clash(
    dialect: Option<Dialect>,
    machine: Option<Machine>,
    profile: Option<Profile>,
) -> Option<String> {
    if let (Some(d), Some(p)) = (dialect, profile) {
        if let Some(own) = own_profile(d).filter(|own| p != Profile::Lab && p != *own) {
            return Some(format!(
                "the {} dialect is read under its own profile {:?}, not {:?}",
                d.name(),
                own.name(),
                p.name()
            ));
        }
    }
    let fence = machine == Some(Machine::Fence);
    if let Some(d) = dialect.filter(|d| fence && *d != Dialect::Canonical) {
        return Some(format!("the {} dialect has turn traces only", d.name()));
    }
    if let Some(p) = profile.filter(|p| fence && *p != Profile::Lab) {
        return Some(format!("the fence machine has no profile {:?}", p.name()));
    }
    None
}

/// What a trace says of how it is read, each part with where it says it ("the meta line names
/// dialect lab").
struct Own {
    dialect: Option<(Dialect, String)>,
    machine: Option<(Machine, String)>,
    profile: Option<(Profile, String)>,
}

impl Own {
    /// Why a flag's part (the one given) cannot stand beside what the trace says of the other
    /// parts, if it cannot: where the trace says it, and the clash.
    fn clash(
        &self,
        dialect: Option<Dialect>,
        machine: Option<Machine>,
        profile: Option<Profile>,
    ) -> Option<String> {
        let with_dialect = self
            .dialect
            .as_ref()
            .and_then(|(d, said)| Some((said, clash(Some(*d), machine, profile)?)));
        let with_machine = self
            .machine
            .as_ref()
            .and_then(|(m, said)| Some((said, clash(dialect, Some(*m), profile)?)));
        let with_profile = self
            .profile
            .as_ref()
            .and_then(|(p, said)| Some((said, clash(dialect, machine, Some(*p))?)));
        let (said, why) = with_dialect.or(with_machine).or(with_profile)?;
        Some(format!("{said}, and {why}"))
    }
}

/// One part of the reading: what the trace says, else the flag unless it clashes with what the
/// trace says of another part. A flag not used is said in `notes`, with why.
fn settle<T: Choice>(
    own: &Option<(T, String)>,
    flag: Option<T>,
    notes: &mut Vec<String>,
    clashes: impl Fn(T) -> Option<String>,
) -> Option<T> {
    let mut unused = |flag: T, why: &str| {
        notes.push(format!("--{} {} not used: {why}", T::KEY, flag.name()));
    };
    match (own, flag) {
        (Some((own, said)), Some(flag)) if flag != *own => unused(flag, said),
        (None, Some(flag)) => match clashes(flag) {
            Some(why) => unused(flag, &why),
            None => return Some(flag),
        },
        _ => {}
    }
    own.as_ref().map(|(own, _)| *own)
}

/// What a meta line names and a flag says where the trace does not: a dialect, a machine, a
/// profile.
trait Choice: Copy + PartialEq + clap::ValueEnum {
    /// Its key in the meta line, and its flag.
    const KEY: &'static str;

    fn name(self) -> &'static str;
}

impl Choice for Dialect {
    const KEY: &'static str = "dialect";

    fn name(self) -> &'static str {
        Dialect::name(self)
    }
}

impl Choice for Profile {
    const KEY: &'static str = "profile";

    fn name(self) -> &'static str {
        Profile::name(self)
    }
}

impl Choice for Machine {
    const KEY: &'static str = "machine";

    fn name(self) -> &'static str {
        Machine::name(self)
    }
}

/// What the meta line names of a part, with where it says it ("the meta line names dialect
/// lab"); an unknown name is an input error on line 1.
fn named<T: Choice>(meta: Option<&serde_json::Value>) -> Result<Option<(T, String)>, InputError> {
    let key = T::KEY;
    let Some(name) = meta.and_then(|m| m.get(key)?.as_str()) else {
        return Ok(None);
    };
    let Some(named) = T::value_variants().iter().find(|v| v.name() == name) else {
        let expected: Vec<String> = T::value_variants()
            .iter()
            .map(|v| format!("`{}`", v.name()))
            .collect();
        return Err(InputError::at(
            1,
            format!(
                "unknown {key} {name:?} in the meta line; expected {}",
                expected.join(" or ")
            ),
        ));
    };
    Ok(Some((*named, format!("the meta line names {key} {name}"))))
}

/// A trace checked: how it was read (always known when there is a verdict; an error may come
/// before its first line said), and the verdict or why it is not readable as a trace.
#[derive(Clone, Debug)]
pub struct Checked {
    pub reading: Option<Reading>,
    pub verdict: Result<Verdict, InputError>,
}

/// What the command line chose: each part used for a trace that does not say its own (in its
/// meta line, or, for the dialect, by its first line) and does not contradict what the trace
/// says; `None` leaves it to the trace, else the default (canonical, turn, the dialect's own
/// profile or the lab's).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    pub dialect: Option<Dialect>,
    pub machine: Option<Machine>,
    pub profile: Option<Profile>,
    /// The field that names a line's session (`--session-key`).
    pub session_key: Option<String>,
}

/// Checks a trace read as [`reading`] decides from its first line, then streams the rest.
pub fn check_input(input: impl BufRead, flags: &Flags) -> Checked {
    check_input_keeping(input, flags, Keep::Findings)
}

/// [`check_input`], keeping what `keep` asks for beside the findings.
pub fn check_input_keeping(mut input: impl BufRead, flags: &Flags, keep: Keep) -> Checked {
    use std::io::Read;
    let mut first = String::new();
    if let Err(e) = input.read_line(&mut first) {
        let verdict = Err(InputError::at(1, format!("cannot read: {e}")));
        return Checked {
            reading: None,
            verdict,
        };
    }
    let read = match reading(&first, flags) {
        Ok(read) => read,
        Err(e) => {
            return Checked {
                reading: None,
                verdict: Err(e),
            }
        }
    };
    let unnamed = read.dialect == Dialect::Canonical && flags.dialect.is_none() && kindless(&first);
    let whole = std::io::Cursor::new(first.into_bytes()).chain(input);
    let verdict = check_dialect(whole, &read, keep).map_err(|mut e| {
        if unnamed && e.line == 1 {
            e.message.push_str(
                "; read as canonical, as no meta line names its dialect, no stack's shape fits its \
                 first line and no --dialect was given: add a meta line naming it \
                 ({\"meta\":{\"dialect\":\"…\"}}) or --dialect",
            );
        }
        e
    });
    Checked {
        verdict,
        reading: Some(read),
    }
}

/// Whether the first line is a JSON object of no canonical kind (neither a meta line nor an
/// input, output or session end): a log in a dialect nothing named, that the canonical reader
/// refuses at its first line.
fn kindless(first: &str) -> bool {
    let first = first.trim_start_matches('\u{feff}');
    matches!(
        serde_json::from_str::<serde_json::Value>(first),
        Ok(serde_json::Value::Object(line))
            if !super::recognise::CANONICAL_KINDS.iter().any(|k| line.contains_key(*k))
    )
}
