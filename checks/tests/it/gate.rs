//! The gate on the correct model: every check passes, on values the model computed.

use turnfence_checks::gate;
use turnfence_model::turn::TurnMachine;

#[test]
fn gate_passes_all_24_checks() {
    let run = gate::run(&gate::NAMES, TurnMachine::new);
    assert_eq!(run.total_checks(), 24);
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

/// A model that does nothing cannot pass: every invariant is put to the test by the gate.
#[test]
fn gate_reaches_every_invariant() {
    let run = gate::run(&gate::NAMES, TurnMachine::new);
    let reached = run.reached();
    let missing = crate::unreached(&reached);
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
