//! The turn manager's tool calls: started or refused, parked awaiting their results, cancelled
//! at a checkpoint (their own, or where they await when the runtime delivers the cancellation),
//! their results kept or dropped, and answered where the stack answers calls.

use turnfence_model::turn::{
    ChildKind, IgnoredReport, InputKind, NotStartedReason, Output, ToolAnswer,
};

use super::{Call, CallState, Manager, Phase, AWAITING_RESULT, TURN};

impl Manager {
    /// Delivers each cancellation to the tool calls awaiting their results: the runtime cancels
    /// them where they wait. Runs after the action that requested it, in the same acquisition.
    pub(in crate::adapter::turn) fn cancel_parked(&mut self) {
        for i in 0..self.calls.len() {
            let c = &self.calls[i];
            if c.parked && c.cancel_requested && c.state == CallState::Running {
                let child = c.id.clone();
                self.checkpoint(&child, AWAITING_RESULT);
            }
        }
    }

    /// A tool call asks to start; `runs` is whether it may (decided now, or earlier by a flawed
    /// caller). Whether it started.
    pub(in crate::adapter::turn) fn spawn(
        &mut self,
        child: &str,
        runs: Result<(), NotStartedReason>,
    ) -> bool {
        self.input(InputKind::Spawn {
            turn: TURN.into(),
            child: child.into(),
            kind: ChildKind::Tool {
                name: "tool".into(),
                cancellable: true,
            },
            need_ms: None,
            timeout_ms: None,
        });
        self.calls.push(Call {
            id: child.into(),
            state: if runs.is_ok() {
                CallState::Running
            } else {
                CallState::NotStarted
            },
            cancel_requested: false,
            parked: false,
        });
        let (turn, child) = (TURN.into(), child.into());
        match runs {
            Ok(()) => self.tell(Output::ChildStarted { turn, child }),
            Err(reason) => self.tell(Output::ToolNotStarted {
                turn,
                child,
                reason,
            }),
        }
        runs.is_ok()
    }

    /// Whether a tool call may start now.
    pub(in crate::adapter::turn) fn may_start(&self) -> Result<(), NotStartedReason> {
        if self.deadline_at.is_some_and(|d| d <= self.clock) {
            Err(NotStartedReason::NoBudget)
        } else if self.phase != Phase::Running {
            Err(NotStartedReason::TurnCancelled)
        } else {
            Ok(())
        }
    }

    pub(in crate::adapter::turn) fn call(&self, child: &str) -> Option<&Call> {
        self.calls.iter().find(|c| c.id == child)
    }

    fn call_mut(&mut self, child: &str) -> Option<&mut Call> {
        self.calls.iter_mut().find(|c| c.id == child)
    }

    /// The call awaits its result.
    pub(in crate::adapter::turn) fn park(&mut self, child: &str) {
        if let Some(c) = self.call_mut(child) {
            c.parked = true;
        }
    }

    /// A running or cancelled call reaches a checkpoint: a cancel is observed there (the turn
    /// stopping, or the call asked to stop); a report from a cancelled call is ignored.
    pub(in crate::adapter::turn) fn checkpoint(&mut self, child: &str, phase: &str) {
        let Some(c) = self.call(child).cloned() else {
            return;
        };
        if !matches!(c.state, CallState::Running | CallState::Cancelled) {
            return;
        }
        self.input(InputKind::Checkpoint {
            turn: TURN.into(),
            child: child.into(),
            phase: phase.into(),
            temporary_outputs: 0,
        });
        if c.state == CallState::Cancelled {
            return self.ignored(child, IgnoredReport::Checkpoint);
        }
        if self.phase == Phase::Running && !c.cancel_requested {
            return;
        }
        if let Some(c) = self.call_mut(child) {
            c.state = CallState::Cancelled;
            c.parked = false;
        }
        self.tell(Output::ChildCancelled {
            turn: TURN.into(),
            child: child.into(),
            checkpoint: phase.into(),
        });
        self.answer(child, ToolAnswer::Cancelled);
        self.settle();
    }

    fn ignored(&mut self, child: &str, report: IgnoredReport) {
        self.tell(Output::ReportIgnored {
            turn: TURN.into(),
            child: child.into(),
            report,
        });
    }

    /// A call's result (or its error) comes in; `cancelled` is whether the call was cancelled
    /// (read now, or earlier by a flawed caller): then the result is dropped, never answered.
    pub(in crate::adapter::turn) fn result(&mut self, child: &str, ok: bool, cancelled: bool) {
        let (turn, child_id) = (TURN.to_owned(), child.to_owned());
        self.input(if ok {
            InputKind::ChildCompleted {
                turn: turn.into(),
                child: child_id.into(),
            }
        } else {
            InputKind::ChildFailed {
                turn: turn.into(),
                child: child_id.into(),
            }
        });
        if cancelled {
            return self.ignored(child, IgnoredReport::ChildCompleted);
        }
        if let Some(c) = self.call_mut(child) {
            c.state = CallState::Completed;
            c.parked = false;
        }
        let answer = if ok {
            ToolAnswer::Result
        } else {
            ToolAnswer::Error
        };
        self.answer(child, answer);
        self.settle();
    }

    /// The call is answered, where the stack answers calls. Once: only a running call is
    /// answered, and its answer ends it (completed or cancelled).
    fn answer(&mut self, child: &str, answer: ToolAnswer) {
        if !self.rules.answers_calls {
            return;
        }
        self.tell(Output::ToolAnswered {
            turn: TURN.into(),
            child: child.into(),
            answer,
        });
    }
}
