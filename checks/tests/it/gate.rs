//! The gate on the correct model: every check passes, on values the model computed.

use turnfence_checks::gate;
use turnfence_model::prelude::*;
use turnfence_model::turn::{Invariant, Profile, TurnMachine};

/// The run has `checks` checks, passes every one, and no scenario misused the machine or broke
/// an invariant.
#[track_caller]
fn assert_passes_clean(run: &gate::GateRun, checks: usize) {
    assert_eq!(run.total_checks(), checks);
    assert!(
        run.passed(),
        "failed: {:?}\n{}",
        run.failed(),
        run.acceptance()
    );
    for s in &run.scenarios {
        assert!(s.misuse.is_none(), "{}: {:?}", s.name, s.misuse);
        assert!(s.violations.is_empty(), "{}: {:?}", s.name, s.violations);
    }
}

#[test]
fn gate_passes_all_24_checks() {
    assert_passes_clean(&gate::run(&gate::NAMES, TurnMachine::new), 24);
}

/// A model that does nothing cannot pass: every invariant of the lab profile is put to the test
/// by the gate.
#[test]
fn gate_reaches_every_invariant() {
    let run = gate::run(&gate::NAMES, TurnMachine::new);
    let reached = run.reached();
    let missing: Vec<&str> = crate::unreached(&reached)
        .into_iter()
        .filter(|name| Invariant::from_name(name).is_some_and(|i| Profile::Lab.judges(i)))
        .collect();
    assert!(missing.is_empty(), "never put to the test: {missing:?}");
}

/// The checks measure the run: the numbers in the evidence are the scenario's own timings.
#[test]
fn gate_values_come_from_the_virtual_clock() {
    let run = gate::run(&gate::NAMES, TurnMachine::new);
    let actual = |name: &str| {
        run.scenarios
            .iter()
            .flat_map(|s| &s.checks)
            .find(|c| c.name == name)
            .map(|c| c.actual.clone())
            .unwrap_or_default()
    };
    // First delivered delta at 61 ms after the accept at 0 ms (baseline script).
    assert_eq!(actual("first-token-visible"), "61ms");
    // Stop at 75 ms, last child stopped at its checkpoint at 80 ms.
    assert_eq!(actual("propagation-slo"), "5ms");
    // Two frames of seq 1 and four of seq 2 buffered, two played before the barge-in.
    assert_eq!(actual("audible-output-cleared"), "4 frames cleared");
    assert_eq!(actual("cursor-replay"), "4..6");
    assert_eq!(actual("text-exactly-once"), "The service is healthy.");
}

#[test]
fn one_scenario_runs_alone() {
    let run = gate::run(&["cancel_tree"], TurnMachine::new);
    assert_eq!(run.total_checks(), 3);
    assert!(run.passed());
}

#[test]
fn an_empty_gate_does_not_pass() {
    let run = gate::run(&[], TurnMachine::new);
    assert!(!run.passed());
}

/// The deadline scenario's `unsafe-late-tool-blocked` stands on tools (SPEC §4: "a tool started
/// after the deadline"): a retrieval or a model stream asked to start too late is refused too, but
/// it is no evidence that a late tool would be. With every late tool taken out of the script and a
/// late retrieval and a late model stream put in their place, the check has nothing to measure
/// and fails; with them beside the two late tools, it counts the two tools alone.
#[test]
fn the_late_tool_check_counts_tools_alone() {
    use turnfence_model::turn::{ChildKind, Input, InputKind};

    let late_non_tools = [
        Input::new(
            86,
            InputKind::Spawn {
                turn: "turn-text-003".into(),
                child: "late-retrieval".into(),
                kind: ChildKind::Retrieval,
                need_ms: Some(10),
                timeout_ms: None,
            },
        ),
        Input::new(
            92,
            InputKind::Spawn {
                turn: "turn-text-003".into(),
                child: "late-model".into(),
                kind: ChildKind::Model,
                need_ms: None,
                timeout_ms: None,
            },
        ),
    ];
    let is_tool_spawn = |i: &Input| {
        matches!(
            &i.kind,
            InputKind::Spawn {
                kind: ChildKind::Tool { .. },
                ..
            }
        )
    };
    let late_tool_check = |s: &gate::Scenario| {
        let run = gate::run_scenario(s, TurnMachine::new());
        assert!(run.misuse.is_none(), "{:?}", run.misuse);
        run.checks
            .into_iter()
            .find(|c| c.name == "unsafe-late-tool-blocked")
            .expect("the deadline scenario has the late-tool check")
    };

    let base = gate::scenarios::scenario("deadline_budget").unwrap();
    assert_eq!(base.inputs.iter().filter(|i| is_tool_spawn(i)).count(), 2);

    let mut without_tools = base.clone();
    without_tools.inputs.retain(|i| !is_tool_spawn(i));
    without_tools.inputs.extend(late_non_tools.iter().cloned());
    without_tools.inputs.sort_by_key(|i| i.at);
    let check = late_tool_check(&without_tools);
    assert!(!check.passed, "passed with no late tool: {check:?}");
    assert_eq!(check.actual, "0 of 0 late tools started");

    let mut beside_tools = base;
    beside_tools.inputs.extend(late_non_tools.iter().cloned());
    beside_tools.inputs.sort_by_key(|i| i.at);
    let check = late_tool_check(&beside_tools);
    assert!(check.passed, "{check:?}");
    assert_eq!(check.actual, "0 of 2 late tools started");
}

fn realtime_machine() -> TurnMachine {
    TurnMachine::with_profile(Profile::OpenaiRealtime)
}

/// The realtime gate on the sound machine made with its profile: every check passes, and its
/// monitor finds nothing.
#[test]
fn realtime_gate_passes_all_12_checks() {
    let run = gate::run(
        &turnfence_checks::dialect::openai_realtime::gate::NAMES,
        realtime_machine,
    );
    assert_passes_clean(&run, 12);
    assert_eq!(run.profile, Profile::OpenaiRealtime);
    assert!(run.scenarios.iter().all(|s| s.profile == run.profile));
}

/// The realtime gate puts each of the profile's own three invariants to the test.
#[test]
fn realtime_gate_reaches_the_three_realtime_invariants() {
    let run = gate::run(
        &turnfence_checks::dialect::openai_realtime::gate::NAMES,
        realtime_machine,
    );
    let reached = run.reached();
    for invariant in [
        Invariant::TruncatedToHeard,
        Invariant::OneActiveResponse,
        Invariant::CancelTargetsItsResponse,
    ] {
        assert!(
            reached.contains(&invariant),
            "never put to the test: {invariant:?}"
        );
    }
}

/// The realtime scenarios are the realtime profile's: on the lab's machine they fail (a create
/// while one is cancelling is accepted there, nothing is truncated).
#[test]
fn realtime_gate_fails_on_the_lab_machine() {
    let run = gate::run(
        &turnfence_checks::dialect::openai_realtime::gate::NAMES,
        TurnMachine::new,
    );
    let failed = run.failed();
    for name in ["truncated-to-heard", "create-refused-while-cancelling"] {
        assert!(failed.contains(&name), "{name} passed: {failed:?}");
    }
}

/// A scenario is judged by its machine's own monitor: a run that drops the truncation breaks
/// `truncated_to_heard` in the gate's eyes, though the lab's monitor (`check_all` on the default
/// machine) does not judge that invariant and finds nothing.
#[test]
fn a_scenario_is_judged_by_its_machines_monitor() {
    use turnfence_model::turn::Flaw;

    let scenario = gate::scenarios::scenario("realtime_barge_in_truncates").unwrap();
    let run = gate::run_scenario(&scenario, TurnMachine::with_flaw(Flaw::NoTruncateOnBargeIn));
    assert!(run
        .violations
        .iter()
        .any(|v| v.invariant == Invariant::TruncatedToHeard));
    assert!(turnfence_model::check_all::<TurnMachine>(&run.steps).is_empty());
}

/// The realtime checks measure the run: played differently, the same script's truncation and
/// clearing follow what played, and still pass.
#[test]
fn realtime_values_come_from_the_run() {
    use turnfence_model::turn::InputKind;

    let check = |s: &gate::Scenario, name: &str| {
        let run = gate::run_scenario(s, realtime_machine());
        assert!(run.misuse.is_none(), "{:?}", run.misuse);
        run.checks
            .into_iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no check {name}"))
    };
    let base = gate::scenarios::scenario("realtime_barge_in_truncates").unwrap();
    let played = |s: &gate::Scenario| -> u32 {
        s.inputs
            .iter()
            .filter_map(|i| match i.kind {
                InputKind::FramePlayed { frames } => Some(frames),
                _ => None,
            })
            .sum()
    };
    let mut less = base.clone();
    let last_play = less
        .inputs
        .iter_mut()
        .rev()
        .find(|i| matches!(i.kind, InputKind::FramePlayed { .. }))
        .unwrap();
    last_play.kind = InputKind::FramePlayed { frames: 40 };
    for s in [&base, &less] {
        let heard = played(s);
        let truncated = check(s, "truncated-to-heard");
        assert!(truncated.passed, "{truncated:?}");
        assert!(
            truncated
                .expected
                .contains(&format!("the {heard} frames played")),
            "{truncated:?}"
        );
        assert!(
            truncated
                .actual
                .starts_with(&format!("truncated to {heard} of ")),
            "{truncated:?}"
        );
        let cleared = check(s, "queued-audio-cleared");
        assert!(cleared.passed, "{cleared:?}");
    }
    assert_ne!(
        check(&base, "queued-audio-cleared").actual,
        check(&less, "queued-audio-cleared").actual
    );
}

/// The realtime gate's evidence names its profile, so the checker replays it by those rules: its
/// canonical trace conforms as written.
#[test]
fn realtime_trace_names_its_profile_and_conforms() {
    let run = gate::run(
        &turnfence_checks::dialect::openai_realtime::gate::NAMES,
        realtime_machine,
    );
    let trace = run.trace_jsonl();
    assert!(
        trace.starts_with(r#"{"meta":{"profile":"openai-realtime"}}"#),
        "{trace}"
    );
    let verdict = turnfence_checks::dialect::check_input(trace.as_bytes(), &Default::default())
        .verdict
        .expect("the trace reads");
    assert!(verdict.conforms(), "{verdict:?}");
    assert_eq!(run.report()["profile"], "openai-realtime");
    // The lab gate's files name no profile, as before there were profiles.
    let lab = gate::run(&["cancel_tree"], TurnMachine::new);
    assert!(lab.trace_jsonl().starts_with(r#"{"at":"#));
    assert!(lab.report().get("profile").is_none());
}
