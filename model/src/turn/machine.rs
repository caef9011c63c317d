//! The turn machine: one conversation session driven by [`Input`]s, answering with [`Output`]s.
//!
//! `handle` takes one input; `poll_output` hands back what the system did. Every input first
//! moves virtual time to its `at` (deadlines due by then fire), then is checked against the state
//! (a caller's mistake is a [`Misuse`] and changes nothing more), then applied. Applying never
//! fails and never panics.

use std::collections::VecDeque;

use super::misuse::Misuse;
use super::state::{Child, ChildState, Frame, Phase, Session, Stored, Turn};
use super::types::*;
#[cfg(feature = "flaws")]
use super::Flaw;
use super::{Invariant, Monitor};
use crate::Millis;

/// At most this many turns per session.
pub const MAX_TURNS: usize = 1 << 16;
/// At most this many children per turn.
pub const MAX_CHILDREN: usize = 256;
/// At most this many frames wait in the playback buffer.
pub const MAX_BUFFERED_FRAMES: usize = 1 << 16;
/// At most this many events in the stream store.
pub const MAX_STORED_EVENTS: usize = 1 << 20;
/// A disconnected client may resume within this window; later its cursor has expired.
pub const RESUME_TTL_MS: Millis = 60_000;
/// The checkpoint name a TTS child is stopped at: its buffer is cleared, no cooperation needed.
pub const TTS_CHECKPOINT: &str = "buffer_cleared";

/// The turn machine of one session.
#[derive(Clone, Debug, Default)]
pub struct TurnMachine {
    session: Session,
    outputs: VecDeque<Output>,
    #[cfg(feature = "flaws")]
    flaw: Option<Flaw>,
}

/// Which rule a flaw may break at a given spot. Without the `flaws` feature every check is `false`
/// and compiles away.
macro_rules! flawed {
    ($self:ident, $flaw:ident) => {{
        #[cfg(feature = "flaws")]
        let on = $self.flaw == Some(Flaw::$flaw);
        #[cfg(not(feature = "flaws"))]
        let on = false;
        on
    }};
}

impl crate::Machine for TurnMachine {
    type Input = Input;
    type Output = Output;
    type Misuse = Misuse;
    type Invariant = Invariant;
    type Monitor = Monitor;
    #[cfg(feature = "flaws")]
    type Flaw = Flaw;

    const NAME: &'static str = "turn";

    #[cfg(feature = "flaws")]
    fn with_flaw(flaw: Flaw) -> Self {
        TurnMachine {
            flaw: Some(flaw),
            ..TurnMachine::default()
        }
    }

    #[cfg(feature = "flaws")]
    const FLAWS: &'static [Flaw] = &Flaw::ALL;

    #[cfg(feature = "flaws")]
    fn breaks(flaw: Flaw) -> Invariant {
        flaw.breaks()
    }

    fn at(input: &Input) -> Millis {
        input.at
    }

    fn tick(at: Millis) -> Input {
        Input::new(at, InputKind::Tick)
    }

    fn is_tick(input: &Input) -> bool {
        matches!(input.kind, InputKind::Tick)
    }

    /// Deadlines due by `at` fire.
    fn advance_to(&mut self, at: Millis) -> Result<(), Misuse> {
        if at < self.session.now {
            return Err(Misuse::TimeWentBackwards {
                expected_at_least: self.session.now,
                got: at,
            });
        }
        self.session.now = at;
        self.fire_deadlines();
        Ok(())
    }

    fn handle(&mut self, input: &Input) -> Result<(), Misuse> {
        self.advance_to(input.at)?;
        self.validate(&input.kind)?;
        self.apply(&input.kind);
        Ok(())
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    /// The next deadline of a turn not yet ended: a running turn's fires there; a stopping
    /// turn's is where the invariants judge whether it ended in time
    /// (`quiescent_turns_terminal`).
    fn poll_timeout(&self) -> Option<Millis> {
        let s = &self.session;
        s.turns
            .iter()
            .filter(|t| !t.phase.is_terminal())
            .filter_map(|t| t.deadline_at)
            .filter(|d| *d > s.now)
            .min()
    }

    fn fingerprint<H: std::hash::Hasher>(&self, h: &mut H) {
        use std::hash::Hash;
        self.session.hash(h);
    }
}

impl TurnMachine {
    pub fn new() -> TurnMachine {
        TurnMachine::default()
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    fn emit(&mut self, output: Output) {
        self.outputs.push_back(output);
    }

    fn index(&self, turn: &str) -> Result<usize, Misuse> {
        self.session
            .turns
            .iter()
            .position(|t| t.id == turn)
            .ok_or_else(|| Misuse::UnknownTurn {
                turn: turn.to_owned(),
            })
    }

    fn child_index(&self, t: usize, child: &str) -> Result<usize, Misuse> {
        let turn = &self.session.turns[t];
        turn.children
            .iter()
            .position(|c| c.id == child)
            .ok_or_else(|| Misuse::UnknownChild {
                turn: turn.id.clone(),
                child: child.to_owned(),
            })
    }

    fn child_state(&self, turn: &str, child: &str) -> Result<&Child, Misuse> {
        let t = self.index(turn)?;
        let c = self.child_index(t, child)?;
        Ok(&self.session.turns[t].children[c])
    }

    fn expect_child(
        &self,
        turn: &str,
        child: &str,
        expected: &'static str,
        ok: impl Fn(&ChildState) -> bool,
    ) -> Result<&Child, Misuse> {
        let c = self.child_state(turn, child)?;
        if ok(&c.state) {
            Ok(c)
        } else {
            Err(Misuse::ChildNotInState {
                turn: turn.to_owned(),
                child: child.to_owned(),
                expected,
                got: c.state.name(),
            })
        }
    }

    /// Checks an input against the state, changing nothing.
    fn validate(&self, kind: &InputKind) -> Result<(), Misuse> {
        let s = &self.session;
        match kind {
            InputKind::Accept {
                turn,
                generation,
                deadline_ms,
                budget,
                ..
            } => self.validate_accept(turn, *generation, *deadline_ms, *budget),
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
            InputKind::ChildCompleted { turn, child } => self
                .expect_child(turn, child, "running", |s| *s == ChildState::Running)
                .map(drop),
            InputKind::Checkpoint {
                turn,
                child,
                temporary_outputs,
                ..
            } => {
                let c = self.expect_child(turn, child, "running", |s| *s == ChildState::Running)?;
                if *temporary_outputs > 0 && !c.kind.is_cancellable_tool() {
                    return Err(Misuse::WrongChildKind {
                        turn: turn.clone(),
                        child: child.clone(),
                        expected: "a cancellable tool",
                    });
                }
                Ok(())
            }
            InputKind::Delta { turn, frames, .. } => {
                self.index(turn)?;
                limit("stored events", s.store.len(), MAX_STORED_EVENTS)?;
                limit(
                    "buffered frames",
                    s.playback.len().saturating_add(*frames as usize),
                    MAX_BUFFERED_FRAMES,
                )
            }
            InputKind::ModelDone { turn } | InputKind::Stop { turn, .. } => {
                self.index(turn).map(drop)
            }
            InputKind::FramePlayed if s.playback.is_empty() => Err(Misuse::PlaybackEmpty),
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
            InputKind::ClientAck { seq } => known_seq(*seq, s.last_persisted()),
            InputKind::Disconnect if !s.client.connected => Err(Misuse::Connection {
                expected: "connected",
            }),
            InputKind::Resume { .. } if s.client.connected => Err(Misuse::Connection {
                expected: "disconnected",
            }),
            InputKind::ClientReceive { seq } => {
                if !s.client.connected {
                    return Err(Misuse::Connection {
                        expected: "connected",
                    });
                }
                known_seq(*seq, s.last_persisted())?;
                let next = s.client.received.saturating_add(1);
                if *seq > next {
                    return Err(Misuse::ReceiveGap {
                        expected_at_most: next,
                        got: *seq,
                    });
                }
                Ok(())
            }
            InputKind::FramePlayed
            | InputKind::SpeechStarted { .. }
            | InputKind::Tick
            | InputKind::Disconnect
            | InputKind::Resume { .. } => Ok(()),
        }
    }

    fn validate_accept(
        &self,
        turn: &str,
        generation: Generation,
        deadline_ms: Option<u64>,
        budget: Option<Budget>,
    ) -> Result<(), Misuse> {
        let s = &self.session;
        if s.turn(turn).is_some() {
            return Err(Misuse::DuplicateTurn {
                turn: turn.to_owned(),
            });
        }
        limit("turns per session", s.turns.len(), MAX_TURNS)?;
        // Above every used generation, and not below the one a barge-in made active.
        let floor = match (s.max_generation, s.active_generation) {
            (Some(max), Some(active)) => Some(max.max(active.saturating_sub(1))),
            (max, active) => max.or(active.map(|a| a.saturating_sub(1))),
        };
        if let Some(floor) = floor {
            if generation <= floor {
                return Err(Misuse::StaleGeneration {
                    expected_above: floor,
                    got: generation,
                });
            }
        }
        match (deadline_ms, budget) {
            (None, Some(_)) => Err(Misuse::BudgetWithoutDeadline {
                turn: turn.to_owned(),
            }),
            (Some(deadline_ms), Some(b)) if b.total_ms() > deadline_ms => {
                Err(Misuse::BudgetExceedsDeadline {
                    turn: turn.to_owned(),
                    deadline_ms,
                    budget_ms: b.total_ms(),
                })
            }
            _ => Ok(()),
        }
    }

    /// Applies a validated input.
    fn apply(&mut self, kind: &InputKind) {
        match kind {
            InputKind::Accept {
                turn,
                generation,
                mode,
                deadline_ms,
                budget,
            } => self.accept(turn, *generation, *mode, *deadline_ms, *budget),
            InputKind::Spawn {
                turn,
                child,
                kind,
                need_ms,
            } => self.spawn(turn, child, kind, *need_ms),
            InputKind::ChildCompleted { turn, child } => {
                self.set_child(turn, child, ChildState::Completed);
                self.settle(turn);
            }
            InputKind::Checkpoint {
                turn,
                child,
                phase,
                temporary_outputs,
            } => self.checkpoint(turn, child, phase, *temporary_outputs),
            InputKind::Delta {
                turn,
                generation,
                seq,
                text,
                frames,
            } => self.delta(turn, *generation, *seq, text, *frames),
            InputKind::ModelDone { turn } => self.model_done(turn),
            InputKind::FramePlayed => self.frame_played(),
            InputKind::Stop { turn, request_id } => self.stop(turn, request_id),
            InputKind::SpeechStarted { .. } => self.speech_started(),
            InputKind::CommitSent {
                turn,
                child,
                idempotency_key,
            } => {
                let key = idempotency_key.clone();
                self.set_child(
                    turn,
                    child,
                    ChildState::CommitSent {
                        idempotency_key: key,
                    },
                );
            }
            InputKind::CommitAcked { turn, child } => self.commit_resolved(turn, child, true),
            InputKind::CommitFailed { turn, child } => self.commit_resolved(turn, child, false),
            InputKind::Tick => {}
            InputKind::ClientAck { seq } => {
                let c = &mut self.session.client;
                c.acked = c.acked.max(*seq);
            }
            InputKind::Disconnect => {
                self.session.client.connected = false;
                self.session.client.disconnected_at = Some(self.session.now);
            }
            InputKind::Resume { after_seq } => self.resume(*after_seq),
            InputKind::ClientReceive { seq } => self.client_receive(*seq),
        }
    }

    fn turn_mut(&mut self, turn: &str) -> Option<&mut Turn> {
        self.session.turns.iter_mut().find(|t| t.id == turn)
    }

    fn set_child(&mut self, turn: &str, child: &str, state: ChildState) {
        if let Some(c) = self
            .turn_mut(turn)
            .and_then(|t| t.children.iter_mut().find(|c| c.id == child))
        {
            c.state = state;
        }
    }

    fn accept(
        &mut self,
        turn: &str,
        generation: Generation,
        mode: Mode,
        deadline_ms: Option<u64>,
        budget: Option<Budget>,
    ) {
        let running = self.session.turns.iter().any(|t| t.phase.is_running());
        if running && !flawed!(self, AcceptWhileRunning) {
            self.emit(Output::TurnRefused {
                turn: turn.to_owned(),
                reason: RefuseReason::ActiveTurnExists,
            });
            return;
        }
        let s = &mut self.session;
        s.active_generation = Some(generation);
        s.max_generation = Some(generation);
        s.turns.push(Turn {
            id: turn.to_owned(),
            generation,
            mode,
            accepted_at: s.now,
            deadline_at: deadline_ms.map(|d| s.now.saturating_add(d)),
            budget,
            phase: Phase::Running,
            children: Vec::new(),
            last_delivered_seq: 0,
            model_done: false,
        });
        // A deadline that is already due (`deadline_ms: 0`) fires at once.
        self.fire_deadlines();
    }

    fn spawn(&mut self, turn: &str, child: &str, kind: &ChildKind, need_ms: Option<u64>) {
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
                checkpoint: "not_started".to_owned(),
            },
            None => ChildState::Running,
        };
        t.children.push(Child {
            id: child.to_owned(),
            kind: kind.clone(),
            state,
            temporary_outputs: 0,
            cancel_requested: false,
            reconcile_enqueued: false,
        });
        if let Some(reason) = refused {
            self.emit(Output::ToolNotStarted {
                turn: turn.to_owned(),
                child: child.to_owned(),
                reason,
            });
        }
    }

    fn checkpoint(&mut self, turn: &str, child: &str, phase: &str, temporary_outputs: u32) {
        let keep_temporaries = flawed!(self, TemporaryOutputsKept);
        let Some(t) = self.turn_mut(turn) else { return };
        let stopping = !t.phase.is_running();
        let Some(c) = t.children.iter_mut().find(|c| c.id == child) else {
            return;
        };
        if !(stopping || c.cancel_requested) {
            c.temporary_outputs = c.temporary_outputs.saturating_add(temporary_outputs);
            return;
        }
        // The cancel is observed here, before the work of this checkpoint is kept.
        let removed = c.temporary_outputs;
        if !keep_temporaries {
            c.temporary_outputs = 0;
        }
        c.state = ChildState::Cancelled {
            checkpoint: phase.to_owned(),
        };
        if removed > 0 && !keep_temporaries {
            self.emit(Output::TemporaryOutputRemoved {
                turn: turn.to_owned(),
                child: child.to_owned(),
                count: removed,
            });
        }
        self.emit(Output::ChildCancelled {
            turn: turn.to_owned(),
            child: child.to_owned(),
            checkpoint: phase.to_owned(),
        });
        if !flawed!(self, DrainedTurnNeverEnds) {
            self.settle(turn);
        }
    }

    /// The delivery gate.
    fn delta(
        &mut self,
        turn: &str,
        generation: Generation,
        seq: Seq,
        text: &Option<String>,
        frames: u32,
    ) {
        let active = self.session.active_generation;
        let deliver_after_stop = flawed!(self, DeliverAfterStop);
        let seq_unchecked = flawed!(self, DeltaSeqUnchecked);
        let Some(t) = self.turn_mut(turn) else { return };
        let reason = match t.phase {
            _ if generation != t.generation || Some(generation) != active => {
                Some(DropReason::StaleGeneration)
            }
            Phase::Terminal { .. } => Some(DropReason::Terminal),
            Phase::CancelRequested { .. } if !deliver_after_stop => {
                Some(DropReason::CancelRequested)
            }
            _ if seq != t.last_delivered_seq.saturating_add(1) && !seq_unchecked => {
                Some(DropReason::OutOfOrder)
            }
            _ => None,
        };
        let turn = turn.to_owned();
        if let Some(reason) = reason {
            self.emit(Output::LateDropped {
                turn,
                generation,
                seq,
                reason,
            });
            return;
        }
        t.last_delivered_seq = seq;
        for _ in 0..frames {
            self.session.playback.push_back(Frame {
                turn: turn.clone(),
                generation,
                seq,
            });
        }
        self.emit(Output::Delivered {
            turn: turn.clone(),
            generation,
            seq,
        });
        self.persist(turn, text.clone(), false);
    }

    fn persist(&mut self, turn: TurnId, text: Option<String>, terminal: bool) {
        if self.session.store.len() >= MAX_STORED_EVENTS {
            // Validation keeps deltas under the bound; a terminal past it is still reported.
            return;
        }
        self.session.store.push(Stored {
            turn: turn.clone(),
            text: text.clone(),
            terminal,
        });
        let seq = self.session.last_persisted();
        self.emit(Output::Persisted {
            turn,
            seq,
            text,
            terminal,
        });
    }

    fn model_done(&mut self, turn: &str) {
        let Some(t) = self.turn_mut(turn) else { return };
        t.model_done = true;
        for c in &mut t.children {
            if c.kind == ChildKind::Model && c.state == ChildState::Running {
                c.state = ChildState::Completed;
            }
        }
        self.settle(turn);
    }

    fn frame_played(&mut self) {
        if let Some(frame) = self.session.playback.pop_front() {
            let turn = frame.turn.clone();
            self.emit(Output::Played {
                turn: frame.turn,
                generation: frame.generation,
                seq: frame.seq,
            });
            self.settle(&turn);
        }
    }

    fn stop(&mut self, turn: &str, request_id: &str) {
        let Some(t) = self.turn_mut(turn) else { return };
        let phase = t.phase;
        let answer = match phase {
            Phase::Running => StopAnswer::Requested,
            Phase::CancelRequested { .. } if flawed!(self, RepeatedStopRecancels) => {
                StopAnswer::Requested
            }
            Phase::CancelRequested { .. } => StopAnswer::AlreadyRequested,
            Phase::Terminal { state } => StopAnswer::AlreadyTerminal { state },
        };
        self.emit(Output::StopAnswered {
            turn: turn.to_owned(),
            request_id: request_id.to_owned(),
            answer,
        });
        match phase {
            Phase::Running => self.cancel(turn, Cause::Stop),
            Phase::CancelRequested { cause } if answer == StopAnswer::Requested => {
                self.cancel(turn, cause)
            }
            Phase::Terminal { state } if flawed!(self, SecondTerminalOnRepeatedStop) => {
                self.emit(Output::Terminal {
                    turn: turn.to_owned(),
                    state,
                });
            }
            _ => {}
        }
    }

    /// Barge-in: the user speaks over an audio turn that is speaking.
    fn speech_started(&mut self) {
        let s = &self.session;
        let speaking = s.turns.iter().find(|t| {
            t.phase.is_running()
                && t.mode == Mode::Audio
                && Some(t.generation) == s.active_generation
                && (t.last_delivered_seq > 0 || s.playback.iter().any(|f| f.turn == t.id))
        });
        let Some(t) = speaking else { return };
        let (turn, generation) = (t.id.clone(), t.generation);
        // Order as the real systems do it: clear playback, fence the generation, cancel it.
        if !flawed!(self, KeepPlaybackOnBargeIn) {
            let frames = self.session.playback.len();
            self.session.playback.clear();
            self.emit(Output::PlaybackCleared {
                turn: turn.clone(),
                frames: frames as u32,
            });
        }
        self.session.active_generation = Some(generation.saturating_add(1));
        self.emit(Output::GenerationFenced {
            turn: turn.clone(),
            generation,
        });
        // The buffer is already cleared (and reported once): the cancel must not clear it again.
        self.cancel_with(&turn, Cause::BargeIn, false);
    }

    /// Moves a turn to `cancel_requested{cause}` and propagates the cancel down its tree.
    fn cancel(&mut self, turn: &str, cause: Cause) {
        self.cancel_with(turn, cause, true);
    }

    /// [`Self::cancel`], clearing the turn's playback only when `clear_playback`.
    fn cancel_with(&mut self, turn: &str, cause: Cause, clear_playback: bool) {
        let keep_frames = cause == Cause::BargeIn && flawed!(self, KeepPlaybackOnBargeIn);
        if clear_playback && !keep_frames {
            self.clear_playback_of(turn);
        }
        let Some(t) = self.turn_mut(turn) else { return };
        t.phase = Phase::CancelRequested { cause };
        let mut outputs = Vec::new();
        for c in &mut t.children {
            let (turn, child) = (turn.to_owned(), c.id.clone());
            match (&c.state, &c.kind) {
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

    /// Removes a turn's frames from the playback buffer. Reported when there were frames, or
    /// when the turn has a TTS child whose buffer this is.
    fn clear_playback_of(&mut self, turn: &str) {
        let before = self.session.playback.len();
        self.session.playback.retain(|f| f.turn != turn);
        let frames = (before - self.session.playback.len()) as u32;
        let has_tts = self.session.turn(turn).is_some_and(|t| {
            t.children
                .iter()
                .any(|c| c.kind == ChildKind::Tts && c.state == ChildState::Running)
        });
        if frames > 0 || has_tts {
            self.emit(Output::PlaybackCleared {
                turn: turn.to_owned(),
                frames,
            });
        }
    }

    fn commit_resolved(&mut self, turn: &str, child: &str, acked: bool) {
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
        self.settle(turn);
    }

    /// Deadlines due by now fire: the running turn fails, its in-flight commits become unknown.
    fn fire_deadlines(&mut self) {
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
    fn settle(&mut self, turn: &str) {
        let early = flawed!(self, CancelledBeforeChildrenStopped);
        let blind = flawed!(self, CancelledAfterCommit);
        // A speaking turn is not done before its audio has played out.
        let buffered = self.session.playback.iter().any(|f| f.turn == turn);
        let Some(t) = self.turn_mut(turn) else { return };
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
        t.phase = Phase::Terminal { state };
        let mut outputs = Vec::new();
        if state == Terminal::ReconcileRequired {
            for c in t.children.iter_mut().filter(|c| !c.reconcile_enqueued) {
                if let Some(key) = c.state.effect_key() {
                    c.reconcile_enqueued = true;
                    outputs.push(Output::ReconcileEnqueued {
                        turn: turn.to_owned(),
                        child: c.id.clone(),
                        idempotency_key: key.to_owned(),
                    });
                }
            }
        }
        self.outputs.extend(outputs);
        self.emit(Output::Terminal {
            turn: turn.to_owned(),
            state,
        });
        self.persist(turn.to_owned(), None, true);
    }

    fn resume(&mut self, after_seq: Seq) {
        let s = &mut self.session;
        let last = s.last_persisted();
        let expired = s
            .client
            .disconnected_at
            .is_some_and(|d| s.now.saturating_sub(d) > RESUME_TTL_MS);
        let refusal = if after_seq > last {
            Some(ResumeRefusal::UnknownCursor)
        } else if expired {
            Some(ResumeRefusal::Expired)
        } else {
            None
        };
        if let Some(reason) = refusal {
            self.emit(Output::ResumeRefused { after_seq, reason });
            return;
        }
        s.client.connected = true;
        s.client.disconnected_at = None;
        let from = if flawed!(self, ReplayFromCursor) && after_seq > 0 {
            after_seq
        } else {
            after_seq + 1
        };
        self.emit(Output::Replayed { from, to: last });
    }

    /// The client takes in an event: the next one is rendered, one it already has is dropped.
    fn client_receive(&mut self, seq: Seq) {
        let s = &mut self.session;
        if seq <= s.client.received {
            self.emit(Output::DuplicateIgnored { seq });
            return;
        }
        s.client.received = seq;
        let Some(event) = s.store.get((seq - 1) as usize) else {
            return;
        };
        let (turn, terminal) = (event.turn.clone(), event.terminal);
        let piece = event.text.clone();
        let text = s.client.text_of(&turn);
        if let Some(piece) = piece {
            text.push_str(&piece);
        }
        if terminal {
            let text = text.clone();
            self.emit(Output::Rendered { turn, text });
        }
    }
}

fn limit(what: &'static str, len: usize, limit: usize) -> Result<(), Misuse> {
    if len >= limit {
        Err(Misuse::LimitReached { what, limit })
    } else {
        Ok(())
    }
}

fn known_seq(seq: Seq, last_persisted: Seq) -> Result<(), Misuse> {
    if seq > last_persisted {
        Err(Misuse::UnknownSeq {
            seq,
            last_persisted,
        })
    } else {
        Ok(())
    }
}
