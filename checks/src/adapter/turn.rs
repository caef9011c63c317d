//! The turn manager over threads.

use turnfence_model::prelude::*;
use turnfence_model::turn::{ChildKind, Input, InputKind, Mode, Output, StopAnswer, TurnMachine};

use super::record::{self, Record};
use crate::sync::{Arc, AtomicBool, Mutex, Ordering};
use crate::trace::Verdict;

/// How the adapter decides: correctly (under the lock), or with one decision taken outside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    Correct,
    /// The model stream checks "not cancelled" under the lock, releases it, then delivers.
    DeliverAfterStaleCheck,
    /// The speaker peeks at the head frame, releases the lock, then plays what it peeked.
    PlayPeekedFrame,
    /// A stop checks an "already stopped" flag, then sets it: two stops can both see it unset.
    StopFlagCheckThenSet,
    /// A tool reads its turn's cancel flag before it is registered, and runs on that reading.
    CancelFlagReadBeforeRegistering,
}

/// What happened, in lock order: an input and what the adapter told the world it did.
pub type Observation = record::Observation<TurnMachine>;

struct Inner {
    machine: TurnMachine,
    record: Record<TurnMachine>,
    clock: u64,
}

impl Inner {
    fn apply(&mut self, kind: InputKind) -> Vec<Output> {
        self.clock += 1;
        let input = Input::new(self.clock, kind);
        let result = self.machine.handle(&input);
        let outputs: Vec<Output> = std::iter::from_fn(|| self.machine.poll_output()).collect();
        // A refused input is still what the thread did: recorded, nothing told.
        self.record.input(input);
        if result.is_ok() {
            for o in &outputs {
                self.record.told(o.clone());
            }
        }
        outputs
    }
}

/// The turn manager, shared by the threads.
#[derive(Clone)]
pub struct TurnAdapter {
    inner: Arc<Mutex<Inner>>,
    stopped: Arc<AtomicBool>,
    variant: Variant,
}

/// The turn every scenario runs.
pub const TURN: &str = "t";

impl TurnAdapter {
    /// A session with one audio turn accepted, generation 1.
    pub fn new(variant: Variant) -> TurnAdapter {
        let adapter = TurnAdapter {
            inner: Arc::new(Mutex::new(Inner {
                machine: TurnMachine::new(),
                record: Record::default(),
                clock: 0,
            })),
            stopped: Arc::new(AtomicBool::new(false)),
            variant,
        };
        adapter.apply(InputKind::Accept {
            turn: TURN.into(),
            generation: 1,
            mode: Mode::Audio,
            deadline_ms: None,
            budget: None,
            interruptible: true,
        });
        adapter
    }

    /// Applies one input under the lock; records it with what the machine did. Returns that.
    pub fn apply(&self, kind: InputKind) -> Vec<Output> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.apply(kind)
    }

    /// Replaces what the last recorded input told the world (a flawed variant's own decision).
    fn tell_instead(&self, told: Vec<Output>) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.record.tell_instead(told);
    }

    fn running(&self) -> bool {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner
            .machine
            .session()
            .turn(TURN)
            .is_some_and(|t| t.phase.is_running())
    }

    /// The model stream hands over delta `seq` (with one audio frame).
    pub fn delta(&self, seq: u64) {
        let kind = InputKind::Delta {
            turn: TURN.into(),
            generation: 1,
            seq,
            text: None,
            frames: 1,
        };
        if self.variant != Variant::DeliverAfterStaleCheck {
            self.apply(kind);
            return;
        }
        let deliver = self.running();
        self.apply(kind);
        if deliver {
            self.tell_instead(vec![Output::Delivered {
                turn: TURN.into(),
                generation: 1,
                seq,
            }]);
        }
    }

    /// The client asks to stop; returns the answer it was given.
    pub fn stop(&self, request_id: &str) -> Option<StopAnswer> {
        let kind = InputKind::Stop {
            turn: TURN.into(),
            request_id: request_id.into(),
        };
        if self.variant == Variant::StopFlagCheckThenSet && !self.stopped.load(Ordering::SeqCst) {
            self.stopped.store(true, Ordering::SeqCst);
            let mut told = self.apply(kind);
            for o in &mut told {
                if let Output::StopAnswered { answer, .. } = o {
                    *answer = StopAnswer::Requested;
                }
            }
            self.tell_instead(told);
            return Some(StopAnswer::Requested);
        }
        self.apply(kind).into_iter().find_map(|o| match o {
            Output::StopAnswered { answer, .. } => Some(answer),
            _ => None,
        })
    }

    /// The VAD hears the user speak.
    pub fn speech(&self) {
        self.apply(InputKind::SpeechStarted { confidence: 0.9 });
    }

    /// The speaker consumes the head frame.
    pub fn play(&self) {
        if self.variant != Variant::PlayPeekedFrame {
            // Look and take under one lock: a frame cleared meanwhile is simply not there.
            let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            if !inner.machine.session().playback.is_empty() {
                inner.apply(InputKind::FRAME_PLAYED);
            }
            return;
        }
        let peeked = {
            let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            inner.machine.session().playback.front().cloned()
        };
        let Some(frame) = peeked else { return };
        self.apply(InputKind::FRAME_PLAYED);
        self.tell_instead(vec![Output::Played {
            turn: frame.turn,
            generation: frame.generation,
            seq: frame.seq,
            frames: 1,
        }]);
    }

    /// A tool child is spawned and, if it may, runs its body to completion.
    pub fn tool(&self, child: &str) {
        let may_run_stale = self.running();
        let outputs = self.apply(InputKind::Spawn {
            turn: TURN.into(),
            child: child.into(),
            kind: ChildKind::Tool {
                name: "tool".into(),
                cancellable: true,
            },
            need_ms: None,
        });
        let refused = outputs
            .iter()
            .any(|o| matches!(o, Output::ToolNotStarted { .. }));
        let runs = match self.variant {
            Variant::CancelFlagReadBeforeRegistering => may_run_stale,
            _ => !refused,
        };
        if runs {
            self.apply(InputKind::ChildCompleted {
                turn: TURN.into(),
                child: child.into(),
            });
        }
    }

    /// A tool child reaches a checkpoint (where a cancel is observed).
    pub fn checkpoint(&self, child: &str) {
        self.apply(InputKind::Checkpoint {
            turn: TURN.into(),
            child: child.into(),
            phase: "p".into(),
            temporary_outputs: 0,
        });
    }

    /// What the threads did and were told, in lock order.
    pub fn record(&self) -> Vec<Observation> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.record.observations().to_vec()
    }
}

/// Holds a record against the model: the inputs replayed, what the adapter told held against
/// what the model does, the invariants over what happened.
pub fn conformance(record: &[Observation]) -> Verdict {
    record::verdict::<TurnMachine>(record)
}
