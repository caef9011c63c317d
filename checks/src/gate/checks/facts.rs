//! The run seen as facts to measure: its inputs and outputs with their times, and the queries
//! several checks make (a turn's accept, its terminal states, its stop, what was delivered or
//! dropped after a time, the answers to its stops).

use turnfence_model::turn::{DropReason, InputKind, Output, StopAnswer, Terminal};
use turnfence_model::Millis;

use super::ScenarioRun;

/// The run, seen as facts to measure.
pub(crate) struct Facts<'a> {
    pub run: &'a ScenarioRun,
}

impl<'a> Facts<'a> {
    pub fn outputs(&self) -> impl Iterator<Item = (Millis, &'a Output)> + 'a {
        self.run
            .steps
            .iter()
            .flat_map(|s| s.outputs.iter().map(move |o| (s.input.at, o)))
    }

    pub fn inputs(&self) -> impl Iterator<Item = (Millis, &'a InputKind)> + 'a {
        self.run.steps.iter().map(|s| (s.input.at, &s.input.kind))
    }

    pub fn accept(&self, turn: &str) -> Option<(Millis, u64, Option<u64>)> {
        self.inputs().find_map(|(at, k)| match k {
            InputKind::Accept {
                turn: t,
                generation,
                deadline_ms,
                ..
            } if t == turn => Some((at, *generation, *deadline_ms)),
            _ => None,
        })
    }

    pub fn terminals(&self, turn: &str) -> Vec<(Millis, Terminal)> {
        self.outputs()
            .filter_map(|(at, o)| match o {
                Output::Terminal { turn: t, state } if t == turn => Some((at, *state)),
                _ => None,
            })
            .collect()
    }

    /// The time of the stop that moved the turn (or of the first stop, if none did).
    pub fn stop_at(&self, turn: &str) -> Option<Millis> {
        self.inputs().find_map(|(at, k)| match k {
            InputKind::Stop { turn: t, .. } if t == turn => Some(at),
            _ => None,
        })
    }

    pub fn delivered_after(&self, turn: &str, from: Millis) -> Vec<u64> {
        self.outputs()
            .filter_map(|(at, o)| match o {
                Output::Delivered { turn: t, seq, .. } if t == turn && at >= from => Some(*seq),
                _ => None,
            })
            .collect()
    }

    pub fn dropped_after(&self, turn: &str, from: Millis) -> Vec<u64> {
        self.outputs()
            .filter_map(|(at, o)| match o {
                Output::LateDropped {
                    turn: t,
                    seq,
                    reason,
                    ..
                } if t == turn && at >= from && *reason != DropReason::OutOfOrder => Some(*seq),
                _ => None,
            })
            .collect()
    }

    pub fn answers(&self, turn: &str) -> Vec<StopAnswer> {
        self.outputs()
            .filter_map(|(_, o)| match o {
                Output::StopAnswered {
                    turn: t, answer, ..
                } if t == turn => Some(*answer),
                _ => None,
            })
            .collect()
    }
}
