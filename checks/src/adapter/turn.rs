//! The turn manager over threads: an implementation of its own — its state, its flags, its
//! playback queue, its tool calls and timers (`turn/manager.rs`) — driven from the threads a production
//! voice agent has: the client, the VAD, the model stream, the speaker, the tools and a timer. It
//! never asks the model what to do; it records what each thread did (as the turn machine's
//! inputs) and what it told the world (as observed outputs), and the checker holds that record
//! against the model. The correct variant decides each action under one acquisition of the lock;
//! each planted [`Variant`] decides one of them on what it read in an earlier acquisition, as real
//! adapters get wrong, and loom finds the interleaving where that reading went stale.
//!
//! A session follows a [`Profile`]: the lab's rules or a real stack's, each rule read from the
//! profile (audio outliving its response, truncation to what was heard, output paused on speech
//! until a transcript or a timer decides, tool calls that run through an interruption and are
//! answered once).

use turnfence_model::turn::{Output, Profile, StopAnswer, TurnMachine};

use super::record;
use crate::sync::{Arc, AtomicBool, Mutex, MutexGuard, Ordering};
use crate::trace::Verdict;

mod manager;

use manager::{CallState, Manager, Phase};
pub use manager::{AWAITING_RESULT, INTERRUPTION_AFTER_MS, RESUME_AFTER_MS, TURN};

/// How the adapter decides: correctly (each decision and its action under one acquisition of the
/// lock), or with one decision taken on an earlier reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    Correct,
    /// The model stream checks its delta may pass, releases the lock, then delivers it.
    DeliverAfterStaleCheck,
    /// The speaker peeks at the head frame, releases the lock, then plays what it peeked.
    PlayPeekedFrame,
    /// A stop checks an "already stopped" flag, then sets it: two stops can both see it unset.
    StopFlagCheckThenSet,
    /// A tool reads whether its turn runs before it is registered, and runs on that reading.
    CancelFlagReadBeforeRegistering,
    /// A tool's result reads whether its call was cancelled, releases the lock, then answers it.
    ResultAfterStaleCancelCheck,
    /// The resume timer reads that the output is paused, releases the lock, then resumes it.
    ResumeFromStaleRead,
    /// The VAD reads the frames left and the count heard, releases the lock, then clears and
    /// truncates by what it read.
    TruncateFromStaleCount,
}

/// What happened, in lock order: an input and what the adapter told the world it did.
pub type Observation = record::Observation<TurnMachine>;

/// The output kinds the adapter tells in full: one the model gives and the record lacks is a
/// finding, not filled in.
pub const TOLD_IN_FULL: &[&str] = &[
    "delivered",
    "late_dropped",
    "played",
    "playback_paused",
    "playback_resumed",
    "tool_answered",
    "truncated",
    "playback_cleared",
    "child_cancel_requested",
    "child_cancelled",
    "child_started",
    "tool_not_started",
    "report_ignored",
    "stop_answered",
    "generation_fenced",
    "deadline_exceeded",
    "persisted",
    "terminal",
];

/// The turn manager, shared by the threads.
#[derive(Clone)]
pub struct TurnAdapter {
    inner: Arc<Mutex<Manager>>,
    stopped: Arc<AtomicBool>,
    variant: Variant,
    profile: Profile,
}

impl TurnAdapter {
    /// A lab session with its audio turn accepted, generation 1.
    pub fn new(variant: Variant) -> TurnAdapter {
        TurnAdapter::open(variant, Profile::Lab, None)
    }

    /// A session following `profile`, its audio turn accepted at 0 with `deadline_ms`.
    pub fn open(variant: Variant, profile: Profile, deadline_ms: Option<u64>) -> TurnAdapter {
        TurnAdapter {
            inner: Arc::new(Mutex::new(Manager::open(profile, deadline_ms))),
            stopped: Arc::new(AtomicBool::new(false)),
            variant,
            profile,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Manager> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The model stream hands over delta `seq` with one audio frame.
    pub fn delta(&self, seq: u64) {
        self.delta_frames(seq, 1);
    }

    /// The model stream hands over delta `seq` with `frames` audio frames.
    pub fn delta_frames(&self, seq: u64, frames: u32) {
        if self.variant == Variant::DeliverAfterStaleCheck {
            let pass = self.lock().gate(seq);
            return self.lock().delta(seq, frames, pass.map_or(Ok(()), Err));
        }
        let mut m = self.lock();
        let pass = m.gate(seq).map_or(Ok(()), Err);
        m.delta(seq, frames, pass);
    }

    /// The model stream ends the response.
    pub fn model_done(&self) {
        self.lock().model_done();
    }

    /// The client asks to stop; returns the answer it was given.
    pub fn stop(&self, request_id: &str) -> StopAnswer {
        if self.variant == Variant::StopFlagCheckThenSet && !self.stopped.load(Ordering::SeqCst) {
            self.stopped.store(true, Ordering::SeqCst);
            let mut m = self.lock();
            m.stop(request_id, StopAnswer::Requested);
            m.cancel_parked();
            return StopAnswer::Requested;
        }
        let mut m = self.lock();
        let answer = m.stop_answer();
        m.stop(request_id, answer);
        m.cancel_parked();
        answer
    }

    /// The VAD hears the user speak.
    pub fn speech(&self) {
        if self.variant == Variant::TruncateFromStaleCount {
            let (buffered, heard) = {
                let m = self.lock();
                (m.buffered(), m.played)
            };
            let mut m = self.lock();
            m.speech_as_read(buffered, heard);
            return m.cancel_parked();
        }
        let mut m = self.lock();
        m.speech();
        m.cancel_parked();
    }

    /// The VAD hears the user stop speaking.
    pub fn speech_stopped(&self) {
        self.lock().speech_stopped();
    }

    /// The VAD's transcript of the speech: a paused output's interruption is confirmed.
    pub fn transcribed(&self) {
        let mut m = self.lock();
        m.transcribed();
        m.cancel_parked();
    }

    /// The speaker plays the head frame, if there is one and the output is not paused. Whether
    /// it played one.
    pub fn play(&self) -> bool {
        if self.variant == Variant::PlayPeekedFrame {
            let Some(seq) = self.lock().head() else {
                return false;
            };
            self.lock().play(seq);
            return true;
        }
        let mut m = self.lock();
        match m.head().filter(|_| m.may_play()) {
            Some(seq) => {
                m.play(seq);
                true
            }
            None => false,
        }
    }

    /// The timer thread: fires the next timer due (a paused output's resume, the turn's
    /// deadline), time passing to it. Whether one was due.
    pub fn fire_timer(&self) -> bool {
        if self.variant == Variant::ResumeFromStaleRead {
            let Some(at) = self.lock().resume_at else {
                return false;
            };
            let mut m = self.lock();
            m.tick_resuming(at);
            return true;
        }
        let mut m = self.lock();
        let Some(at) = m.next_timer() else {
            return false;
        };
        m.tick(at);
        m.cancel_parked();
        true
    }

    /// A tool call `child` asks to start. Whether it started.
    pub fn spawn_tool(&self, child: &str) -> bool {
        if self.variant == Variant::CancelFlagReadBeforeRegistering {
            let runs = self.lock().phase == Phase::Running;
            let mut m = self.lock();
            let may = m.may_start();
            return m.spawn(child, if runs { Ok(()) } else { may });
        }
        let mut m = self.lock();
        let may = m.may_start();
        m.spawn(child, may)
    }

    /// A tool call is spawned and, if it started, runs its body to completion.
    pub fn tool(&self, child: &str) {
        if self.spawn_tool(child) {
            self.result(child, true);
        }
    }

    /// The tool call reaches a checkpoint (where a cancel is observed).
    pub fn checkpoint(&self, child: &str) {
        self.lock().checkpoint(child, "p");
    }

    /// The tool call awaits its result: a cancellation is delivered to it there.
    pub fn park(&self, child: &str) {
        let mut m = self.lock();
        m.park(child);
        m.cancel_parked();
    }

    /// The tool call's result (`ok`) or error comes in. Nothing for a call that never started
    /// or already finished.
    pub fn result(&self, child: &str, ok: bool) {
        let state = |m: &Manager| m.call(child).map(|c| c.state);
        if self.variant == Variant::ResultAfterStaleCancelCheck {
            let read = state(&self.lock());
            if !matches!(read, Some(CallState::Running | CallState::Cancelled)) {
                return;
            }
            let cancelled = read == Some(CallState::Cancelled);
            return self.lock().result(child, ok, cancelled);
        }
        let mut m = self.lock();
        match state(&m) {
            Some(CallState::Running) => m.result(child, ok, false),
            Some(CallState::Cancelled) => m.result(child, ok, true),
            _ => {}
        }
    }

    /// What the threads did and were told, in lock order.
    pub fn record(&self) -> Vec<Observation> {
        self.lock().record().observations().to_vec()
    }

    /// Every output of one kind the adapter told, in lock order.
    pub fn told(&self, kind: fn(&Output) -> bool) -> Vec<Output> {
        let m = self.lock();
        let observations = m.record().observations();
        observations
            .iter()
            .flat_map(|o| o.told.iter())
            .filter(|o| kind(o))
            .cloned()
            .collect()
    }

    /// The record held against the model under the session's profile.
    pub fn conformance(&self) -> Verdict {
        conformance(&self.record(), self.profile)
    }
}

/// Holds a record against the model following `profile`: the inputs replayed, what the adapter
/// told held against what the model does (every kind in [`TOLD_IN_FULL`] told in full), the
/// invariants over what happened.
pub fn conformance(record: &[Observation], profile: Profile) -> Verdict {
    record::verdict_as(record, TurnMachine::with_profile(profile), TOLD_IN_FULL)
}
