//! A turn's life: accepted (or refused beside a running one), its model done, a stop answered, its
//! deadline fired, and settled — ended in its one terminal state — once nothing is left to wait for.

use super::{limit, TurnMachine, MAX_TURNS};
use crate::turn::misuse::Misuse;
use crate::turn::output::*;
use crate::turn::state::{ChildState, Phase, Turn};
use crate::turn::types::*;
use crate::turn::Flaw;
use crate::Plant;

impl<P: Plant<Flaw>> TurnMachine<P> {
    pub(super) fn validate_accept(
        &self,
        turn: &str,
        generation: Generation,
        deadline_ms: Option<u64>,
        budget: Option<Budget>,
    ) -> Result<(), Misuse> {
        let s = &self.session;
        if s.turn(turn).is_some() {
            return Err(Misuse::DuplicateTurn { turn: turn.into() });
        }
        limit("turns per session", s.turns.len(), MAX_TURNS)?;
        // The floor stands for every generation the session used: no turn's is above the highest,
        // and the active one is that highest or the one a barge-in made active above it.
        debug_assert!(
            self.generations_in_order(),
            "the session's generations are in order"
        );
        // Above every used generation, and not below the one a barge-in made active.
        if let Some(floor) = s.generation_floor() {
            if generation <= floor {
                return Err(Misuse::StaleGeneration {
                    expected_above: floor,
                    got: generation,
                });
            }
        }
        match (deadline_ms, budget) {
            (None, Some(_)) => Err(Misuse::BudgetWithoutDeadline { turn: turn.into() }),
            (Some(deadline_ms), Some(b)) if b.total_ms() > deadline_ms => {
                Err(Misuse::BudgetExceedsDeadline {
                    turn: turn.into(),
                    deadline_ms,
                    budget_ms: b.total_ms(),
                })
            }
            _ => Ok(()),
        }
    }

    pub(super) fn accept(
        &mut self,
        turn: &str,
        generation: Generation,
        mode: Mode,
        deadline_ms: Option<u64>,
        budget: Option<Budget>,
    ) {
        // Under a profile where a turn is active until it ends, one still cancelling counts.
        let until_terminal =
            self.session.profile.active_until_terminal() && !flawed!(self, CreateWhileCancelling);
        // Under a profile whose calls outlive their generation, a turn waiting on them alone
        // does not hold the session.
        let apart = self.session.profile.calls_outlive_generation();
        let active = self.session.turns.iter().any(|t| {
            (t.phase.is_running() && !(apart && t.waits_on_calls_alone()))
                || (until_terminal && t.phase.is_cancel_requested())
        });
        if active && !flawed!(self, AcceptWhileRunning) {
            self.emit(Output::TurnRefused {
                turn: turn.into(),
                reason: RefuseReason::ActiveTurnExists,
            });
            return;
        }
        let s = &mut self.session;
        s.active_generation = Some(generation);
        s.max_generation = Some(generation);
        s.turns.push(Turn {
            id: turn.into(),
            generation,
            mode,
            accepted_at: s.now,
            deadline_at: deadline_ms.map(|d| s.now.saturating_add(d)),
            budget,
            phase: Phase::Running,
            children: Vec::new(),
            last_delivered_seq: 0,
            model_done: false,
            played: 0,
            interruptible: true,
        });
        debug_assert!(
            self.generations_in_order(),
            "the session's generations are in order"
        );
        // A deadline that is already due (`deadline_ms: 0`) fires at once.
        self.fire_deadlines();
    }

    pub(super) fn model_done(&mut self, turn: &str) {
        let Some(t) = self.turn_mut(turn) else { return };
        t.model_done = true;
        for c in &mut t.children {
            if c.kind == ChildKind::Model && c.state == ChildState::Running {
                c.state = ChildState::Completed;
            }
        }
        self.settle(turn);
    }

    pub(super) fn stop(&mut self, turn: &str, request_id: &str) {
        let Some(phase) = self.session.turn(turn).map(|t| t.phase) else {
            return;
        };
        let answer = match phase {
            Phase::Running => StopAnswer::Requested,
            Phase::CancelRequested { .. } if flawed!(self, RepeatedStopRecancels) => {
                StopAnswer::Requested
            }
            Phase::CancelRequested { .. } => StopAnswer::AlreadyRequested,
            Phase::Terminal { state } => StopAnswer::AlreadyTerminal { state },
        };
        self.emit(Output::StopAnswered {
            turn: turn.into(),
            request_id: request_id.to_owned(),
            answer,
        });
        // A terminal turn gets its answer and nothing more: it holds nothing a cancel could stop.
        debug_assert!(
            !phase.is_terminal() || !self.sound() || self.holds_nothing(turn),
            "a terminal turn holds nothing"
        );
        match phase {
            Phase::Running => self.cancel(turn, Cause::Stop),
            Phase::CancelRequested { cause } if answer == StopAnswer::Requested => {
                self.cancel(turn, cause)
            }
            Phase::Terminal { state } if flawed!(self, SecondTerminalOnRepeatedStop) => {
                self.emit(Output::Terminal {
                    turn: turn.into(),
                    state,
                });
            }
            Phase::Terminal { .. } if flawed!(self, StaleCancelHitsActive) => {
                // A bare cancel: it hits whatever turn runs now.
                let running = self.session.turns.iter().find(|t| t.phase.is_running());
                if let Some(other) = running.map(|t| t.id.clone()) {
                    self.cancel(&other, Cause::Stop);
                }
            }
            _ => {}
        }
    }

    /// Deadlines due by now fire: the running turn fails, its in-flight commits become unknown.
    /// Speech counting as an interruption and a paused output's resume are timers too (one at a
    /// time: the first runs while the user speaks, the second once they stopped), and timers
    /// fire in the order of their times: one due before every deadline now due comes first;
    /// otherwise the deadlines do (a turn they end has nothing left to pause or resume).
    pub(super) fn fire_deadlines(&mut self) {
        let now = self.session.now;
        let s = &self.session;
        let interruption = s.interruption_due.filter(|at| *at <= now);
        let resume = s
            .paused
            .as_ref()
            .and_then(|(_, at)| *at)
            .filter(|at| *at <= now);
        if let Some(at) = interruption.or(resume) {
            let deadline_first = s
                .turns
                .iter()
                .filter(|t| t.phase.is_running())
                .any(|t| t.deadline_at.is_some_and(|d| d <= at));
            if !deadline_first && interruption.is_some() {
                self.interruption_counted();
            } else if !deadline_first {
                self.resume_if_due();
            }
        }
        self.fire_due_deadlines();
        self.fire_call_timeouts();
        if self.session.interruption_due.is_some_and(|at| at <= now) {
            self.interruption_counted();
        }
        self.resume_if_due();
    }

    /// The deadlines due by now fire.
    fn fire_due_deadlines(&mut self) {
        if flawed!(self, DeadlineIgnored) {
            return;
        }
        let now = self.session.now;
        let due: Vec<TurnId> = self
            .session
            .turns
            .iter()
            .filter(|t| t.phase.is_running() && t.deadline_at.is_some_and(|d| d <= now))
            .map(|t| t.id.clone())
            .collect();
        for turn in due {
            self.emit(Output::DeadlineExceeded { turn: turn.clone() });
            if let Some(t) = self.turn_mut(&turn) {
                for c in &mut t.children {
                    if let ChildState::CommitSent { idempotency_key } = &c.state {
                        c.state = ChildState::CommitUnknown {
                            idempotency_key: idempotency_key.clone(),
                        };
                    }
                }
            }
            self.cancel(&turn, Cause::Deadline);
        }
    }

    /// Ends the turn if it has nothing left to wait for.
    pub(super) fn settle(&mut self, turn: &str) {
        let early = flawed!(self, CancelledBeforeChildrenStopped);
        let blind = flawed!(self, CancelledAfterCommit);
        // A speaking turn is not done before its audio has played out — unless its audio plays
        // on downstream after it ended.
        let buffered =
            !self.session.profile.playback_outlives_turn() && self.session.playback.holds(turn);
        let answers = self.session.profile.answers_tool_calls();
        // Read first: a turn with something left to wait for is left as it is, its turns not
        // borrowed mutably (nor, shared with another state, copied).
        let Some(t) = self.session.turn(turn) else {
            return;
        };
        let waiting = t.has_pending_children();
        let uncertain = t.children.iter().any(|c| c.state.is_uncertain());
        let committed = t.children.iter().any(|c| c.state.effect_key().is_some());
        let state = match t.phase {
            Phase::Running if t.model_done && !waiting && !buffered => {
                if uncertain {
                    Terminal::ReconcileRequired
                } else {
                    Terminal::Completed
                }
            }
            Phase::CancelRequested { cause } if !waiting || early => {
                if committed && !blind {
                    Terminal::ReconcileRequired
                } else if cause == Cause::Deadline {
                    Terminal::Failed {
                        code: FailCode::DeadlineExceeded,
                    }
                } else {
                    Terminal::Cancelled
                }
            }
            _ => return,
        };
        let Some(t) = self.turn_mut(turn) else { return };
        t.phase = Phase::Terminal { state };
        let mut outputs = Vec::new();
        if state == Terminal::ReconcileRequired {
            for c in t.children.iter_mut().filter(|c| !c.reconcile_enqueued) {
                if let Some(key) = c.state.effect_key() {
                    c.reconcile_enqueued = true;
                    outputs.push(Output::ReconcileEnqueued {
                        turn: turn.into(),
                        child: c.id.clone(),
                        idempotency_key: key.to_owned(),
                    });
                }
            }
        }
        // Under a profile that answers tool calls, a call whose outcome is unknown at the end is
        // answered with an error: reconciliation, not the model, will learn what happened.
        let unknown: Vec<ChildId> = if answers {
            t.children
                .iter()
                .filter(|c| c.kind.is_tool() && !c.answered && c.state.is_uncertain())
                .map(|c| c.id.clone())
                .collect()
        } else {
            Vec::new()
        };
        self.outputs.extend(outputs);
        // An ended turn has nothing to resume: its pause ends with it.
        if self.session.paused.as_ref().is_some_and(|(p, _)| p == turn) {
            self.session.paused = None;
        }
        for child in unknown {
            self.answer(turn, &child, ToolAnswer::Error);
        }
        self.emit(Output::Terminal {
            turn: turn.into(),
            state,
        });
        self.persist(turn.into(), None, true);
        // It ended with no child pending and none of its frames left to play.
        debug_assert!(
            !self.sound() || self.holds_nothing(turn),
            "a terminal turn holds nothing"
        );
    }

    /// The session's generations are in order: no turn's is above the highest used, and the
    /// active one is that highest or, after a barge-in, the one above it. Checked by debug
    /// assertions only.
    pub(super) fn generations_in_order(&self) -> bool {
        let s = &self.session;
        let highest = s.max_generation;
        s.turns.iter().all(|t| Some(t.generation) <= highest)
            && highest <= s.active_generation
            && s.active_generation <= highest.map(|g| g.saturating_add(1))
    }

    /// A terminal turn holds nothing: no child pending, none of its frames in the playback
    /// buffer (where audio plays on after its turn, only the children). True of a machine without a planted flaw; checked by debug assertions only.
    fn holds_nothing(&self, turn: &str) -> bool {
        let s = &self.session;
        (s.profile.playback_outlives_turn() || !s.playback.holds(turn))
            && s.turn(turn).is_none_or(|t| !t.has_pending_children())
    }
}
