//! The gate's evidence read as someone who has not read the code reads it: no line says
//! something happened that the next line takes back, and every number says what it counts.

use turnfence_checks::gate::{self, GateRun};
use turnfence_model::turn::TurnMachine;

fn gate_run() -> GateRun {
    gate::run(&gate::NAMES, TurnMachine::new)
}

/// An accept the machine refused is logged as a request, never as `turn accepted`.
#[test]
fn a_refused_accept_is_logged_as_requested_not_accepted() {
    let run = gate_run();
    let mut refused = 0;
    for s in &run.scenarios {
        let events = s.lab_events();
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
            assert!(accepts.is_empty(), "{}: {accepts:?} then {e:?}", s.name);
            let before = &events[i - 1];
            assert_eq!(
                (before.component, before.event, before.turn_id.as_str()),
                ("turn", "accept.requested", e.turn_id.as_str()),
                "{}",
                s.name
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
    let run = gate_run();
    let mut not_started = 0;
    for s in &run.scenarios {
        let events = s.lab_events();
        for e in events.iter().filter(|e| e.event == "tool.not_started") {
            not_started += 1;
            let child = &e.detail["child"];
            let spawns: Vec<_> = events
                .iter()
                .filter(|a| a.component == "cancel-tree" && a.detail.get("child") == Some(child))
                .map(|a| a.event)
                .collect();
            assert_eq!(spawns, ["child.spawn_requested"], "{}: {child}", s.name);
        }
    }
    assert!(not_started > 0, "no scenario refuses a child");
}

fn scenario<'a>(run: &'a GateRun, name: &str) -> &'a gate::ScenarioRun {
    run.scenarios
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no scenario {name}"))
}
