//! How a trace is read: in the dialect and for the machine its meta line names, unless a flag
//! says otherwise (and then says so), and the check of a whole trace from a reader.

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

/// How a trace was read: its dialect, machine and profile, and each flag that overrode its meta
/// line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reading {
    pub dialect: Dialect,
    pub machine: Machine,
    pub profile: Profile,
    /// The field of a line that names its session (`--session-key`, else the meta line's
    /// `session_key`): a room, a call id. Read by the `livekit-agents` dialect.
    pub session_key: Option<String>,
    /// Where the reading departs from what the meta line names, each said as a sentence: a flag
    /// that disagreed with it, or a dialect recognised from the first line where none was named.
    pub overrides: Vec<String>,
}

/// Which dialect and machine a trace is read as: a flag, else what the meta line (`first`, the
/// trace's first line) names, else canonical and turn.
pub fn reading(first: &str, flags: &Flags) -> Result<Reading, InputError> {
    let meta = serde_json::from_str::<serde_json::Value>(first.trim_start_matches('\u{feff}'))
        .ok()
        .and_then(|v| v.get("meta").cloned());
    let mut overrides = Vec::new();
    let dialect = chosen(flags.dialect, meta.as_ref(), &mut overrides)?;
    let machine = chosen(flags.machine, meta.as_ref(), &mut overrides)?;
    let profile = chosen(flags.profile, meta.as_ref(), &mut overrides)?;
    let dialect = match dialect {
        Some(dialect) => dialect,
        None => match super::recognise::recognise(first.trim_start_matches('\u{feff}')) {
            Some((dialect, why)) => {
                overrides.push(format!(
                    "read as {}: no meta line names a dialect, and {why}",
                    dialect.name()
                ));
                dialect
            }
            None => Dialect::Canonical,
        },
    };
    // A dialect of a real stack implies its profile. Another stack's rules cannot judge its log
    // (the lab's may: they are the reference every stack is read against).
    let implied = match dialect {
        Dialect::OpenaiRealtime => Some(Profile::OpenaiRealtime),
        Dialect::LivekitAgents => Some(Profile::LivekitAgents),
        Dialect::Pipecat => Some(Profile::Pipecat),
        Dialect::Canonical | Dialect::Lab => None,
    };
    let foreign = profile.filter(|p| *p != Profile::Lab && Some(*p) != implied);
    if let (Some(own), Some(named)) = (implied, foreign) {
        return Err(InputError::at(
            0,
            format!(
                "the {} dialect is read under its own profile {:?}, not {:?}: leave the profile out",
                dialect.name(),
                own.name(),
                named.name()
            ),
        ));
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

/// What a meta line names and a flag overrides: a dialect, a machine.
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

/// The flag, else what the meta line names (an unknown name is an input error on line 1); a
/// flag that disagrees with the meta line is said in `overrides`.
fn chosen<T: Choice>(
    flag: Option<T>,
    meta: Option<&serde_json::Value>,
    overrides: &mut Vec<String>,
) -> Result<Option<T>, InputError> {
    let key = T::KEY;
    let Some(name) = meta.and_then(|m| m.get(key)?.as_str()) else {
        return Ok(flag);
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
    if let Some(flag) = flag.filter(|flag| flag != named) {
        overrides.push(format!(
            "--{key} {} overrides the meta line's {key} {}",
            flag.name(),
            named.name()
        ));
    }
    Ok(Some(flag.unwrap_or(*named)))
}

/// A trace checked: how it was read (always known when there is a verdict; an error may come
/// before its first line said), and the verdict or why it is not readable as a trace.
#[derive(Clone, Debug)]
pub struct Checked {
    pub reading: Option<Reading>,
    pub verdict: Result<Verdict, InputError>,
}

/// What the command line chose, each overriding the meta line's choice; `None` leaves it to the
/// meta line (else the default: canonical, turn, lab).
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
    let whole = std::io::Cursor::new(first.into_bytes()).chain(input);
    Checked {
        verdict: check_dialect(whole, &read, keep),
        reading: Some(read),
    }
}
