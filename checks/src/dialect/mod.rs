//! Every dialect `check` reads, one folder each, and the registry: the one table of them
//! ([`DIALECTS`]) that the CLI, `check` and the live monitor take from. A dialect is a
//! [`DialectEntry`] — how its log is recognised, read and said —
//! and, for a real stack, a [`StackDialect`](crate::trace::StackDialect): what one line of its
//! log is to the machine, read by the reader every stack shares
//! ([`StackReader`](crate::trace::StackReader)), with the steps its stack takes without a line.
//! The lab's reader implements the checker's [`Reader`](crate::trace::Reader) itself (it holds
//! a scenario's lines back). Adding a stack is its folder and its line in [`DIALECTS`] — and,
//! where its profile has a gate of its own or bound sets the explorer walks, its line in
//! [`GATES`] and [`EXPLORED`]: the gate and the explorer know no stack by name.
//!
//! `choose` decides how a trace is read: its dialect, machine and profile.

mod canonical;
mod choose;
pub mod lab;
pub mod livekit;
pub mod openai_realtime;
pub mod pipecat;

pub use choose::{
    check_input, check_input_keeping, check_input_keeping_lines, reading, reading_among, Checked,
    Flags,
};

use serde_json::Value;

use crate::trace::{Dialect, DialectEntry};

/// Every dialect, in the order a first line is recognised and an error lists them. The first is
/// the canonical form: a trace whose dialect nothing names or shows.
pub static DIALECTS: &[&dyn DialectEntry] = &[
    &canonical::Entry,
    &lab::entry::Entry,
    &openai_realtime::entry::Entry,
    &livekit::entry::Entry,
    &pipecat::entry::Entry,
];

/// Every real stack's profile's own gate, beside the lab's (`gate::scenarios::names`): its
/// scenarios and checks, in its folder.
pub static GATES: &[&crate::gate::Suite] = &[&openai_realtime::gate::SUITE];

/// Every real stack's profile as the explorer explores it (`explore::turn`): its bound sets and
/// the word its moments are named under, in its folder.
pub static EXPLORED: &[&crate::explore::turn::ProfileBounds] = &[
    &openai_realtime::explore::EXPLORED,
    &livekit::explore::EXPLORED,
    &pipecat::explore::EXPLORED,
];

/// The canonical form.
pub const CANONICAL: Dialect = Dialect(&canonical::Entry);

/// The dialect of this name, if there is one.
pub fn by_name(name: &str) -> Option<Dialect> {
    DIALECTS
        .iter()
        .find(|d| d.name() == name)
        .map(|d| Dialect(*d))
}

/// The text at `pointer` in a line, if it is text.
fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// A sentence naming every thing of the model a vocabulary names: each noun alone, each with an
/// id (a turn with each of `turns`), and as an output's field — for the vocabularies' tests.
#[cfg(test)]
pub(crate) fn every_thing(turns: &[&str]) -> turnfence_model::said::Said {
    use turnfence_model::said::{self, Noun, Part, Said};
    let mut parts: Vec<Part> = vec![Noun::Turn.into(), Noun::Frame.into()];
    parts.extend(turns.iter().map(|t| said::turn(t)));
    parts.extend([said::child("c"), said::call("call_1")]);
    parts.extend([Noun::Turn, Noun::Child, Noun::Call].map(|n| Part::Field(n, "x".into())));
    let mut said: Vec<Part> = Vec::new();
    for (i, p) in parts.into_iter().enumerate() {
        if i > 0 {
            said.push(", ".into());
        }
        said.push(p);
    }
    Said::of(said)
}

/// The table tests each stack's folder holds: each `(line, from, to, words)` said by `entry` as
/// the row says, and each of `firsts` recognised as `entry`'s among every dialect here.
#[cfg(test)]
pub(crate) fn assert_said_and_recognised(
    entry: &'static dyn DialectEntry,
    cases: &[(&str, crate::trace::Party, crate::trace::Party, &str)],
    firsts: &[&str],
) {
    for (line, from, to, words) in cases {
        let s = crate::report::words::said(Dialect(entry), None, line);
        let got = (s.from, s.to, s.words.as_str());
        assert_eq!(got, (*from, *to, *words), "{}: {line}", entry.name());
    }
    for first in firsts {
        let read = reading(first, &Flags::default()).unwrap();
        assert_eq!(read.dialect, Dialect(entry), "{first}");
    }
}

#[cfg(test)]
mod tests {
    use super::DIALECTS;

    /// Each dialect says what it reads (`--dialect`'s help), in words of its own, and answers to
    /// its name alone.
    #[test]
    fn each_dialect_says_what_it_reads_and_answers_to_its_name() {
        let mut abouts: Vec<&str> = DIALECTS.iter().map(|d| d.about()).collect();
        assert!(
            abouts.iter().all(|a| a.split_whitespace().count() >= 3),
            "{abouts:?}"
        );
        abouts.sort_unstable();
        abouts.dedup();
        assert_eq!(abouts.len(), DIALECTS.len());
        for d in DIALECTS {
            assert_eq!(super::by_name(d.name()).map(|x| x.name()), Some(d.name()));
        }
        assert!(super::by_name("livekit").is_none());
    }
}
