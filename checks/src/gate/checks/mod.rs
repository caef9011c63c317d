//! The gate's checks: the lab gate's 24 here, a real stack's profile's in its folder. Each is a
//! measurement of the run — an output, a time on the virtual clock, a count — held against a
//! threshold, and passes only if the invariants it stands on found nothing in the scenario. None
//! is a literal.
//!
//! This file holds what every check shares: [`Check`], the builder that folds in the invariants
//! and any misuse, the forms of an actual value, and the late-delivery measurement three
//! scenarios take. The run seen as facts to measure is in `facts.rs`; the checks themselves are
//! by scenario group: `stream.rs` (the plain stream, the replay after a reconnect), `cancel.rs`
//! (the cancel tree, the repeated stop), `voice.rs` (barge-in), `deadline.rs` (the deadline
//! and budget), `tools.rs` (cancellable and non-cancellable tools); `counters.rs` has the
//! run-wide counts `metrics.json` takes.

mod cancel;
mod counters;
mod deadline;
mod facts;
mod stream;
mod tools;
mod voice;

use turnfence_model::prelude::*;
use turnfence_model::turn::{Invariant, Terminal};
use turnfence_model::Millis;

use super::{Scenario, ScenarioRun};
pub use counters::{commits_after_cancel, duplicate_stop_effects, CommitAfterCancel};
pub(crate) use facts::Facts;

/// One check of the gate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    pub name: &'static str,
    pub passed: bool,
    pub expected: String,
    pub actual: String,
    /// The invariants this check stands on.
    pub invariants: Vec<Invariant>,
}

impl Check {
    pub fn status(&self) -> &'static str {
        if self.passed {
            "PASS"
        } else {
            "FAIL"
        }
    }
}

pub(crate) fn labels(terminals: &[(Millis, Terminal)]) -> String {
    match terminals {
        [] => "none".to_owned(),
        [(_, s)] => format!("{} x1", s.label()),
        many => format!(
            "{} x{}",
            many.iter()
                .map(|(_, s)| s.label())
                .collect::<Vec<_>>()
                .join("+"),
            many.len()
        ),
    }
}

/// The label of a turn's one terminal state; if it has none or several, what [`labels`] says.
pub(crate) fn terminal_label(terminals: &[(Millis, Terminal)]) -> String {
    match terminals {
        [(_, s)] => s.label().to_owned(),
        other => labels(other),
    }
}

fn seqs(prefix: &str, seqs: &[u64], verb: &str) -> String {
    let list: Vec<String> = seqs.iter().map(u64::to_string).collect();
    format!("{prefix}seq={} {verb}", list.join(","))
}

/// Builds checks, folding in the invariants each stands on and any misuse.
pub(crate) struct Checks<'a> {
    run: &'a ScenarioRun,
    out: Vec<Check>,
}

impl<'a> Checks<'a> {
    pub(crate) fn new(run: &'a ScenarioRun) -> Checks<'a> {
        Checks {
            run,
            out: Vec::new(),
        }
    }

    /// The checks added, in order.
    pub(crate) fn finish(self) -> Vec<Check> {
        self.out
    }

    pub(crate) fn add(
        &mut self,
        name: &'static str,
        expected: String,
        ok: bool,
        actual: String,
        invariants: &[Invariant],
    ) {
        let broken: Vec<&str> = invariants
            .iter()
            .filter(|i| self.run.violations.iter().any(|v| v.invariant == **i))
            .map(|i| i.name())
            .collect();
        let mut actual = actual;
        if !broken.is_empty() {
            actual = format!("{actual} (violated: {})", broken.join(", "));
        }
        if let Some((index, misuse)) = &self.run.misuse {
            actual = format!("{actual} (misuse at input {index}: {misuse})");
        }
        self.out.push(Check {
            name,
            passed: ok && broken.is_empty() && self.run.misuse.is_none(),
            expected,
            actual,
            invariants: invariants.to_vec(),
        });
    }
}

/// Computes the scenario's three checks.
pub fn compute(run: &ScenarioRun, scenario: &Scenario) -> Vec<Check> {
    let mut c = Checks::new(run);
    let f = Facts { run };
    let turn = run.turn;
    match run.name {
        "baseline_stream" => stream::baseline_stream(&mut c, &f, turn),
        "cancel_tree" => cancel::cancel_tree(&mut c, &f, turn),
        "voice_barge_in" => voice::voice_barge_in(&mut c, &f, turn),
        "deadline_budget" => deadline::deadline_budget(&mut c, &f, turn),
        "cancellable_tool" => tools::cancellable_tool(&mut c, &f, turn),
        "noncancellable_tool" => tools::noncancellable_tool(&mut c, &f, turn),
        "reconnect_replay" => stream::reconnect_replay(&mut c, &f, turn, scenario),
        "idempotent_stop" => cancel::idempotent_stop(&mut c, &f, turn),
        name => {
            let gate = crate::dialect::GATES
                .iter()
                .find(|g| g.names.contains(&name));
            if let Some(gate) = gate {
                (gate.checks)(name, &mut c, &f, turn);
            }
        }
    }
    c.finish()
}

/// After `from`, nothing of the turn is delivered and at least one delta was dropped.
fn late_delivery_check(
    c: &mut Checks,
    f: &Facts,
    turn: &str,
    name: &'static str,
    expected: String,
    from: Millis,
    actual_ok: Option<String>,
) {
    let delivered = f.delivered_after(turn, from);
    let dropped = f.dropped_after(turn, from);
    let ok = delivered.is_empty() && !dropped.is_empty();
    let actual = if !delivered.is_empty() {
        seqs("", &delivered, "delivered")
    } else if dropped.is_empty() {
        "no late delta seen".to_owned()
    } else {
        actual_ok.unwrap_or_else(|| seqs("", &dropped, "dropped"))
    };
    c.add(name, expected, ok, actual, &[Invariant::NoLateDelivery]);
}
