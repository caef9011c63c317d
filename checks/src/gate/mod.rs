//! The release gate: the eight lab scenarios run through the turn machine, 24 checks computed
//! from its outputs, the virtual clock and the invariants, and the evidence a reviewer reads; and
//! beside it a real stack's profile's own gate ([`Suite`], in its folder, listed by the registry:
//! [`crate::dialect::GATES`]), its scenarios and checks on the machine made with that profile,
//! judged by that machine's own monitor.
//!
//! Dependencies: the gate writes its log and `events.jsonl` with the lab's writer
//! (`crate::dialect::lab::writer`) and `trace.jsonl` in the checker's canonical form
//! (`crate::trace::canonical`). It depends on `trace`, never the reverse, which is why the
//! synthetic trace of the gate's scenarios (for benchmarks and tests) lives here, in
//! [`synthetic`], and not in `trace`.

pub(crate) mod checks;
mod evidence;
pub mod scenarios;
mod suite;
pub mod synthetic;

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::{json, Value};
use turnfence_model::prelude::*;
use turnfence_model::turn::{
    self, ChildKind, InputKind, Invariant, Misuse, Output, Profile, Step, TurnMachine, Violation,
};
use turnfence_model::{Millis, Plant};

pub use checks::{Check, CommitAfterCancel};
pub use evidence::write_evidence;
pub use scenarios::{Scenario, NAMES};
pub use suite::Suite;

use crate::dialect::lab::writer::{input_line, number_frames, output_line, LabEvent};

/// One scenario, run.
#[derive(Clone, Debug)]
pub struct ScenarioRun {
    pub name: &'static str,
    /// The rule choices of the machine it ran on.
    pub profile: Profile,
    pub turn: &'static str,
    pub steps: Vec<Step>,
    /// The input the machine refused as misuse, if any: the scenario then fails every check.
    pub misuse: Option<(usize, Misuse)>,
    pub violations: Vec<Violation>,
    /// The invariants the run put to the test, as the machine's own monitor judged them.
    pub reached: BTreeSet<Invariant>,
    pub checks: Vec<Check>,
}

impl ScenarioRun {
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.passed)
    }

    /// Every input and output, in order, as the lab's events. An input that names no turn (a
    /// frame played, a tick, the client's) is logged under the turn its outputs name, else under
    /// the scenario's; an output that names none, under its input's.
    pub fn lab_events(&self) -> Vec<LabEvent> {
        let kinds = |turn: &str, child: &str| self.child_kind(turn, child);
        let mut events = Vec::new();
        for step in &self.steps {
            let at = step.input.at;
            let turn = step
                .input
                .turn()
                .or_else(|| step.outputs.iter().find_map(Output::turn))
                .unwrap_or(self.turn);
            let (component, event, detail) = input_line(&step.input, &step.outputs, &kinds);
            events.push(self.lab_event(at, turn, component, event, detail));
            for output in &step.outputs {
                let turn = output.turn().unwrap_or(turn);
                let Some((component, event, detail)) = output_line(output, &kinds) else {
                    continue;
                };
                events.push(self.lab_event(at, turn, component, event, detail));
            }
        }
        number_frames(&mut events);
        events
    }

    fn lab_event(
        &self,
        t_ms: Millis,
        turn: &str,
        component: &'static str,
        event: &'static str,
        detail: serde_json::Map<String, Value>,
    ) -> LabEvent {
        LabEvent {
            t_ms,
            scenario: self.name.to_owned(),
            turn_id: turn.to_owned(),
            component,
            event,
            detail,
        }
    }

    fn child_kind(&self, turn: &str, child: &str) -> Option<ChildKind> {
        self.steps.iter().find_map(|s| match &s.input.kind {
            InputKind::Spawn {
                turn: t,
                child: c,
                kind,
                ..
            } if t == turn && c == child => Some(kind.clone()),
            _ => None,
        })
    }

    /// The scenario's log, in the lab's form: header (naming the scenario's turn), one line per
    /// event (naming its turn when it is another), then the assertions.
    pub fn log(&self) -> String {
        let mut lines = vec![
            format!("TURNFENCE GATE :: {}", self.name),
            format!(
                "turn={} clock=virtual network=none provider=scripted outputs=turn-machine{}",
                self.turn,
                profile_field(self.profile)
            ),
            String::new(),
        ];
        lines.extend(self.lab_events().iter().map(|e| e.log_line(self.turn)));
        if let Some((index, misuse)) = &self.misuse {
            lines.push(format!("MISUSE at input {index}: {misuse}"));
        }
        for v in &self.violations {
            lines.push(format!(
                "VIOLATION {} at {}ms (input {}): {} [{}]",
                v.invariant.name(),
                v.at,
                v.step,
                v.message,
                v.ids.join(", ")
            ));
        }
        lines.extend(["".to_owned(), "ASSERTIONS".to_owned()]);
        for c in &self.checks {
            lines.push(format!(
                "[{}] {} :: expected={} actual={}",
                c.status(),
                c.name,
                c.expected,
                c.actual
            ));
        }
        lines.join("\n") + "\n"
    }

    /// The scenario as a canonical trace (one session, named after the scenario).
    pub fn canonical_trace(&self) -> String {
        crate::trace::canonical::write(self.name, &self.steps)
    }

    /// The machine's outputs, one JSON line per step: the input's time and kind, then its outputs.
    pub fn output_sequence(&self) -> String {
        let mut text = String::new();
        for step in &self.steps {
            let line = json!({
                "at": step.input.at,
                "input": input_name(&step.input.kind),
                "outputs": step.outputs,
            });
            text.push_str(&line.to_string());
            text.push('\n');
        }
        text
    }
}

/// ` profile=NAME` for a header line, when the profile is not the lab's (whose headers name none,
/// as they did before there were profiles).
fn profile_field(profile: Profile) -> String {
    if profile.is_lab() {
        String::new()
    } else {
        format!(" profile={}", profile.name())
    }
}

fn input_name(kind: &InputKind) -> String {
    match serde_json::to_value(kind) {
        Ok(Value::Object(m)) => m
            .get("input")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_owned(),
        _ => "?".to_owned(),
    }
}

/// Runs one scenario on the given machine, judged by the machine's own monitor (the invariants
/// of the profile it follows).
pub fn run_scenario<P: Plant<turn::Flaw>>(
    scenario: &Scenario,
    mut machine: TurnMachine<P>,
) -> ScenarioRun {
    let profile = machine.profile();
    let mut monitor = machine.monitor();
    let (steps, misuse) = turnfence_model::run(&mut machine, &scenario.inputs);
    let mut violations = Vec::new();
    for step in &steps {
        violations.extend(monitor.observe(step));
    }
    let reached = monitor.reached().clone();
    monitor.finish();
    violations.extend(monitor.take_violations());
    let mut run = ScenarioRun {
        name: scenario.name,
        profile,
        turn: scenario.turn,
        steps,
        misuse,
        violations,
        reached,
        checks: Vec::new(),
    };
    run.checks = checks::compute(&run, scenario);
    run
}

/// A whole gate run.
#[derive(Clone, Debug)]
pub struct GateRun {
    /// The rule choices of the machines it ran on.
    pub profile: Profile,
    pub scenarios: Vec<ScenarioRun>,
}

/// Runs the named scenarios, each on a fresh machine from `machine`.
pub fn run<P: Plant<turn::Flaw>>(names: &[&str], machine: impl Fn() -> TurnMachine<P>) -> GateRun {
    let scenarios = names
        .iter()
        .filter_map(|n| scenarios::scenario(n))
        .map(|s| run_scenario(&s, machine()))
        .collect();
    GateRun {
        profile: machine().profile(),
        scenarios,
    }
}

#[derive(Serialize)]
struct CheckJson<'a> {
    name: &'a str,
    status: &'a str,
    expected: &'a str,
    actual: &'a str,
    invariants: Vec<&'static str>,
}

impl GateRun {
    pub fn passed_checks(&self) -> usize {
        self.checks().filter(|c| c.passed).count()
    }

    pub fn total_checks(&self) -> usize {
        self.checks().count()
    }

    fn checks(&self) -> impl Iterator<Item = &Check> {
        self.scenarios.iter().flat_map(|s| &s.checks)
    }

    pub fn passed(&self) -> bool {
        !self.scenarios.is_empty() && self.passed_checks() == self.total_checks()
    }

    pub fn status(&self) -> &'static str {
        if self.passed() {
            "PASS"
        } else {
            "FAIL"
        }
    }

    /// The names of the failed checks, in gate order.
    pub fn failed(&self) -> Vec<&'static str> {
        self.checks()
            .filter(|c| !c.passed)
            .map(|c| c.name)
            .collect()
    }

    /// The gate's summary, as `acceptance.log` holds it and the CLI prints it.
    pub fn acceptance(&self) -> String {
        let mut lines = vec![
            "TURNFENCE :: RELEASE GATE".to_owned(),
            format!(
                "clock=virtual network=none models=0 real_tools=0 secrets=0{}",
                profile_field(self.profile)
            ),
            String::new(),
        ];
        // Names pad to 22 columns, or one past the longest.
        let width = self
            .scenarios
            .iter()
            .map(|s| s.name.len() + 1)
            .fold(22, usize::max);
        for s in &self.scenarios {
            let status = if s.passed() { "PASS" } else { "FAIL" };
            lines.push(format!(
                "[{status}] {:<width$} checks={}",
                s.name,
                s.checks.len()
            ));
        }
        lines.push(String::new());
        lines.push(format!(
            "RESULT {} :: {}/{} assertions passed",
            self.status(),
            self.passed_checks(),
            self.total_checks()
        ));
        for name in self.failed() {
            lines.push(format!("FAILED {name}"));
        }
        lines.push(format!(
            "Evidence: per-scenario logs + {}",
            evidence::RUN_FILES.join(" + ")
        ));
        lines.join("\n") + "\n"
    }

    /// `events.jsonl`: every scenario's events in the lab's line format. A profile other than the
    /// lab's is named in a meta line first (with the dialect), so the checker reads it by those
    /// rules without flags.
    pub fn events_jsonl(&self) -> String {
        let mut text = self.meta_line(Some("lab"));
        for s in &self.scenarios {
            for e in s.lab_events() {
                text.push_str(&serde_json::to_string(&e).unwrap_or_default());
                text.push('\n');
            }
        }
        text
    }

    /// `trace.jsonl`: every scenario as a canonical trace, for `turnfence check`. A profile other
    /// than the lab's is named in a meta line first, so the checker replays it by those rules.
    pub fn trace_jsonl(&self) -> String {
        let mut text = self.meta_line(None);
        text.extend(self.scenarios.iter().map(ScenarioRun::canonical_trace));
        text
    }

    /// The meta line naming the run's profile (and `dialect`, when given), or nothing for the lab
    /// profile: the lab gate's files have none, as before there were profiles.
    fn meta_line(&self, dialect: Option<&str>) -> String {
        if self.profile.is_lab() {
            return String::new();
        }
        let mut meta = serde_json::Map::new();
        if let Some(dialect) = dialect {
            meta.insert("dialect".into(), dialect.into());
        }
        meta.insert("profile".into(), self.profile.name().into());
        json!({ "meta": meta }).to_string() + "\n"
    }

    /// `report.json`: environment, per-scenario checks with expected and actual, totals, status.
    pub fn report(&self) -> Value {
        let scenarios: Vec<Value> = self
            .scenarios
            .iter()
            .map(|s| {
                let checks: Vec<CheckJson> = s
                    .checks
                    .iter()
                    .map(|c| CheckJson {
                        name: c.name,
                        status: c.status(),
                        expected: &c.expected,
                        actual: &c.actual,
                        invariants: c.invariants.iter().map(|i| i.name()).collect(),
                    })
                    .collect();
                json!({
                    "name": s.name,
                    "event_count": s.lab_events().len(),
                    "checks": checks,
                    "violations": s.violations,
                    "misuse": s.misuse.as_ref().map(|(i, m)| json!({ "input": i, "error": m.to_string() })),
                    "invariants_reached": s.reached.iter().map(|i| i.name()).collect::<Vec<_>>(),
                })
            })
            .collect();
        let report = json!({
            "gate": "turnfence",
            "version": env!("CARGO_PKG_VERSION"),
            "environment": {
                "os_family": std::env::consts::OS,
                "clock": "virtual",
                "network": "none",
                "real_models": 0,
                "real_tools": 0,
                "secrets_loaded": 0,
                "flaws_compiled": crate::FLAWS_COMPILED,
            },
            "scenario_count": self.scenarios.len(),
            "assertions": { "passed": self.passed_checks(), "total": self.total_checks() },
            "status": self.status(),
            "scenarios": scenarios,
        });
        // The lab gate's report names no profile, as before there were profiles; another's is
        // named after the version.
        match report {
            Value::Object(fields) if !self.profile.is_lab() => {
                let mut named = serde_json::Map::new();
                for (key, value) in fields {
                    let after = key == "version";
                    named.insert(key, value);
                    if after {
                        named.insert("profile".into(), self.profile.name().into());
                    }
                }
                Value::Object(named)
            }
            report => report,
        }
    }

    /// `metrics.json`: the lab's counters, computed from the outputs. The commits after a cancel
    /// request come with their detail: how each turn ended, and per effect when its commit was
    /// sent, what the tool answered the cancel and whether it went to reconciliation.
    pub fn metrics(&self) -> Value {
        let outputs = || {
            self.scenarios
                .iter()
                .flat_map(|s| &s.steps)
                .flat_map(|st| &st.outputs)
        };
        let count = |f: &dyn Fn(&Output) -> bool| outputs().filter(|o| f(o)).count();
        let accepted = self
            .scenarios
            .iter()
            .flat_map(|s| &s.steps)
            .filter(|st| {
                matches!(st.input.kind, InputKind::Accept { .. })
                    && !st
                        .outputs
                        .iter()
                        .any(|o| matches!(o, Output::TurnRefused { .. }))
            })
            .count();
        let stops = self
            .scenarios
            .iter()
            .flat_map(|s| &s.steps)
            .filter(|st| matches!(st.input.kind, InputKind::Stop { .. }))
            .count();
        let commits: Vec<_> = self
            .scenarios
            .iter()
            .flat_map(checks::commits_after_cancel)
            .collect();
        let mut by_terminal = std::collections::BTreeMap::<&str, usize>::new();
        for c in &commits {
            *by_terminal.entry(c.turn_terminal.as_str()).or_default() += 1;
        }
        json!({
            "turns_total": accepted,
            "cancel_requests_total": stops,
            "cancelled_turns": count(&|o| matches!(o, Output::Terminal { state: turn::Terminal::Cancelled, .. })),
            "barge_ins_total": count(&|o| matches!(o, Output::GenerationFenced { .. })),
            "late_events_dropped": count(&|o| matches!(o, Output::LateDropped { .. })),
            "deadline_exceeded_total": count(&|o| matches!(o, Output::DeadlineExceeded { .. })),
            "reconnect_replays_total": count(&|o| matches!(o, Output::Replayed { .. })),
            "duplicate_stop_effects": self.scenarios.iter().map(checks::duplicate_stop_effects).sum::<usize>(),
            "committed_side_effects_after_cancel_request": commits.len(),
            "committed_side_effects_after_cancel_request_detail": {
                "by_turn_terminal": by_terminal,
                "effects": commits,
            },
            "invariant_violations": self.scenarios.iter().map(|s| s.violations.len()).sum::<usize>(),
            "external_cost": 0,
        })
    }

    /// The invariants the whole run put to the test.
    pub fn reached(&self) -> BTreeSet<Invariant> {
        self.scenarios
            .iter()
            .flat_map(|s| s.reached.iter().copied())
            .collect()
    }
}
