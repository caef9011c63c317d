//! A turn's terminal state, judged: only one, no child still running, the fitting state after a
//! deadline, and no false claim of a cancel over a side effect.

use super::memory::{ChildObs, Moment, Monitor};
use super::Invariant;
use crate::said;
use crate::said::Noun;
use crate::turn::types::*;

impl Monitor {
    pub(super) fn on_terminal(&mut self, turn: &str, state: Terminal) {
        self.check_uncaused_cancel(turn, state);
        self.reach(Invariant::OneTerminalState);
        self.moment(turn, Moment::Terminal);
        self.moment(turn, Moment::Stopped);
        let Some(t) = self.turns.get_mut(turn) else {
            return;
        };
        let first = t.terminal;
        if first.is_none() {
            t.terminal = Some(state);
        }
        let Some(t) = self.turns.get(turn) else {
            return;
        };
        let pending: Vec<String> = t
            .pending_children()
            .into_iter()
            .map(str::to_owned)
            .collect();
        let stopped_some = t.children.values().any(|c| c.cancelled);
        let by_deadline = t.by_deadline;
        let effects: Vec<(ChildId, String, bool, bool)> = t
            .children
            .iter()
            .filter_map(|(id, c)| match &c.state {
                ChildObs::Effect { key, uncertain } => {
                    Some((id.clone(), key.clone(), *uncertain, c.enqueued))
                }
                _ => None,
            })
            .collect();
        let deadline_passed = t.deadline_at.is_some_and(|d| self.now >= d);
        let stop_requested = t.cancel_effects > 0;
        if stop_requested && state == Terminal::Completed && first.is_none() {
            self.violate_after(
                Invariant::IdempotentStop,
                &[turn],
                said![
                    "a stop was answered requested, yet the ",
                    Noun::Turn,
                    " ended COMPLETED"
                ],
                Moment::StopRequested,
            );
        }
        if let Some(first) = first {
            self.violate_after(
                Invariant::OneTerminalState,
                &[turn],
                format!(
                    "a second terminal state {} after {}",
                    state.label(),
                    first.label()
                ),
                Moment::Terminal,
            );
        }
        self.check_drained(turn, state, &pending, stopped_some);
        self.check_deadline_terminal(turn, state, by_deadline, deadline_passed);
        self.check_claim(turn, state, &effects);
    }

    /// A commit settled after its turn already claimed a cancel: the claim was false (or, for a
    /// commit that failed, not known to be true).
    pub(super) fn on_commit_settled(&mut self, turn: &str, child: &str, acked: bool) {
        let Some(t) = self.turns.get(turn) else {
            return;
        };
        let Some(claim) = t
            .terminal
            .filter(|s| matches!(s, Terminal::Cancelled | Terminal::Failed { .. }))
        else {
            return;
        };
        let how = if acked {
            "was acknowledged"
        } else {
            "failed, so it may have happened,"
        };
        self.violate_after(
            Invariant::NoFalseCancelClaim,
            &[turn, child],
            said![
                "the commit of ",
                said::child(child),
                format!(" {how} after the "),
                Noun::Turn,
                format!(" claimed {}", claim.label())
            ],
            Moment::Terminal,
        );
    }

    fn check_drained(
        &mut self,
        turn: &str,
        state: Terminal,
        pending: &[String],
        stopped_some: bool,
    ) {
        let cancelled = matches!(state, Terminal::Cancelled | Terminal::Failed { .. });
        if cancelled && stopped_some {
            self.reach(Invariant::CancelTreeDrained);
        }
        for child in pending {
            self.violate(
                Invariant::CancelTreeDrained,
                &[turn, child],
                said![
                    "the ",
                    Noun::Turn,
                    format!(" ended {} while ", state.label()),
                    said::child(child),
                    " was still running"
                ],
            );
        }
    }

    fn check_deadline_terminal(
        &mut self,
        turn: &str,
        state: Terminal,
        by_deadline: bool,
        passed: bool,
    ) {
        if passed {
            self.reach(Invariant::QuiescentTurnsTerminal);
        }
        let fitting = matches!(state, Terminal::Failed { .. } | Terminal::ReconcileRequired);
        if by_deadline && !fitting {
            self.violate(
                Invariant::DeadlineRespected,
                &[turn],
                said![
                    "the ",
                    Noun::Turn,
                    format!(" ended {} after its deadline fired", state.label())
                ],
            );
        }
    }

    fn check_claim(
        &mut self,
        turn: &str,
        state: Terminal,
        effects: &[(ChildId, String, bool, bool)],
    ) {
        if state == Terminal::ReconcileRequired {
            self.reach(Invariant::NoFalseCancelClaim);
        }
        for (child, key, uncertain, enqueued) in effects {
            let problem = match state {
                Terminal::Cancelled | Terminal::Failed { .. } => Some(said![
                    "the ",
                    Noun::Turn,
                    format!(
                        " claimed {} after side effect {key} was {}",
                        state.label(),
                        if *uncertain {
                            "possibly committed"
                        } else {
                            "committed"
                        }
                    )
                ]),
                Terminal::Completed if *uncertain => Some(said![
                    "the ",
                    Noun::Turn,
                    format!(" claimed COMPLETED with side effect {key} in doubt")
                ]),
                Terminal::ReconcileRequired if !enqueued => Some(said![
                    "the ",
                    Noun::Turn,
                    format!(" ended RECONCILE_REQUIRED without enqueuing {key}")
                ]),
                _ => None,
            };
            if let Some(message) = problem {
                self.violate(Invariant::NoFalseCancelClaim, &[turn, child, key], message);
            }
        }
    }
}
