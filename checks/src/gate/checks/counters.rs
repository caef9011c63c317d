//! Run-wide counts for `metrics.json`: the cancel effects beyond the first, and the commits
//! acknowledged after a cancel was requested.

use turnfence_model::turn::{InputKind, Output, StopAnswer, TurnId};

use super::facts::Facts;
use super::ScenarioRun;

/// Cancel effects beyond the first, per turn.
pub fn duplicate_stop_effects(run: &ScenarioRun) -> usize {
    let f = Facts { run };
    let mut turns: Vec<TurnId> = f
        .outputs()
        .filter_map(|(_, o)| o.turn().map(str::to_owned))
        .collect();
    turns.sort();
    turns.dedup();
    turns
        .iter()
        .map(|t| {
            f.answers(t)
                .iter()
                .filter(|a| **a == StopAnswer::Requested)
                .count()
                .saturating_sub(1)
        })
        .sum()
}

/// Commits acknowledged for a turn after its cancel was requested.
pub fn commits_after_cancel(run: &ScenarioRun) -> usize {
    let f = Facts { run };
    f.inputs()
        .filter(|(at, k)| match k {
            InputKind::CommitAcked { turn, .. } => f.outputs().any(|(c, o)| {
                c <= *at
                    && matches!(o,
                        Output::StopAnswered { turn: t, answer: StopAnswer::Requested, .. }
                        | Output::GenerationFenced { turn: t, .. }
                        | Output::DeadlineExceeded { turn: t } if t == turn)
            }),
            _ => false,
        })
        .count()
}
