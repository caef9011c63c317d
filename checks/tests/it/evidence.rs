//! The gate's evidence read as someone who has not read the code reads it: no line says
//! something happened that the next line takes back, and every number says what it counts.

use serde_json::Value;
use turnfence_checks::dialect::lab::writer::LabEvent;
use turnfence_checks::gate::{self, GateRun};
use turnfence_model::prelude::*;
use turnfence_model::turn::{Flaw, TurnMachine};

fn gate_run() -> GateRun {
    gate::run(&gate::NAMES, TurnMachine::new)
}

/// Each scenario of a run by name, with its lab events.
fn lab_events(run: &GateRun) -> Vec<(&'static str, Vec<LabEvent>)> {
    run.scenarios
        .iter()
        .map(|s| (s.name, s.lab_events()))
        .collect()
}

/// An accept the machine refused is logged as a request, never as `turn accepted`.
#[test]
fn a_refused_accept_is_logged_as_requested_not_accepted() {
    let run = gate_run();
    let mut refused = 0;
    for (name, events) in lab_events(&run) {
        for (i, e) in events.iter().enumerate() {
            if (e.component, e.event) != ("turn", "accept.refused") {
                continue;
            }
            refused += 1;
            let accepts: Vec<_> = events
                .iter()
                .filter(|a| a.component == "turn" && a.turn_id == e.turn_id && a.t_ms == e.t_ms)
                .filter(|a| a.event == "accepted")
                .collect();
            assert!(accepts.is_empty(), "{name}: {accepts:?} then {e:?}");
            let before = &events[i - 1];
            assert_eq!(
                (before.component, before.event, before.turn_id.as_str()),
                ("turn", "accept.requested", e.turn_id.as_str()),
                "{name}"
            );
        }
    }
    assert!(refused > 0, "no scenario refuses an accept");
    let log = scenario(&run, "voice_barge_in").log();
    let lines: Vec<&str> = log.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("accept.refused"))
        .expect("the barge-in log shows the refused accept");
    assert!(
        lines[at - 1].contains("turn           accept.requested")
            && lines[at - 1].contains("generation=8"),
        "{}",
        lines[at - 1]
    );
    assert!(
        !lines[..at]
            .iter()
            .any(|l| l.contains("accepted generation=8")),
        "{log}"
    );
}

/// A child the machine did not start is logged as a spawn request, never as `child.spawned`.
#[test]
fn a_child_not_started_is_logged_as_requested_not_spawned() {
    let mut not_started = 0;
    for (name, events) in lab_events(&gate_run()) {
        for e in events.iter().filter(|e| e.event == "tool.not_started") {
            not_started += 1;
            let child = &e.detail["child"];
            let spawns: Vec<_> = events
                .iter()
                .filter(|a| a.component == "cancel-tree" && a.detail.get("child") == Some(child))
                .map(|a| a.event)
                .collect();
            assert_eq!(spawns, ["child.spawn_requested"], "{name}: {child}");
        }
    }
    assert!(not_started > 0, "no scenario refuses a child");
}

/// The count of side effects committed after a cancel request stands next to what they were:
/// for each, when its commit was sent, what the tool answered the cancel, how the turn ended and
/// whether it went to reconciliation, all measured from the run.
#[test]
fn commits_after_a_cancel_request_carry_their_meaning() {
    let metrics = gate_run().metrics();
    let count = &metrics["committed_side_effects_after_cancel_request"];
    assert_eq!(count, 1, "the count stays a number a dashboard reads");
    let detail = &metrics["committed_side_effects_after_cancel_request_detail"];
    assert_eq!(
        detail["by_turn_terminal"],
        serde_json::json!({ "RECONCILE_REQUIRED": 1 })
    );
    let effects = detail["effects"].as_array().expect("one entry per effect");
    assert_eq!(effects.len() as u64, count.as_u64().unwrap());
    let e = &effects[0];
    assert_eq!(e["scenario"], "noncancellable_tool");
    assert_eq!(e["idempotency_key"], "idem-demo-001");
    assert_eq!(
        (&e["commit_sent_ms"], &e["cancel_ms"], &e["committed_ms"]),
        (&Value::from(50), &Value::from(55), &Value::from(105))
    );
    assert_eq!(e["cancel"], "stop");
    assert_eq!(e["cancel_deferred"], "commit_in_flight");
    assert_eq!(e["turn_terminal"], "RECONCILE_REQUIRED");
    assert_eq!(e["reconcile_enqueued"], true);
    assert_eq!(
        e["note"],
        "commit idem-demo-001 sent at 50ms, before the cancel request at 55ms; the tool deferred \
         the cancel (commit_in_flight); committed at 105ms; the turn ended RECONCILE_REQUIRED; \
         the effect was enqueued for reconciliation"
    );
}

/// The meaning is measured, not written down: a machine that claims `cancelled` after the
/// commit went through gets a detail that says so.
#[test]
fn the_meaning_of_commits_after_a_cancel_follows_the_behaviour() {
    let run = gate::run(&gate::NAMES, || {
        TurnMachine::with_flaw(Flaw::CancelledAfterCommit)
    });
    let metrics = run.metrics();
    let detail = &metrics["committed_side_effects_after_cancel_request_detail"];
    assert_eq!(
        detail["by_turn_terminal"],
        serde_json::json!({ "CANCELLED": 1 })
    );
    let note = detail["effects"][0]["note"].as_str().unwrap();
    assert!(note.contains("the turn ended CANCELLED"), "{note}");
    // Likewise the log: a machine that accepts a second turn while one runs is logged accepting it.
    let run = gate::run(&["voice_barge_in"], || {
        TurnMachine::with_flaw(Flaw::AcceptWhileRunning)
    });
    let log = run.scenarios[0].log();
    assert!(
        log.contains("turn           accepted turn=turn-voice-001b generation=8"),
        "{log}"
    );
    assert!(!log.contains("accept.requested"), "{log}");
}

/// Read from its log alone, each turn of a scenario ends once: a line about another turn than the
/// header's names it, so barge-in's cancelled turn and its successor's completion are two turns.
#[test]
fn read_from_the_log_each_turn_ends_once() {
    let run = gate_run();
    for s in &run.scenarios {
        let log = s.log();
        let header_turn = log
            .lines()
            .nth(1)
            .and_then(|l| l.split_whitespace().next())
            .and_then(|t| t.strip_prefix("turn="))
            .expect("the header names the turn");
        let mut ended = Vec::new();
        for line in log
            .lines()
            .filter(|l| l.starts_with('[') && l.contains("ms] "))
        {
            let words: Vec<&str> = line.split_whitespace().collect();
            let terminal = ["completed", "cancelled", "failed", "reconcile_required"];
            if words[1] != "turn" || !terminal.contains(&words[2]) {
                continue;
            }
            let turn = words
                .get(3)
                .and_then(|w| w.strip_prefix("turn="))
                .unwrap_or(header_turn);
            assert!(
                !ended.contains(&turn),
                "{}: {turn} ends again: {line}\n{log}",
                s.name
            );
            ended.push(turn);
        }
        assert!(!ended.is_empty(), "{}: no turn ends\n{log}", s.name);
    }
    let log = scenario(&run, "voice_barge_in").log();
    assert!(
        log.contains("turn           completed turn=turn-voice-002\n"),
        "{log}"
    );
}

/// An input that names no turn is logged under the turn it moved: the speaker's consumption of a
/// frame under the turn whose frame played, not under a turn that had already ended.
#[test]
fn a_frame_consumed_is_logged_under_the_turn_whose_frame_played() {
    let mut seen = 0;
    for (name, events) in lab_events(&gate_run()) {
        for pair in events.windows(2) {
            if (pair[0].component, pair[0].event) != ("speaker", "frame.consumed") {
                continue;
            }
            seen += 1;
            assert_eq!(pair[1].event, "frame.played", "{name}");
            assert_eq!(pair[0].turn_id, pair[1].turn_id, "{name}: {pair:?}");
        }
    }
    assert!(seen > 0, "no frame consumed");
}

/// Two frames of one delta played one after the other read as two frames, not one frame twice.
#[test]
fn each_frame_played_says_which_of_its_deltas_frames_it_was() {
    let run = gate_run();
    let log = scenario(&run, "voice_barge_in").log();
    let played: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("frame.played"))
        .map(|l| l.split_once("frame.played ").map_or(l, |(_, d)| d))
        .collect();
    assert_eq!(
        played,
        [
            "generation=7 seq=1 frame=1",
            "generation=7 seq=1 frame=2",
            "turn=turn-voice-002 generation=8 seq=1 frame=1",
        ],
        "{log}"
    );
}

/// The log's header says where its lines come from without using the word the agent's world
/// uses for a language model: no model is called (`acceptance.log` says models=0); the model's
/// stream is scripted and every output is the turn machine's.
#[test]
fn the_log_header_says_the_stream_is_scripted_and_the_outputs_the_machines() {
    for s in &gate_run().scenarios {
        let log = s.log();
        let header = log.lines().nth(1).unwrap_or_default();
        assert_eq!(
            header,
            format!(
                "turn={} clock=virtual network=none provider=scripted outputs=turn-machine",
                s.turn
            )
        );
    }
}

/// `acceptance.log` names every evidence file the gate wrote.
#[test]
fn acceptance_names_every_evidence_file() {
    let run = gate_run();
    let dir = tempfile::tempdir().unwrap();
    gate::write_evidence(&run, dir.path(), false).unwrap();
    let acceptance = run.acceptance();
    let listed = acceptance
        .lines()
        .find_map(|l| l.strip_prefix("Evidence: "))
        .expect("acceptance.log lists the evidence");
    let mut files = 0;
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        files += 1;
        if name.ends_with(".log") {
            continue; // The per-scenario logs, and acceptance.log itself.
        }
        assert!(
            listed.split(" + ").any(|f| f == name),
            "{name} is not in {listed:?}"
        );
    }
    assert_eq!(files, gate::NAMES.len() + 5);
}

fn scenario<'a>(run: &'a GateRun, name: &str) -> &'a gate::ScenarioRun {
    run.scenarios
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no scenario {name}"))
}
