//! A turn's children: spawned (or never started), their checkpoints, a tool's commit and its
//! outcome, and the cancel propagated down the tree.

use super::{limit, TurnMachine, MAX_CHILDREN, TIMEOUT_CHECKPOINT, TTS_CHECKPOINT};
use crate::turn::misuse::Misuse;
use crate::turn::output::*;
use crate::turn::state::{Child, ChildState, Phase, NOT_STARTED};
use crate::turn::types::*;
use crate::turn::Flaw;
use crate::Plant;

impl<P: Plant<Flaw>> TurnMachine<P> {
    /// Checks an input about a child against the state: the child must exist (or, for a spawn,
    /// not yet), be in the state the input needs and of the kind it needs.
    pub(super) fn validate_child_input(&self, kind: &InputKind) -> Result<(), Misuse> {
        let s = &self.session;
        match kind {
            InputKind::Spawn { turn, child, .. } => {
                let t = self.index(turn)?;
                let turn = &s.turns[t];
                if turn.child(child).is_some() {
                    return Err(Misuse::DuplicateChild {
                        turn: turn.id.clone(),
                        child: child.clone(),
                    });
                }
                limit("children per turn", turn.children.len(), MAX_CHILDREN)
            }
            // A stopped child's late report is taken (and ignored): see `late_report`.
            InputKind::ChildCompleted { turn, child } | InputKind::ChildFailed { turn, child } => {
                self.expect_child(turn, child, "running or stopped", |s| {
                    *s == ChildState::Running || s.is_stopped()
                })
                .map(drop)
            }
            InputKind::Checkpoint {
                turn,
                child,
                temporary_outputs,
                ..
            } => {
                let c = self.expect_child(turn, child, "running or stopped", |s| {
                    *s == ChildState::Running || s.is_stopped()
                })?;
                if *temporary_outputs > 0 && !c.kind.is_cancellable_tool() {
                    return Err(Misuse::WrongChildKind {
                        turn: turn.clone(),
                        child: child.clone(),
                        expected: "a cancellable tool",
                    });
                }
                Ok(())
            }
            InputKind::CommitSent { turn, child, .. } => {
                let c = self.expect_child(turn, child, "running", |s| *s == ChildState::Running)?;
                if !c.kind.is_noncancellable_tool() {
                    return Err(Misuse::WrongChildKind {
                        turn: turn.clone(),
                        child: child.clone(),
                        expected: "a non-cancellable tool",
                    });
                }
                Ok(())
            }
            InputKind::CommitAcked { turn, child } | InputKind::CommitFailed { turn, child } => {
                self.expect_child(turn, child, "commit_sent or commit_unknown", |s| {
                    matches!(
                        s,
                        ChildState::CommitSent { .. } | ChildState::CommitUnknown { .. }
                    )
                })
                .map(drop)
            }
            // The other inputs are not about a child: `validate` checks them.
            _ => Ok(()),
        }
    }

    pub(super) fn spawn(
        &mut self,
        turn: &str,
        child: &str,
        kind: &ChildKind,
        need_ms: Option<u64>,
        timeout_ms: Option<u64>,
    ) {
        let now = self.session.now;
        let (budget_blind, cancel_blind) = (
            flawed!(self, ToolStartsAfterDeadline),
            flawed!(self, SpawnAfterCancelRuns),
        );
        let Some(t) = self.turn_mut(turn) else { return };
        let need = need_ms.unwrap_or(match (kind, t.budget) {
            (ChildKind::Retrieval, Some(b)) => b.retrieval_ms,
            (ChildKind::Model, Some(b)) => b.model_ms,
            _ => 0,
        });
        let remaining = t.remaining_ms(now);
        let no_budget = remaining.is_some_and(|r| r == 0 || r < need);
        let stopping = !t.phase.is_running();
        let refused = if budget_blind {
            None
        } else if no_budget {
            Some(NotStartedReason::NoBudget)
        } else if stopping && !cancel_blind {
            Some(NotStartedReason::TurnCancelled)
        } else {
            None
        };
        let state = match refused {
            // The child exists, so later reports about it are not misuse, but it never ran.
            Some(_) => ChildState::Cancelled {
                checkpoint: NOT_STARTED.to_owned(),
            },
            None => ChildState::Running,
        };
        t.children.push(Child {
            id: child.into(),
            kind: kind.clone(),
            state,
            temporary_outputs: 0,
            cancel_requested: false,
            reconcile_enqueued: false,
            answered: false,
            times_out_at: timeout_ms.map(|t| now.saturating_add(t)),
        });
        let (turn, child) = (turn.into(), child.into());
        self.emit(match refused {
            Some(reason) => Output::ToolNotStarted {
                turn,
                child,
                reason,
            },
            None => Output::ChildStarted { turn, child },
        });
    }

    /// A report from a child the system already stopped: dropped, and said so. `true` if this
    /// was one (the caller then does nothing else).
    pub(super) fn late_report(&mut self, turn: &str, child: &str, report: IgnoredReport) -> bool {
        let stopped = self
            .session
            .turn(turn)
            .and_then(|t| t.child(child))
            .is_some_and(|c| c.state.is_stopped());
        if stopped {
            self.emit(Output::ReportIgnored {
                turn: turn.into(),
                child: child.into(),
                report,
            });
            if report == IgnoredReport::ChildCompleted && flawed!(self, ToolAnsweredAfterCancel) {
                self.emit(Output::ToolAnswered {
                    turn: turn.into(),
                    child: child.into(),
                    answer: ToolAnswer::Result,
                });
            }
        }
        stopped
    }

    /// Under a profile that answers tool calls: the tool call `child` is answered, once.
    pub(super) fn answer(&mut self, turn: &str, child: &str, answer: ToolAnswer) {
        if !self.session.profile.answers_tool_calls() {
            return;
        }
        let interrupted = self
            .session
            .turn(turn)
            .is_some_and(|t| !t.phase.is_running());
        if interrupted
            && answer != ToolAnswer::Cancelled
            && flawed!(self, ToolResultDroppedOnInterruption)
        {
            return;
        }
        let Some(c) = self
            .turn_mut(turn)
            .and_then(|t| t.children.iter_mut().find(|c| c.id == child))
        else {
            return;
        };
        if !c.kind.is_tool() || c.answered {
            return;
        }
        c.answered = true;
        self.emit(Output::ToolAnswered {
            turn: turn.into(),
            child: child.into(),
            answer,
        });
    }

    pub(super) fn checkpoint(
        &mut self,
        turn: &str,
        child: &str,
        phase: &str,
        temporary_outputs: u32,
    ) {
        // Read first: a checkpoint that keeps no work changes nothing (the turns are then not
        // borrowed mutably).
        let Some(t) = self.session.turn(turn) else {
            return;
        };
        let stopping = !t.phase.is_running();
        let Some(c) = t.children.iter().find(|c| c.id == child) else {
            return;
        };
        let cancelled = stopping || c.cancel_requested;
        if !cancelled && temporary_outputs == 0 {
            return;
        }
        if !cancelled {
            let Some(c) = self
                .turn_mut(turn)
                .and_then(|t| t.children.iter_mut().find(|c| c.id == child))
            else {
                return;
            };
            c.temporary_outputs = c.temporary_outputs.saturating_add(temporary_outputs);
            return;
        }
        // The cancel is observed here, before the work of this checkpoint is kept.
        self.stop_child(turn, child, phase);
        if !flawed!(self, DrainedTurnNeverEnds) {
            self.settle(turn);
        }
    }

    /// (`pipecat`.) Tool calls that have run as long as their timeout are cancelled: stopped at
    /// once (the call's task is cancelled, no checkpoint), their temporary outputs removed, and
    /// answered with their cancellation.
    pub(super) fn fire_call_timeouts(&mut self) {
        // Only a profile that times calls out has a child with a timeout.
        if !self.session.profile.times_out_calls() {
            return;
        }
        let now = self.session.now;
        let due: Vec<(TurnId, ChildId)> = self
            .session
            .turns
            .iter()
            .flat_map(|t| {
                t.children
                    .iter()
                    .filter(|c| c.state == ChildState::Running)
                    .filter(|c| c.times_out_at.is_some_and(|at| at <= now))
                    .map(|c| (t.id.clone(), c.id.clone()))
            })
            .collect();
        for (turn, child) in due {
            self.stop_child(&turn, &child, TIMEOUT_CHECKPOINT);
            self.settle(&turn);
        }
    }

    /// A child is stopped now, at `checkpoint`: its temporary outputs removed (unless the planted
    /// flaw keeps them) and said, and — a tool call — answered with its cancellation.
    fn stop_child(&mut self, turn: &str, child: &str, checkpoint: &str) {
        let keep_temporaries = flawed!(self, TemporaryOutputsKept);
        let Some(c) = self
            .turn_mut(turn)
            .and_then(|t| t.children.iter_mut().find(|c| c.id == child))
        else {
            return;
        };
        let removed = c.temporary_outputs;
        if !keep_temporaries {
            c.temporary_outputs = 0;
        }
        c.state = ChildState::Cancelled {
            checkpoint: checkpoint.to_owned(),
        };
        if removed > 0 && !keep_temporaries {
            self.emit(Output::TemporaryOutputRemoved {
                turn: turn.into(),
                child: child.into(),
                count: removed,
            });
        }
        self.emit(Output::ChildCancelled {
            turn: turn.into(),
            child: child.into(),
            checkpoint: checkpoint.to_owned(),
        });
        self.answer(turn, child, ToolAnswer::Cancelled);
    }

    /// Moves a turn to `cancel_requested{cause}` and propagates the cancel down its tree.
    pub(super) fn cancel(&mut self, turn: &str, cause: Cause) {
        self.cancel_with(turn, cause, true);
    }

    /// [`Self::cancel`], clearing the turn's playback only when `clear_playback`.
    pub(super) fn cancel_with(&mut self, turn: &str, cause: Cause, clear_playback: bool) {
        let keep_frames = cause == Cause::BargeIn && flawed!(self, KeepPlaybackOnBargeIn);
        if clear_playback && !keep_frames {
            self.clear_playback_of(turn);
        }
        // An interruption is the pause's decision (unless the flaw leaves its timer armed).
        if self.session.paused.as_ref().is_some_and(|(p, _)| p == turn)
            && !flawed!(self, ResumeAfterInterruption)
        {
            self.session.paused = None;
        }
        let profile = self.session.profile;
        let interruption = matches!(cause, Cause::Stop | Cause::BargeIn);
        let Some(t) = self.turn_mut(turn) else { return };
        t.phase = Phase::CancelRequested { cause };
        let mut outputs = Vec::new();
        for c in &mut t.children {
            let (turn, child) = (turn.into(), c.id.clone());
            match (&c.state, &c.kind) {
                // The tool runs to completion; its result is kept, though no reply follows.
                (ChildState::Running, ChildKind::Tool { cancellable, .. })
                    if interruption && profile.tool_runs_through_interruption(*cancellable) => {}
                (ChildState::Running, ChildKind::Tts) => {
                    let checkpoint = TTS_CHECKPOINT.to_owned();
                    c.state = ChildState::Cancelled {
                        checkpoint: checkpoint.clone(),
                    };
                    outputs.push(Output::ChildCancelled {
                        turn,
                        child,
                        checkpoint,
                    });
                }
                (ChildState::Running, _) => {
                    c.cancel_requested = true;
                    outputs.push(Output::ChildCancelRequested { turn, child });
                }
                (ChildState::CommitSent { .. }, _) => {
                    c.cancel_requested = true;
                    outputs.push(Output::CancelDeferred {
                        turn,
                        child,
                        reason: DeferReason::CommitInFlight,
                    });
                }
                _ => {}
            }
        }
        self.outputs.extend(outputs);
        self.settle(turn);
    }

    pub(super) fn commit_resolved(&mut self, turn: &str, child: &str, acked: bool) {
        let Some(c) = self
            .turn_mut(turn)
            .and_then(|t| t.children.iter_mut().find(|c| c.id == child))
        else {
            return;
        };
        let Some(key) = c.state.effect_key().or(match &c.state {
            ChildState::CommitSent { idempotency_key } => Some(idempotency_key),
            _ => None,
        }) else {
            return;
        };
        let key = key.to_owned();
        c.state = if acked {
            ChildState::Committed {
                idempotency_key: key,
            }
        } else {
            ChildState::CommitFailed {
                idempotency_key: key,
            }
        };
        let answer = if acked {
            ToolAnswer::Result
        } else {
            ToolAnswer::Error
        };
        self.answer(turn, child, answer);
        self.settle(turn);
    }
}
