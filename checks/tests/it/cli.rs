//! The `turnfence gate` command as a user runs it: flags, evidence files, exit codes.

use std::path::Path;
use std::process::{Command, Output};

use crate::read;

fn turnfence(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_turnfence"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the turnfence binary runs")
}

#[test]
fn gate_writes_the_evidence_and_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let out = turnfence(&["gate"], dir.path());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
        for key in [
            "t_ms",
            "scenario",
            "turn_id",
            "component",
            "event",
            "detail",
        ] {
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

fn fixture(name: &str) -> std::path::PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
    ["accepted", "rejected"]
        .iter()
        .map(|d| dir.join(d).join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("no fixture {name}"))
}

#[test]
fn check_exit_codes_are_zero_one_two() {
    let dir = tempfile::tempdir().unwrap();
    let ok = fixture("0001_lab_baseline_stream.jsonl");
    let bad = fixture("0005_no_late_delivery_delta_after_stop.jsonl");
    let malformed = fixture("0024_malformed_truncated_json.jsonl");
    let run = |args: &[&str]| turnfence(args, dir.path());
    assert_eq!(
        run(&["check", "--dialect", "lab", ok.to_str().unwrap()])
            .status
            .code(),
        Some(0)
    );
    let out = run(&["check", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("no_late_delivery"));
    let out = run(&["check", malformed.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 3, column 40"));
    let out = run(&["check", "no-such-trace.jsonl"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read"));
}

/// `turnfence check --format json FILE`: its exit code and the JSON it printed.
fn check_json(file: &Path, dir: &Path) -> (Option<i32>, serde_json::Value) {
    let out = turnfence(&["check", "--format", "json", file.to_str().unwrap()], dir);
    (
        out.status.code(),
        serde_json::from_slice(&out.stdout).unwrap(),
    )
}

#[test]
fn check_json_format_is_machine_readable() {
    let dir = tempfile::tempdir().unwrap();
    let bad = fixture("0012_no_false_cancel_claim_refund_went_through.jsonl");
    let (code, v) = check_json(&bad, dir.path());
    assert_eq!(code, Some(1));
    assert_eq!(v["status"], "violations");
    let findings = v["verdict"]["findings"].as_array().unwrap();
    assert!(findings
        .iter()
        .any(|f| f["invariant"] == "no_false_cancel_claim" && f["line"] == 18));
    let malformed = fixture("0026_malformed_unknown_field.jsonl");
    let (code, v) = check_json(&malformed, dir.path());
    assert_eq!(code, Some(2));
    assert_eq!(v["status"], "input_error");
    assert_eq!(v["error"]["line"], 4);
}

#[test]
fn the_gates_own_evidence_checks_clean() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        turnfence(&["gate", "--output", "ev"], dir.path())
            .status
            .code(),
        Some(0)
    );
    let ev = dir.path().join("ev");
    let events = ev.join("events.jsonl");
    let trace = ev.join("trace.jsonl");
    let lab = turnfence(
        &["check", "--dialect", "lab", events.to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(
        lab.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&lab.stdout)
    );
    let canonical = turnfence(&["check", trace.to_str().unwrap()], dir.path());
    assert_eq!(
        canonical.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&canonical.stdout)
    );
}
