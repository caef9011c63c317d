//! The turn machine: one conversation session driven by [`Input`]s, answering with [`Output`]s.
//!
//! `handle` takes one input; `poll_output` hands back what the system did. Every input first
//! moves virtual time to its `at` (deadlines due by then fire), then is checked against the state
//! (a caller's mistake is a [`Misuse`] and changes nothing more), then applied. Applying never
//! fails and never panics.
//!
//! The machine is one struct, [`TurnMachine`], with one `impl` block per concept: this file holds
//! its state, the [`crate::Machine`] interface and the validate/apply dispatch; `lifecycle` a
//! turn's life from accept to its terminal state, `children` its children and the cancel tree,
//! `delivery` the delivery gate, playback and barge-in, `store` the stream store and the client.

use std::collections::VecDeque;

use super::misuse::Misuse;
use super::output::*;
use super::state::{Child, ChildState, Session, Turn};
use super::types::*;
use super::{Flaw, Interruption, Invariant, Monitor, Profile};
use crate::{Millis, Plant, Sound};

/// At most this many turns per session.
pub const MAX_TURNS: usize = 1 << 16;
/// At most this many children per turn.
pub const MAX_CHILDREN: usize = 256;
/// At most this many frames wait in the playback buffer: 16 777 216, over four hours of audio
/// where a frame is a millisecond (`openai-realtime`: a reply generated faster than it plays
/// queues minutes). The buffer keeps runs, so what it holds grows with the deltas, not the frames.
pub const MAX_BUFFERED_FRAMES: usize = 1 << 24;
/// At most this many events in the stream store.
pub const MAX_STORED_EVENTS: usize = 1 << 20;
/// A disconnected client may resume within this window; later its cursor has expired.
pub const RESUME_TTL_MS: Millis = 60_000;
/// The checkpoint name a TTS child is stopped at: its buffer is cleared, no cooperation needed.
pub const TTS_CHECKPOINT: &str = "buffer_cleared";
/// The checkpoint name a tool call is stopped at when its timeout fires (`pipecat`).
pub const TIMEOUT_CHECKPOINT: &str = "timeout";

/// The turn machine of one session. `P` is its planted flaw: [`Sound`] (none, by type: the
/// machine everyone runs) unless it was made by
/// [`Plantable::with_flaw`](crate::Plantable::with_flaw).
#[derive(Debug, Default)]
pub struct TurnMachine<P = Sound> {
    session: Session,
    outputs: VecDeque<Output>,
    plant: P,
}

clone_in_place!(<P> TurnMachine { session, outputs, plant });

/// Whether the planted flaw is this one: for the sound machine a constant `false` that compiles
/// away. Defined before the concepts' modules, so that each of them can use it.
macro_rules! flawed {
    ($self:ident, $flaw:ident) => {
        $crate::Plant::<$crate::turn::Flaw>::planted(&$self.plant)
            == Some($crate::turn::Flaw::$flaw)
    };
}

mod children;
mod delivery;
mod lifecycle;
mod store;

machine!(TurnMachine "turn" { session: Session }
    due: fire_deadlines, timeout: next_deadline, monitor: fresh_monitor, planted: plant_flaw);

impl TurnMachine {
    /// The sound machine, fresh, following `profile`'s rule choices.
    pub fn with_profile(profile: Profile) -> TurnMachine {
        let mut machine = TurnMachine::default();
        machine.session.profile = profile;
        machine
    }
}

impl<P: Plant<Flaw>> TurnMachine<P> {
    /// This machine, fresh, made to follow `profile` instead (before any input).
    pub fn profiled(mut self, profile: Profile) -> Self {
        self.session.profile = profile;
        self
    }

    /// The rule choices this machine follows.
    pub fn profile(&self) -> Profile {
        self.session.profile
    }

    /// This machine, fresh, with the session's interruption options (`livekit-agents`; before
    /// any input).
    pub fn with_interruption(mut self, interruption: Interruption) -> Self {
        self.session.interruption = interruption;
        self
    }

    /// The session's interruption options (`livekit-agents`).
    pub fn interruption(&self) -> Interruption {
        self.session.interruption
    }

    /// The machine with its session made anew from its own by `make` (a respawn of its
    /// children: `turn::rename`), the outputs not yet drained and its plant kept.
    pub fn with_session_from(&self, make: impl FnOnce(&Session) -> Session) -> TurnMachine<P> {
        TurnMachine {
            session: make(&self.session),
            outputs: self.outputs.clone(),
            plant: self.plant.clone(),
        }
    }

    /// A monitor judging by this machine's profile and options.
    fn fresh_monitor(&self) -> Monitor {
        Monitor::for_profile(self.session.profile).with_interruption(self.session.interruption)
    }

    /// A planted flaw runs under the profile whose rule it breaks.
    fn plant_flaw(&mut self, flaw: Flaw) {
        self.session.profile = flaw.profile();
    }

    /// The next timer: the deadline of a turn not yet ended (a running turn's fires there; a
    /// stopping turn's is where the invariants judge whether it ended in time,
    /// `quiescent_turns_terminal`), a paused output's resume, the moment speech counts as an
    /// interruption.
    fn next_deadline(&self) -> Option<Millis> {
        let s = &self.session;
        let resume = s.paused.as_ref().and_then(|(_, at)| *at);
        // Only a profile that times calls out has a child with a timeout (a spawn with one is
        // misuse elsewhere): the children are not walked each step for nothing.
        let timed = s.profile.times_out_calls();
        s.turns
            .iter()
            .filter(|t| !t.phase.is_terminal())
            .filter_map(|t| t.deadline_at)
            .chain(s.turns.iter().filter(|_| timed).flat_map(|t| {
                t.children
                    .iter()
                    .filter(|c| c.state == ChildState::Running)
                    .filter_map(|c| c.times_out_at)
            }))
            .chain(resume)
            .chain(s.interruption_due)
            .filter(|d| *d > s.now)
            .min()
    }

    /// No flaw is planted: the machine keeps every rule, so the invariants of its own state that
    /// a flaw would break hold, and the debug assertions check them.
    fn sound(&self) -> bool {
        self.plant.planted().is_none()
    }

    fn index(&self, turn: &str) -> Result<usize, Misuse> {
        self.session
            .turns
            .iter()
            .rposition(|t| t.id == turn)
            .ok_or_else(|| Misuse::UnknownTurn { turn: turn.into() })
    }

    fn child_index(&self, t: usize, child: &str) -> Result<usize, Misuse> {
        let turn = &self.session.turns[t];
        turn.children
            .iter()
            .position(|c| c.id == child)
            .ok_or_else(|| Misuse::UnknownChild {
                turn: turn.id.clone(),
                child: child.into(),
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
                turn: turn.into(),
                child: child.into(),
                expected,
                got: c.state.name(),
            })
        }
    }

    /// Checks an input against the state, changing nothing. The inputs about a child and the
    /// client's are checked beside where they are applied (`children`, `store`).
    fn validate(&self, kind: &InputKind) -> Result<(), Misuse> {
        let s = &self.session;
        match kind {
            InputKind::Accept {
                interruptible: false,
                ..
            } if !s.profile.has_uninterruptible_turns() => Err(Misuse::ProfileLacks {
                what: "uninterruptible turns",
                profile: s.profile.name(),
            }),
            InputKind::Accept {
                turn,
                generation,
                deadline_ms,
                budget,
                ..
            } => self.validate_accept(turn, *generation, *deadline_ms, *budget),
            InputKind::Spawn {
                timeout_ms: Some(_),
                ..
            } if !s.profile.times_out_calls() => Err(Misuse::ProfileLacks {
                what: "tool call timeouts",
                profile: s.profile.name(),
            }),
            InputKind::Spawn { .. }
            | InputKind::ChildCompleted { .. }
            | InputKind::ChildFailed { .. }
            | InputKind::Checkpoint { .. }
            | InputKind::CommitSent { .. }
            | InputKind::CommitAcked { .. }
            | InputKind::CommitFailed { .. } => self.validate_child_input(kind),
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
            InputKind::FramePlayed { .. } if s.playback.is_empty() => Err(Misuse::PlaybackEmpty),
            InputKind::FramePlayed { .. } if s.paused.is_some() => Err(Misuse::PlaybackPaused),
            InputKind::FramePlayed { frames }
                if *frames == 0 || *frames as usize > s.playback.len() =>
            {
                Err(Misuse::PlayedBeyondBuffer {
                    frames: *frames,
                    buffered: s.playback.len(),
                })
            }
            InputKind::ClientAck { .. }
            | InputKind::Disconnect
            | InputKind::Resume { .. }
            | InputKind::ClientReceive { .. } => self.validate_client_input(kind),
            InputKind::FramePlayed { .. }
            | InputKind::SpeechStarted { .. }
            | InputKind::SpeechStopped
            | InputKind::Transcribed
            | InputKind::Tick => Ok(()),
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
                interruptible,
            } => {
                self.accept(turn, *generation, *mode, *deadline_ms, *budget);
                // (Borrowed mutably only where it changes: an accept refused changes nothing.)
                let running = self.session.turn(turn).filter(|t| t.phase.is_running());
                if running.is_some_and(|t| t.interruptible != *interruptible) {
                    if let Some(t) = self.turn_mut(turn) {
                        t.interruptible = *interruptible;
                    }
                }
            }
            InputKind::Spawn {
                turn,
                child,
                kind,
                need_ms,
                timeout_ms,
            } => self.spawn(turn, child, kind, *need_ms, *timeout_ms),
            InputKind::ChildCompleted { turn, child } | InputKind::ChildFailed { turn, child } => {
                if !self.late_report(turn, child, IgnoredReport::ChildCompleted) {
                    self.set_child(turn, child, ChildState::Completed);
                    let answer = if matches!(kind, InputKind::ChildFailed { .. }) {
                        ToolAnswer::Error
                    } else {
                        ToolAnswer::Result
                    };
                    self.answer(turn, child, answer);
                    self.settle(turn);
                }
            }
            InputKind::Checkpoint {
                turn,
                child,
                phase,
                temporary_outputs,
            } => {
                if !self.late_report(turn, child, IgnoredReport::Checkpoint) {
                    self.checkpoint(turn, child, phase, *temporary_outputs);
                }
            }
            InputKind::Delta {
                turn,
                generation,
                seq,
                text,
                frames,
            } => self.delta(turn, *generation, *seq, text, *frames),
            InputKind::ModelDone { turn } => self.model_done(turn),
            InputKind::FramePlayed { frames } => self.frame_played(*frames),
            InputKind::Stop { turn, request_id } => self.stop(turn, request_id),
            InputKind::SpeechStarted { since, .. } => self.speech_started(*since),
            InputKind::SpeechStopped => self.speech_stopped(),
            InputKind::Transcribed => self.transcribed(),
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
                // An ack of nothing new leaves the client as it is (not borrowed mutably).
                if *seq > self.session.client.acked {
                    self.session.client.acked = *seq;
                }
            }
            InputKind::Disconnect => {
                self.session.client.connected = false;
                self.session.client.disconnected_at = Some(self.session.now);
                debug_assert!(
                    self.disconnect_time_known(),
                    "a disconnected client has its disconnect time"
                );
            }
            InputKind::Resume { after_seq } => self.resume(*after_seq),
            InputKind::ClientReceive { seq } => self.client_receive(*seq),
        }
    }

    fn turn_mut(&mut self, turn: &str) -> Option<&mut Turn> {
        self.session.turns.iter_mut().rev().find(|t| t.id == turn)
    }

    fn set_child(&mut self, turn: &str, child: &str, state: ChildState) {
        if let Some(c) = self
            .turn_mut(turn)
            .and_then(|t| t.children.iter_mut().find(|c| c.id == child))
        {
            c.state = state;
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
