//! How a trace is read: in the dialect and for the machine its meta line names, unless a flag
//! says otherwise (and then says so), and the check of a whole trace from a reader.

use std::io::BufRead;

use turnfence_model::fence::FenceMachine;
use turnfence_model::turn::TurnMachine;

use super::{canonical, check, Dialect, InputError, Verdict};
use crate::lab::reader::LabReader;

/// Which machine a trace is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Machine {
    Turn,
    Fence,
}

impl Default for Reading {
    fn default() -> Reading {
        Reading {
            dialect: Dialect::Canonical,
            machine: Machine::Turn,
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

/// Checks a trace of a machine in a dialect. The lab dialect is the turn machine's only.
pub fn check_dialect(
    input: impl BufRead,
    dialect: Dialect,
    machine: Machine,
) -> Result<Verdict, InputError> {
    match (dialect, machine) {
        (Dialect::Canonical, Machine::Turn) => check(
            input,
            &mut canonical::CanonicalReader::<TurnMachine>::default(),
        ),
        (Dialect::Canonical, Machine::Fence) => check(
            input,
            &mut canonical::CanonicalReader::<FenceMachine>::default(),
        ),
        (Dialect::Lab, Machine::Turn) => check(input, &mut LabReader::default()),
        (Dialect::Lab, Machine::Fence) => Err(InputError::at(
            0,
            "the lab dialect has turn traces only; fence traces are canonical",
        )),
    }
}

/// How a trace was read: its dialect and machine, and each flag that overrode its meta line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reading {
    pub dialect: Dialect,
    pub machine: Machine,
    /// A flag that disagreed with the meta line, said as a sentence.
    pub overrides: Vec<String>,
}

/// Which dialect and machine a trace is read as: a flag, else what the meta line (`first`, the
/// trace's first line) names, else canonical and turn.
pub fn reading(
    first: &str,
    dialect: Option<Dialect>,
    machine: Option<Machine>,
) -> Result<Reading, InputError> {
    let meta = serde_json::from_str::<serde_json::Value>(first.trim_start_matches('\u{feff}'))
        .ok()
        .and_then(|v| v.get("meta").cloned());
    let named = |key: &str| {
        meta.as_ref()
            .and_then(|m| m.get(key)?.as_str().map(str::to_owned))
    };
    let mut overrides = Vec::new();
    let named_dialect = match named("dialect").as_deref() {
        None => None,
        Some("canonical") => Some(Dialect::Canonical),
        Some("lab") => Some(Dialect::Lab),
        Some(other) => {
            return Err(InputError::at(
                1,
                format!(
                    "unknown dialect {other:?} in the meta line; expected `canonical` or `lab`"
                ),
            ))
        }
    };
    let named_machine = match named("machine").as_deref() {
        None => None,
        Some("turn") => Some(Machine::Turn),
        Some("fence") => Some(Machine::Fence),
        Some(other) => {
            return Err(InputError::at(
                1,
                format!("unknown machine {other:?} in the meta line; expected `turn` or `fence`"),
            ))
        }
    };
    if let (Some(flag), Some(meta)) = (dialect, named_dialect) {
        if flag != meta {
            overrides.push(format!(
                "--dialect {} overrides the meta line's dialect {}",
                flag.name(),
                meta.name()
            ));
        }
    }
    if let (Some(flag), Some(meta)) = (machine, named_machine) {
        if flag != meta {
            overrides.push(format!(
                "--machine {} overrides the meta line's machine {}",
                flag.name(),
                meta.name()
            ));
        }
    }
    Ok(Reading {
        dialect: dialect.or(named_dialect).unwrap_or(Dialect::Canonical),
        machine: machine.or(named_machine).unwrap_or(Machine::Turn),
        overrides,
    })
}

/// A trace checked: how it was read (always known when there is a verdict; an error may come
/// before its first line said), and the verdict or why it is not readable as a trace.
#[derive(Clone, Debug)]
pub struct Checked {
    pub reading: Option<Reading>,
    pub verdict: Result<Verdict, InputError>,
}

/// Checks a trace read as [`reading`] decides from its first line, then streams the rest.
pub fn check_input(
    mut input: impl BufRead,
    dialect: Option<Dialect>,
    machine: Option<Machine>,
) -> Checked {
    use std::io::Read;
    let mut first = String::new();
    if let Err(e) = input.read_line(&mut first) {
        let verdict = Err(InputError::at(1, format!("cannot read: {e}")));
        return Checked {
            reading: None,
            verdict,
        };
    }
    let read = match reading(&first, dialect, machine) {
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
        verdict: check_dialect(whole, read.dialect, read.machine),
        reading: Some(read),
    }
}
