//! A stack is a folder and one line: a toy dialect written here, against the public trait alone
//! (`DialectEntry`, with the `StackDialect` every real stack's reader shares), and put in a
//! registry beside the crate's own, is recognised by its first line, read, judged and said as
//! the crate's dialects are — the engine needs nothing else to know of it.
//!
//! The toy stack logs each canonical line wrapped in an envelope, `{"toy": LINE}`: every
//! canonical fixture, wrapped, must get the canonical verdict, each finding one line earlier
//! (the toy's log has no meta line).

use std::sync::OnceLock;

use serde_json::{Map, Value};
use turnfence_checks::dialect::{self, Flags, DIALECTS};
use turnfence_checks::report::words;
use turnfence_checks::trace::{
    self, canonical, judging, turn_only, DialectEntry, Event, InputError, Judging, Keep, Party,
    Reading, Sessions, StackDialect, StackReader,
};
use turnfence_model::turn::TurnMachine;

use crate::fixtures;

/// The toy stack's dialect: what one line of its log is to the turn machine.
#[derive(Default)]
struct Toy;

impl StackDialect<TurnMachine> for Toy {
    const COMPLETE: &'static [&'static str] = &[];

    fn line(
        &mut self,
        text: &str,
        line: usize,
        _sessions: &Sessions<TurnMachine>,
    ) -> Result<Vec<Event<TurnMachine>>, InputError> {
        let wrapped: Value = serde_json::from_str(text)
            .map_err(|e| InputError::at(line, format!("not a toy line: {e}")))?;
        let Some(inner) = wrapped.get("toy") else {
            return Err(InputError::at(line, "a toy line has `toy`"));
        };
        Ok(vec![canonical::read_line::<TurnMachine>(
            &inner.to_string(),
            line,
        )?])
    }
}

/// The toy's entry: its folder's one public item.
struct ToyEntry;

impl DialectEntry for ToyEntry {
    fn name(&self) -> &'static str {
        "toy"
    }

    fn about(&self) -> &'static str {
        "canonical lines in a `toy` envelope"
    }

    fn recognise(&self, first: &Map<String, Value>) -> Option<&'static str> {
        first
            .contains_key("toy")
            .then_some("its first line is a `toy` envelope")
    }

    fn reader(&self, read: &Reading) -> Result<Box<dyn Judging>, InputError> {
        turn_only(read)?;
        judging(StackReader::<Toy>::default(), read.profile)
    }

    fn said(&self, line: &Value) -> (Party, Party, String) {
        let kind = ["input", "output"]
            .iter()
            .find_map(|k| line.pointer(&format!("/toy/{k}"))?.as_str())
            .unwrap_or("(other)");
        (Party::User, Party::App, format!("toy {kind}"))
    }
}

/// The crate's registry and the toy's one line.
fn registry() -> &'static [&'static dyn DialectEntry] {
    static WITH_TOY: OnceLock<Vec<&'static dyn DialectEntry>> = OnceLock::new();
    WITH_TOY.get_or_init(|| DIALECTS.iter().copied().chain([&ToyEntry as _]).collect())
}

/// A canonical trace's lines after its meta line, each in the toy's envelope.
fn wrapped(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.contains("\"meta\""))
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a fixture's line is JSON");
            format!("{}\n", serde_json::json!({ "toy": v }))
        })
        .collect()
}

#[test]
fn a_toy_dialect_in_the_registry_reads_every_canonical_fixture_as_canonical_does() {
    let mut compared = 0;
    for path in fixtures("accepted").into_iter().chain(fixtures("rejected")) {
        let text = std::fs::read_to_string(&path).unwrap();
        let canonical_meta = text
            .lines()
            .next()
            .and_then(|l| serde_json::from_str::<Value>(l).ok())
            .and_then(|v| v.get("meta").cloned());
        let Some(meta) = canonical_meta else { continue };
        let plain = meta.get("dialect").is_none_or(|d| d == "canonical")
            && meta.get("machine").is_none_or(|m| m == "turn")
            && meta.get("profile").is_none_or(|p| p == "lab")
            && meta.get("complete").is_none()
            && meta.get("partial").is_none();
        if !plain {
            continue;
        }
        let Ok(expected) = dialect::check_input(text.as_bytes(), &Flags::default()).verdict else {
            continue;
        };
        let toy = wrapped(&text);
        let first = toy.lines().next().unwrap_or_default();
        let read = dialect::reading_among(first, &Flags::default(), registry()).unwrap();
        assert_eq!(read.dialect.name(), "toy", "{}", path.display());
        assert_eq!(
            read.overrides,
            ["read as toy: no meta line names a dialect, and its first line is a `toy` envelope"]
        );
        let got = trace::check_dialect(toy.as_bytes(), &read, Keep::Findings)
            .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
        let names = |v: &trace::Verdict, shift: usize| -> Vec<(Option<&str>, usize)> {
            v.findings
                .iter()
                .map(|f| (f.invariant, f.line - shift))
                .collect()
        };
        assert_eq!(names(&got, 0), names(&expected, 1), "{}", path.display());
        let said = words::said(read.dialect, None, first);
        assert!(said.words.starts_with("toy "), "{said:?}");
        compared += 1;
    }
    assert!(
        compared >= 30,
        "only {compared} canonical fixtures compared"
    );
}

#[test]
fn the_crates_own_registry_does_not_know_the_toy() {
    let first = r#"{"toy":{"at":0,"input":"accept","turn":"t1","generation":1,"mode":"text"}}"#;
    let read = dialect::reading(first, &Flags::default()).unwrap();
    assert_eq!(read.dialect, dialect::CANONICAL);
    assert!(dialect::by_name("toy").is_none());
    let flags = Flags::default();
    let among = dialect::reading_among(r#"{"meta":{"dialect":"toy"}}"#, &flags, registry());
    assert_eq!(among.unwrap().dialect.name(), "toy");
}
