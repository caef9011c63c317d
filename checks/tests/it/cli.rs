//! The `turnfence gate`, `explore` and `fuzz` commands as a user runs them: flags, evidence files,
//! exit codes (`check`: `cli_check.rs`).

use std::path::Path;
use std::process::{Command, Output};

use crate::cli_check::junit_cases;
use crate::read;

pub(crate) fn turnfence(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_turnfence"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the turnfence binary runs")
}

/// Asserts the command exited with `code`; if not, shows what it wrote to `shown`.
#[track_caller]
pub(crate) fn assert_exit(out: &Output, code: i32, shown: &[u8]) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(shown)
    );
}

#[test]
fn gate_writes_the_evidence_and_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let out = turnfence(&["gate"], dir.path());
    assert_exit(&out, 0, &out.stderr);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains("RESULT PASS :: 24/24 assertions passed"),
        "{stdout}"
    );
    // The default output directory is lab-output/ under the working directory.
    let evidence = dir.path().join("lab-output");
    for name in [
        "events.jsonl",
        "report.json",
        "metrics.json",
        "acceptance.log",
        "cancel_tree.log",
    ] {
        assert!(evidence.join(name).is_file(), "{name} missing");
    }
    let leftovers: Vec<_> = std::fs::read_dir(&evidence)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    let report: serde_json::Value =
        serde_json::from_str(&read(&evidence.join("report.json"))).unwrap();
    assert_eq!(report["status"], "PASS");
    assert_eq!(report["assertions"]["total"], 24);
    // Every events.jsonl line is one JSON object in the lab's shape.
    for line in read(&evidence.join("events.jsonl")).lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        for key in turnfence_checks::dialect::lab::FIELDS {
            assert!(v.get(key).is_some(), "{key} missing in {line}");
        }
    }
}

/// The binary of this test build — built with the dev-dependencies' features unified into its
/// dependencies, as `cargo test` and `cargo bench` build it — has no flaw switch: its gate says
/// so, and it refuses to plant a flaw. Only `--features flaws` on this crate puts one in.
#[test]
fn the_test_build_of_the_binary_has_no_flaw_switch() {
    let dir = tempfile::tempdir().unwrap();
    let out = turnfence(&["gate", "--agent", "--output", "ev"], dir.path());
    assert_eq!(out.status.code(), Some(0));
    let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let report: serde_json::Value =
        serde_json::from_str(&read(Path::new(line["report"].as_str().unwrap()))).unwrap();
    let switch = cfg!(feature = "flaws");
    assert_eq!(report["environment"]["flaws_compiled"], switch);
    if !switch {
        for (machine, flaw) in [("turn", "deliver_after_stop"), ("fence", "ack_per_token")] {
            let args = [
                "explore",
                "--machine",
                machine,
                "--flaw",
                flaw,
                "--depth",
                "1",
            ];
            let out = turnfence(&args, dir.path());
            assert_eq!(out.status.code(), Some(2), "{machine} {flaw}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.contains("needs the flaw switch"), "{stderr}");
        }
    }
}

#[test]
fn agent_mode_prints_one_json_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = turnfence(&["gate", "--agent", "--output", "ev"], dir.path());
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["status"], "PASS");
    let report = Path::new(v["report"].as_str().unwrap());
    assert!(report.is_absolute() && report.is_file(), "{report:?}");
}

#[test]
fn clean_removes_stale_evidence_and_one_scenario_writes_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let ev = dir.path().join("ev");
    std::fs::create_dir_all(&ev).unwrap();
    #[allow(clippy::disallowed_methods)] // A stale file from an earlier run.
    std::fs::write(ev.join("voice_barge_in.log"), "stale").unwrap();
    let out = turnfence(
        &[
            "gate",
            "--scenario",
            "cancel_tree",
            "--output",
            "ev",
            "--clean",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(
        !ev.join("voice_barge_in.log").exists(),
        "--clean kept a stale log"
    );
    assert!(ev.join("cancel_tree.log").is_file());
    let acceptance = read(&ev.join("acceptance.log"));
    assert!(acceptance.contains("RESULT PASS :: 3/3"), "{acceptance}");
}

#[test]
fn an_unknown_scenario_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = turnfence(&["gate", "--scenario", "nope"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("baseline_stream"));
}

#[test]
fn two_runs_write_identical_bytes() {
    let dir = tempfile::tempdir().unwrap();
    for d in ["a", "b"] {
        assert_eq!(
            turnfence(&["gate", "--output", d], dir.path())
                .status
                .code(),
            Some(0)
        );
    }
    for name in [
        "events.jsonl",
        "report.json",
        "metrics.json",
        "acceptance.log",
        "reconnect_replay.log",
    ] {
        assert_eq!(
            read(&dir.path().join("a").join(name)),
            read(&dir.path().join("b").join(name)),
            "{name} differs between runs"
        );
    }
}

/// `--profile openai-realtime` runs the realtime gate: its four scenarios and 12 checks, evidence
/// the checker reads by its meta lines alone; a scenario of the other gate is an input error.
#[test]
fn the_realtime_gate_runs_by_its_profile_and_its_evidence_checks_clean() {
    let dir = tempfile::tempdir().unwrap();
    let out = turnfence(
        &["gate", "--profile", "openai-realtime", "--output", "ev"],
        dir.path(),
    );
    assert_exit(&out, 0, &out.stderr);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains("profile=openai-realtime")
            && stdout.contains("RESULT PASS :: 12/12 assertions passed"),
        "{stdout}"
    );
    let ev = dir.path().join("ev");
    assert!(ev.join("realtime_stale_cancel.log").is_file());
    let checked = turnfence(&["check", ev.to_str().unwrap()], dir.path());
    assert_exit(&checked, 0, &checked.stdout);

    let out = turnfence(
        &[
            "gate",
            "--scenario",
            "realtime_stale_cancel",
            "--output",
            "ev",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--profile openai-realtime"));
}

/// `explore` leads each bound set's line with its verdict and ends with the verdict over all of
/// them and the coverage of their union.
#[test]
fn explore_says_its_verdict_first() {
    let dir = tempfile::tempdir().unwrap();
    let bounds =
        r#"{"turns":1,"children_per_turn":1,"deltas_per_turn":1,"deadline_ms":100,"client":false}"#;
    let out = turnfence(
        &[
            "explore",
            "--machine",
            "turn",
            "--bounds",
            bounds,
            "--junit",
            "explore.xml",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[1].starts_with("no violation (turn machine): "),
        "{text}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with(
            "VERDICT: no violation: every state within the bounds explored; 1 bound set(s)"
        )),
        "{text}"
    );
    assert!(
        lines.last().unwrap().starts_with("coverage of the union: "),
        "{text}"
    );
    // JUnit: a test case for the bound set, passing, and one for the union's coverage, which
    // one small bound set cannot complete.
    let (cases, failed, errored) = junit_cases(&read(&dir.path().join("explore.xml")));
    assert_eq!(
        cases,
        [
            "explore turn bounds custom",
            "explore turn coverage of the union"
        ]
    );
    assert_eq!(failed, ["explore turn coverage of the union"]);
    assert!(errored.is_empty());
}

/// `explore --symmetry` explores the fence machine up to a renaming of tokens and request ids,
/// and the turn machine up to respawns of a turn's children: the bounds it prints say so, it
/// finds fewer states, and the run says it was reduced and how to rerun without.
#[test]
fn explore_with_symmetry_reduces_the_fence_and_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let fence = r#"{"requests":2,"owner_messages":1,"queue":false,"malformed":true}"#;
    let turn =
        r#"{"turns":1,"children_per_turn":2,"deltas_per_turn":1,"deadline_ms":100,"client":false}"#;
    let states = |machine: &str, bounds: &str, symmetry: bool| {
        let mut args = vec!["explore", "--machine", machine, "--bounds", bounds];
        if symmetry {
            args.push("--symmetry");
        }
        let out = turnfence(&args, dir.path());
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(text.contains(r#""symmetry":true"#), symmetry, "{text}");
        assert_eq!(
            text.contains("reduced (symmetry)") && text.contains("rerun without --symmetry"),
            symmetry,
            "{text}"
        );
        let line = text.lines().nth(1).unwrap().to_owned();
        let (_, rest) = line.split_once("machine): ").unwrap();
        rest.split(' ').next().unwrap().parse::<usize>().unwrap()
    };
    for (machine, bounds) in [("fence", fence), ("turn", turn)] {
        assert!(
            states(machine, bounds, true) < states(machine, bounds, false),
            "{machine}"
        );
    }
}

/// `explore --reduce` explores with sleep sets: the same distinct states and verdict as without,
/// fewer transitions, and the run says it was reduced and how to rerun without; beside
/// `--symmetry` it is refused.
#[test]
fn explore_reduced_says_so_and_keeps_the_states() {
    let dir = tempfile::tempdir().unwrap();
    let bounds = r#"{"requests":1,"owner_messages":1,"queue":true,"malformed":false}"#;
    let run = |reduce: bool| {
        let mut args = vec!["explore", "--machine", "fence", "--bounds", bounds];
        if reduce {
            args.push("--reduce");
        }
        let out = turnfence(&args, dir.path());
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(text.contains("rerun without --reduce"), reduce, "{text}");
        let line = text.lines().nth(1).unwrap().to_owned();
        let (verdict, rest) = line.split_once(" (fence machine): ").unwrap();
        let count = |unit: &str| {
            let (before, _) = rest.split_once(unit).unwrap();
            before.rsplit(' ').next().unwrap().parse::<usize>().unwrap()
        };
        (
            verdict.to_owned(),
            count(" distinct states"),
            count(" transitions"),
        )
    };
    let ((verdict, states, transitions), (rverdict, rstates, rtransitions)) =
        (run(false), run(true));
    assert_eq!((rverdict, rstates), (verdict, states));
    assert!(
        rtransitions < transitions,
        "{rtransitions} of {transitions}"
    );
    let out = turnfence(
        &["explore", "--machine", "fence", "--reduce", "--symmetry"],
        dir.path(),
    );
    assert_exit(&out, 2, &out.stderr);
}

/// `explore --deep` explores the CI bound sets and then the deeper ones, in that order (cut at
/// depth 2 here: the deeper fence set alone takes a minute in a debug build); `--deep` beside
/// `--bounds` is refused.
#[test]
fn explore_deep_adds_the_deeper_bound_sets_after_the_ci_ones() {
    use turnfence_checks::explore::Explore;
    use turnfence_model::turn::TurnMachine;
    let dir = tempfile::tempdir().unwrap();
    let out = turnfence(
        &["explore", "--machine", "turn", "--deep", "--depth", "2"],
        dir.path(),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let named: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("bounds ")?.split(':').next())
        .collect();
    let expected: Vec<&str> = <TurnMachine>::ci_bounds()
        .into_iter()
        .chain(<TurnMachine>::deep_bounds())
        .map(|(name, _)| name)
        .collect();
    assert!(expected.contains(&"three"), "{expected:?}");
    assert_eq!(named, expected, "{text}");
    let out = turnfence(
        &["explore", "--machine", "turn", "--deep", "--bounds", "{}"],
        dir.path(),
    );
    assert_exit(&out, 2, &out.stderr);
}

/// `fuzz --junit` writes the run as a test case.
#[test]
fn fuzz_writes_junit() {
    let dir = tempfile::tempdir().unwrap();
    let out = turnfence(
        &[
            "fuzz",
            "--machine",
            "fence",
            "--cases",
            "3",
            "--steps",
            "30",
            "--junit",
            "fuzz.xml",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(0));
    let (cases, failed, _) = junit_cases(&read(&dir.path().join("fuzz.xml")));
    assert_eq!(cases, ["fuzz fence seed 0 cases 0..3"]);
    assert!(failed.is_empty());
}

/// `fuzz --profile` runs the sound turn machine under a profile's rules (and its invariants);
/// the fence machine has the lab's rules only, and says so. Its help lists every profile, and
/// the turn machine runs under each.
#[test]
fn fuzz_takes_a_profile() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "fuzz",
        "--machine",
        "turn",
        "--profile",
        "openai-realtime",
        "--cases",
        "20",
    ];
    let out = turnfence(&args, dir.path());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("truncated_to_heard"), "{stdout}");
    let args = ["fuzz", "--machine", "fence", "--profile", "openai-realtime"];
    let out = turnfence(&args, dir.path());
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no profile"), "{stderr}");
    let help = turnfence(&["fuzz", "--help"], dir.path());
    let help = String::from_utf8_lossy(&help.stdout);
    let (_, profile) = help.split_once("--profile").unwrap();
    let (profile, _) = profile.split_once("--junit").unwrap();
    assert!(
        profile.contains("the fence machine `lab` only"),
        "{profile}"
    );
    for p in turnfence_checks::trace::Profile::ALL {
        assert!(profile.contains(p.name()), "{} in {profile}", p.name());
        let args = [
            "fuzz",
            "--machine",
            "turn",
            "--profile",
            p.name(),
            "--cases",
            "2",
        ];
        let out = turnfence(&args, dir.path());
        assert_exit(&out, 0, &out.stderr);
    }
}

/// A profile without a gate of its own is an input error (exit 2) naming the gates there are,
/// not an empty gate that fails with nothing checked; no evidence is written.
#[test]
fn a_gate_for_a_profile_without_one_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = turnfence(&["gate", "--profile", "livekit-agents"], dir.path());
    assert_exit(&out, 2, &out.stderr);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("has no gate of its own") && err.contains("lab and openai-realtime"),
        "{err}"
    );
    assert!(!dir.path().join("lab-output").exists());
}
