//! The monitor's account of turns and their children: accepts and spawns, cancelled children,
//! stop answers, deadlines, and the standing conditions (two turns running, a turn past its
//! deadline).

use super::memory::{ChildObs, ChildSeen, Moment, Monitor, TurnSeen, Unallowed};
use super::Invariant;
use crate::said;
use crate::said::Noun;
use crate::turn::types::*;

impl Monitor {
    pub(super) fn on_accept(
        &mut self,
        turn: &str,
        generation: Generation,
        deadline_ms: Option<u64>,
        budget: Option<Budget>,
    ) {
        if self.turns.values().any(|t| t.terminal.is_none()) {
            self.reach(Invariant::SingleRunningTurn);
        }
        self.on_accept_beside();
        self.expect.accept = Some(turn.into());
        self.turns.insert(
            turn.into(),
            TurnSeen {
                generation,
                deadline_at: deadline_ms.map(|d| self.now.saturating_add(d)),
                budget,
                ..TurnSeen::default()
            },
        );
    }

    pub(super) fn on_spawn(
        &mut self,
        turn: &str,
        child: &str,
        kind: &ChildKind,
        need_ms: Option<u64>,
    ) {
        let now = self.now;
        let Some(t) = self.turns.get_mut(turn) else {
            return;
        };
        let need = need_ms.unwrap_or(match (kind, t.budget) {
            (ChildKind::Retrieval, Some(b)) => b.retrieval_ms,
            (ChildKind::Model, Some(b)) => b.model_ms,
            _ => 0,
        });
        let late = t
            .deadline_at
            .is_some_and(|d| now >= d || d.saturating_sub(now) < need);
        let why = if late {
            Some(Unallowed::Late)
        } else if t.stopping() {
            Some(Unallowed::Cancelled)
        } else {
            None
        };
        if let Some(why) = why {
            self.expect.spawn = Some((turn.into(), child.into(), why));
            let refused = self.refusals.entry(turn.into()).or_default();
            refused.insert(child.into(), why);
        }
        t.children.insert(
            child.into(),
            ChildSeen {
                kind: kind.clone(),
                state: ChildObs::Running,
                cancel_requested: false,
                temporaries: 0,
                enqueued: false,
                cancelled: false,
            },
        );
    }

    /// A child started: it must have been allowed to.
    pub(super) fn on_child_started(&mut self, turn: &str, child: &str) {
        if let Some((t, c, _)) = &self.expect.spawn {
            if t == turn && c == child {
                self.expect.started = true;
            }
        }
        let Some(&why) = self.refusals.get(turn).and_then(|r| r.get(child)) else {
            return;
        };
        self.spawn_violation(turn, child, why);
    }

    /// A child ran that had to be refused, and why.
    pub(super) fn spawn_violation(&mut self, turn: &str, child: &str, why: Unallowed) {
        let (invariant, said) = match why {
            Unallowed::Cancelled => (
                Invariant::CancelTreeDrained,
                said![
                    said::child(child),
                    " started after the cancel: its ",
                    Noun::Turn,
                    " was already cancelled"
                ],
            ),
            Unallowed::Late => (
                Invariant::DeadlineRespected,
                said![
                    said::child(child),
                    " started without the time it needs: it had less time left than it needs"
                ],
            ),
        };
        self.violate_after(invariant, &[turn, child], said, Moment::Stopped);
    }

    pub(super) fn on_child_cancelled(&mut self, turn: &str, child: &str) {
        let Some(c) = self
            .turns
            .get_mut(turn)
            .and_then(|t| t.children.get_mut(child))
        else {
            return;
        };
        let was_effect = matches!(c.state, ChildObs::Effect { .. });
        c.cancelled = true;
        if !was_effect {
            c.state = ChildObs::Resolved;
        }
        let (cancellable, left) = (c.kind.is_cancellable_tool(), c.temporaries);
        if cancellable && (left > 0 || was_effect) {
            self.violate(
                Invariant::CancelledToolLeavesNothing,
                &[turn, child],
                format!(
                    "cancelled tool left {left} temporary outputs and {} committed effects",
                    u8::from(was_effect)
                ),
            );
        }
    }

    pub(super) fn on_stop_answered(&mut self, turn: &str, request_id: &str, answer: StopAnswer) {
        if self
            .expect
            .stop
            .as_ref()
            .is_some_and(|(t, r)| t == turn && r == request_id)
        {
            self.expect.answered = true;
        }
        // Read first: only a stop that was requested changes what is remembered of the turn (so
        // only then are the turns borrowed mutably and, shared with another state, copied).
        let Some(t) = self.turns.get(turn) else {
            return;
        };
        let (was_cancelled, terminal) = (t.cancelled, t.terminal);
        let problem = match (answer, terminal) {
            (StopAnswer::Requested, _) => {
                let effects = self.turns.get_mut(turn).map_or(0, |t| {
                    t.cancel_effects += 1;
                    t.cancelled = true;
                    t.cancel_effects
                });
                (was_cancelled || terminal.is_some()).then(|| {
                    said![
                        format!("stop {request_id} caused cancel effect #{effects} of the "),
                        Noun::Turn
                    ]
                })
            }
            (StopAnswer::AlreadyTerminal { state }, Some(actual)) if state != actual => {
                Some(said![
                    format!(
                        "stop {request_id} answered already_terminal {} but the ",
                        state.label()
                    ),
                    Noun::Turn,
                    format!(" ended {}", actual.label())
                ])
            }
            (StopAnswer::AlreadyTerminal { .. }, None) => Some(said![
                format!("stop {request_id} answered already_terminal for a "),
                Noun::Turn,
                " that has not ended"
            ]),
            (StopAnswer::AlreadyRequested, Some(actual)) => Some(said![
                format!("stop {request_id} answered already_requested for a "),
                Noun::Turn,
                format!(" that ended {}", actual.label())
            ]),
            (StopAnswer::AlreadyRequested, None) if !was_cancelled => Some(said![
                format!(
                    "stop {request_id} answered already_requested but nothing had cancelled the "
                ),
                Noun::Turn
            ]),
            _ => None,
        };
        if answer != StopAnswer::Requested {
            self.reach(Invariant::IdempotentStop);
        }
        if let Some(message) = problem {
            let since = if answer == StopAnswer::Requested {
                Moment::Stopped
            } else {
                Moment::Terminal
            };
            self.violate_after(
                Invariant::IdempotentStop,
                &[turn, request_id],
                message,
                since,
            );
        }
        if answer == StopAnswer::Requested {
            self.moment(turn, Moment::Stopped);
            self.moment(turn, Moment::StopRequested);
        }
    }

    pub(super) fn on_deadline(&mut self, turn: &str) {
        self.reach(Invariant::DeadlineRespected);
        self.moment(turn, Moment::Stopped);
        let Some(t) = self.turns.get_mut(turn) else {
            return;
        };
        let twice = t.by_deadline;
        t.by_deadline = true;
        t.cancelled = true;
        if twice {
            self.violate(
                Invariant::DeadlineRespected,
                &[turn],
                "the deadline was reported exceeded twice".to_owned(),
            );
        }
    }

    pub(super) fn check_running(&mut self) {
        let apart = self.profile.calls_outlive_generation();
        let running: Vec<TurnId> = self
            .turns
            .iter()
            .filter(|(_, t)| t.holds_session(apart))
            .map(|(id, _)| id.clone())
            .collect();
        if running.len() > 1 {
            let ids: Vec<&str> = running.iter().map(TurnId::as_str).collect();
            let message = format!("{} turns are running at once", running.len());
            self.violate_once(Invariant::SingleRunningTurn, &ids, message);
        }
    }

    pub(super) fn check_deadlines(&mut self) {
        let now = self.now;
        let mut found = Vec::new();
        for (id, t) in &self.turns {
            let Some(deadline) = t.deadline_at.filter(|d| now >= *d) else {
                continue;
            };
            if t.terminal.is_some() {
                continue;
            }
            if !t.cancelled {
                let message = said![
                    "the ",
                    Noun::Turn,
                    format!(" is still running at {now} ms, past its deadline at {deadline} ms")
                ];
                found.push((Invariant::DeadlineRespected, id.clone(), message));
            }
            if t.pending_children().is_empty() {
                let message = said![
                    "every ",
                    Noun::Child,
                    format!(" is resolved and the deadline ({deadline} ms) has passed, yet the "),
                    Noun::Turn,
                    " has not ended"
                ];
                found.push((Invariant::QuiescentTurnsTerminal, id.clone(), message));
            }
        }
        for (invariant, turn, message) in found {
            self.violate_once(invariant, &[&turn], message);
        }
    }
}
