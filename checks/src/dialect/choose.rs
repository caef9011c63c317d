//! How a trace is read: in the dialect, for the machine and under the profile its meta line
//! names, else (the dialect) its first line shows, else a flag says — a flag the trace
//! contradicts not used, and said — and the check of a whole trace from its first line on.

use std::io::BufRead;
use std::sync::Arc;

use serde_json::Value;
use turnfence_model::turn::Profile;

use super::{CANONICAL, DIALECTS};
use crate::trace::DialectEntry;
use crate::trace::{
    check_dialect, check_dialect_keeping_lines, Dialect, InputError, Keep, KeepLines, Machine,
    Reading, Verdict,
};

/// The keys that give a canonical line its kind (a line has exactly one): a line with one is no
/// stack's.
pub(super) const CANONICAL_KINDS: [&str; 4] = ["meta", "input", "output", "session_end"];

/// The dialect a log's first line shows, and why; `None`: no stack's shape fits it (the
/// canonical form, or a line the canonical reader will refuse with its reason).
fn recognise(
    first: &str,
    dialects: &'static [&'static dyn DialectEntry],
) -> Option<(Dialect, &'static str)> {
    let Ok(Value::Object(line)) = serde_json::from_str::<Value>(first) else {
        return None;
    };
    if CANONICAL_KINDS.iter().any(|k| line.contains_key(*k)) {
        return None;
    }
    dialects
        .iter()
        .find_map(|d| Some((Dialect(*d), d.recognise(&line)?)))
}

/// A trace read as canonical, of the turn machine, under the lab's profile.
impl Default for Reading {
    fn default() -> Reading {
        Reading {
            dialect: CANONICAL,
            machine: Machine::Turn,
            profile: Profile::Lab,
            session_key: None,
            overrides: Vec::new(),
        }
    }
}

/// Which dialect, machine and profile a trace is read as, each part from the trace itself where
/// it says — its meta line (`first`, the trace's first line), else, for the dialect, its first
/// line recognised as a stack's — else from the flag, else canonical, turn, and the dialect's
/// own profile (the lab's for canonical and lab). A flag that contradicts what the trace says is
/// not used, and the reading says so; a real stack's dialect implies its profile.
pub fn reading(first: &str, flags: &Flags) -> Result<Reading, InputError> {
    reading_among(first, flags, DIALECTS)
}

/// [`reading`] among `dialects` (the registry's, or a test's own beside them); the first is the
/// one a trace no meta line, first line or flag names is read in.
pub fn reading_among(
    first: &str,
    flags: &Flags,
    dialects: &'static [&'static dyn DialectEntry],
) -> Result<Reading, InputError> {
    let first = first.trim_start_matches('\u{feff}');
    let meta = serde_json::from_str::<serde_json::Value>(first)
        .ok()
        .and_then(|v| v.get("meta").cloned());
    let mut overrides = Vec::new();
    let mut own = Own {
        dialect: named(
            meta.as_ref(),
            dialects.iter().map(|d| Dialect(*d)).collect(),
        )?,
        machine: named(meta.as_ref(), vec![Machine::Turn, Machine::Fence])?,
        profile: named(meta.as_ref(), Profile::ALL.to_vec())?,
    };
    if own.dialect.is_none() {
        if let Some((dialect, why)) = recognise(first, dialects) {
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
    let dialect = dialect.unwrap_or(Dialect(dialects[0]));
    let implied = dialect.entry().profile();
    if let Some(why) = clash(Some(dialect), None, profile) {
        return Err(InputError::at(0, format!("{why}: leave the profile out")));
    }
    let meta_key = meta
        .as_ref()
        .and_then(|m| m.get("session_key")?.as_str().map(str::to_owned));
    let session_key = flags.session_key.clone().or(meta_key);
    if session_key.is_some() && !dialect.entry().reads_session_key() {
        let readers: Vec<&str> = dialects
            .iter()
            .filter(|d| d.reads_session_key())
            .map(|d| d.name())
            .collect();
        return Err(InputError::at(
            0,
            format!(
                "a session key is read by the {} dialect only, not {}",
                readers.join(" and "),
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

/// Why the parts given cannot be read together, if they cannot: a real stack's dialect under
/// another stack's profile, a dialect other than canonical for the fence machine, the fence
/// machine under a profile other than the lab's.
fn clash(
    dialect: Option<Dialect>,
    machine: Option<Machine>,
    profile: Option<Profile>,
) -> Option<String> {
    if let (Some(d), Some(p)) = (dialect, profile) {
        if let Some(own) = d
            .entry()
            .profile()
            .filter(|own| p != Profile::Lab && p != *own)
        {
            return Some(format!(
                "the {} dialect is read under its own profile {:?}, not {:?}",
                d.name(),
                own.name(),
                p.name()
            ));
        }
    }
    let fence = machine == Some(Machine::Fence);
    if let Some(d) = dialect.filter(|d| fence && !d.entry().reads_fence()) {
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
trait Choice: Copy + PartialEq {
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
fn named<T: Choice>(
    meta: Option<&serde_json::Value>,
    all: Vec<T>,
) -> Result<Option<(T, String)>, InputError> {
    let key = T::KEY;
    let Some(name) = meta.and_then(|m| m.get(key)?.as_str()) else {
        return Ok(None);
    };
    let Some(named) = all.iter().find(|v| v.name() == name) else {
        let expected: Vec<String> = all.iter().map(|v| format!("`{}`", v.name())).collect();
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
pub fn check_input_keeping(input: impl BufRead, flags: &Flags, keep: Keep) -> Checked {
    check_input_with(input, flags, keep, None)
}

/// [`check_input`], each line handed to `lines` as it is read and each finding as it is found:
/// what is said of the findings after the pass (their stories, their fingerprints) is said from
/// what `lines` kept, the input read once.
pub fn check_input_keeping_lines(
    input: impl BufRead,
    flags: &Flags,
    lines: Arc<dyn KeepLines>,
) -> Checked {
    check_input_with(input, flags, Keep::Findings, Some(lines))
}

fn check_input_with(
    mut input: impl BufRead,
    flags: &Flags,
    keep: Keep,
    lines: Option<Arc<dyn KeepLines>>,
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
    let read = match reading(&first, flags) {
        Ok(read) => read,
        Err(e) => {
            return Checked {
                reading: None,
                verdict: Err(e),
            }
        }
    };
    let unnamed = read.dialect == CANONICAL && flags.dialect.is_none() && kindless(&first);
    let whole = std::io::Cursor::new(first.into_bytes()).chain(input);
    let verdict = match lines {
        Some(lines) => check_dialect_keeping_lines(whole, &read, keep, lines),
        None => check_dialect(whole, &read, keep),
    };
    let verdict = verdict.map_err(|mut e| {
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
            if !CANONICAL_KINDS.iter().any(|k| line.contains_key(*k))
    )
}

#[cfg(test)]
mod tests {
    use super::recognise;

    fn dialect(first: &str) -> Option<&'static str> {
        recognise(first, super::super::DIALECTS).map(|(d, _)| d.name())
    }

    #[test]
    fn each_stack_is_recognised_by_the_keys_it_writes_and_nothing_else_is() {
        // Each real stack's first lines are recognised in its own folder's tests (`entry.rs`).
        let lab = r#"{"t_ms":0,"scenario":"s","turn_id":"t","component":"turn","event":"accepted","detail":{}}"#;
        assert_eq!(dialect(lab), Some("lab"));
        for none in [
            r#"{"meta":{}}"#,
            r#"{"at":0,"input":"accept","turn":"t1","generation":1,"mode":"text"}"#,
            r#"{"at":0,"output":"terminal","turn":"t1","state":"cancelled"}"#,
            r#"{"session":"s","session_end":true}"#,
            r#"{"type":"Agent State","created_at":1}"#,
            r#"{"type":"agent_state_changed"}"#,
            r#"{"t_ms":0,"dir":"sideways","event":{"type":"response.created"}}"#,
            r#"{"t_ms":0,"type":"hello"}"#,
            r#"{"t_ms":0,"frame":"Start"}"#,
            r#"{"frame":"StartFrame"}"#,
            r#"{"events":[],"type":"x"}"#,
            "[1,2]",
            "not json",
        ] {
            assert_eq!(dialect(none), None, "{none}");
        }
    }
}
