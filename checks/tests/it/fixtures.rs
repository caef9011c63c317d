//! Tests are data: every fixture replayed through `check`, its verdict held to its meta line.
//! Each rejected fixture's report is a reviewed snapshot.

use std::collections::BTreeMap;
use std::path::Path;

use crate::{fixture, fixtures, meta, read};

use turnfence_checks::dialect;
use turnfence_checks::gate;
use turnfence_checks::report;
use turnfence_model::prelude::*;
use turnfence_model::turn::{Invariant, Profile, TurnMachine};

/// Replays one fixture and asserts the verdict its meta line expects; returns the report.
#[track_caller]
fn check(path: &Path) -> String {
    let text = read(path);
    let meta = fixture(&text);
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    // Read as its own meta line says (dialect and machine), as `turnfence check` reads it.
    let result = dialect::check_input(text.as_bytes(), &Default::default()).verdict;
    match (meta["expect"].as_str(), result) {
        (Some("accepted"), Ok(v)) => {
            assert!(
                v.conforms(),
                "{name} should conform:\n{}",
                report::text::render_text(&v, report::text::MAX_TEXT_FINDINGS)
            );
            report::text::render_text(&v, report::text::MAX_TEXT_FINDINGS)
        }
        (Some("rejected"), Ok(v)) => {
            // An invariant's name, or a conformance kind's (`left_open`, …).
            let expected = meta["invariant"].as_str().unwrap();
            let named: Vec<&str> = v.findings.iter().map(|f| f.name()).collect();
            assert!(
                named.contains(&expected),
                "{name}: expected {expected}, found {named:?}\n{}",
                report::text::render_text(&v, report::text::MAX_TEXT_FINDINGS)
            );
            assert!(
                v.findings.iter().all(|f| f.line > 0),
                "{name}: a finding without a line"
            );
            // Where the meta line says: at its `line`, or exactly one at each of its `lines`.
            let at: Vec<usize> = v
                .findings
                .iter()
                .filter(|f| f.name() == expected)
                .map(|f| f.line)
                .collect();
            if let Some(line) = meta["line"].as_u64() {
                assert!(
                    at.contains(&(line as usize)),
                    "{name}: expected {expected} at line {line}, found it at {at:?}"
                );
            }
            if let Some(lines) = meta["lines"].as_array() {
                let lines: Vec<usize> = lines
                    .iter()
                    .filter_map(|l| l.as_u64())
                    .map(|l| l as usize)
                    .collect();
                assert_eq!(
                    at, lines,
                    "{name}: one {expected} per broken event, each at its line"
                );
            }
            report::text::render_text(&v, report::text::MAX_TEXT_FINDINGS)
        }
        (Some("input_error"), Err(e)) => {
            assert_eq!(e.line as u64, meta["line"].as_u64().unwrap(), "{name}: {e}");
            let fragment = meta["error"].as_str().unwrap();
            assert!(
                e.message.contains(fragment),
                "{name}: expected {fragment:?} in {e}"
            );
            format!("input error: {e}\n")
        }
        (expect, Ok(v)) => panic!(
            "{name}: expected {expect:?}, got a verdict:\n{}",
            report::text::render_text(&v, report::text::MAX_TEXT_FINDINGS)
        ),
        (expect, Err(e)) => panic!("{name}: expected {expect:?}, got an input error: {e}"),
    }
}

#[test]
fn accepted_fixtures_conform() {
    let files = fixtures("accepted");
    assert!(files.len() >= 17, "{} accepted fixtures", files.len());
    for f in files {
        check(&f);
    }
}

#[test]
fn rejected_fixtures_are_rejected_naming_their_invariant() {
    let mut reports = Vec::new();
    for f in fixtures("rejected") {
        let report = check(&f);
        let stem = f.file_stem().unwrap().to_string_lossy().into_owned();
        reports.push((stem, report));
    }
    crate::snapshot_settings().bind(|| {
        for (stem, report) in reports {
            insta::assert_snapshot!(format!("check_{stem}"), report);
        }
    });
}

/// The worked examples of `docs/MAPPING.md` give the verdicts the guide quotes.
#[test]
fn the_mapping_guides_examples_give_their_verdicts() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples");
    let mut files: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 3, "{files:?}");
    for f in files {
        check(&f);
    }
}

/// At least two fixtures per invariant, and both dialects among them.
#[test]
fn every_invariant_has_rejected_fixtures_in_both_dialects() {
    let mut seen: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for f in fixtures("rejected") {
        let text = read(&f);
        let m = fixture(&text);
        if let Some(i) = m["invariant"].as_str().and_then(Invariant::from_name) {
            seen.entry(i.name()).or_default().push(
                meta(&text)["dialect"]
                    .as_str()
                    .unwrap_or("canonical")
                    .to_owned(),
            );
        }
    }
    for i in Invariant::ALL {
        let dialects = seen.get(i.name()).cloned().unwrap_or_default();
        assert!(
            dialects.len() >= 2,
            "{}: {} rejected fixtures",
            i.name(),
            dialects.len()
        );
        // Each invariant in its profile's own dialect too — but LiveKit's session events never
        // say a speech is uninterruptible, so that one is canonical only.
        let own = if Profile::Lab.judges(*i) {
            "lab"
        } else if Profile::OpenaiRealtime.judges(*i) {
            "openai-realtime"
        } else if *i == Invariant::UninterruptibleOutputSurvives {
            "canonical"
        } else {
            "livekit-agents"
        };
        assert!(
            dialects.iter().any(|d| d == own) && dialects.iter().any(|d| d == "canonical"),
            "{}: {dialects:?}",
            i.name()
        );
    }
}

/// The gate's canonical traces in `fixtures/accepted/` are the gate's current output.
#[test]
fn gate_trace_fixtures_are_current() {
    let run = gate::run(&gate::NAMES, TurnMachine::new);
    for s in &run.scenarios {
        let path = fixtures("accepted")
            .into_iter()
            .find(|p| {
                p.to_string_lossy()
                    .ends_with(&format!("_gate_{}.jsonl", s.name))
            })
            .unwrap_or_else(|| panic!("no gate fixture for {}", s.name));
        let text = read(&path);
        let body: String = text.lines().skip(1).map(|l| format!("{l}\n")).collect();
        assert_eq!(
            body,
            s.canonical_trace(),
            "{} is stale: regenerate it from `turnfence gate`",
            path.display()
        );
    }
}

/// docs/INVARIANTS.md names every rejected fixture of an invariant (its "Fixtures" list), so the
/// reference a user reads stays the suite's.
#[test]
fn the_invariants_reference_names_every_rejected_fixture() {
    let doc = read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/INVARIANTS.md"));
    let invariants: Vec<&str> = Invariant::ALL
        .iter()
        .map(|i| i.name())
        .chain(
            turnfence_model::fence::Invariant::ALL
                .iter()
                .map(|i| i.name()),
        )
        .collect();
    for path in fixtures("rejected") {
        let meta = fixture(&read(&path));
        let Some(name) = meta["invariant"].as_str() else {
            continue;
        };
        if !invariants.contains(&name) {
            continue;
        }
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        assert!(
            doc.contains(&format!("[`{stem}`]")),
            "docs/INVARIANTS.md does not name {stem} (of {name})"
        );
    }
}
