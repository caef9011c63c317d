//! The turn manager's own state and rules: what one session's turn is doing, its playback queue,
//! its tool calls, its timers — kept by the adapter itself, not by the model. Every method runs
//! under the adapter's lock; each records the input it stands for and what it tells the world,
//! which the checker then holds against the model.

use std::collections::VecDeque;

use turnfence_model::turn::{
    Cause, DropReason, FailCode, Input, InputKind, Output, Profile, StopAnswer, Terminal,
    TurnMachine,
};

use crate::adapter::record::Record;

mod calls;

/// The turn every session runs.
pub const TURN: &str = "t";
/// Its generation.
pub const GENERATION: u64 = 1;
/// How long a paused output waits, after the user stopped speaking, for a transcript before it
/// resumes (the stack's default).
pub const RESUME_AFTER_MS: u64 = 2_000;
/// How long speech lasts before it counts as an interruption (the stack's default).
pub const INTERRUPTION_AFTER_MS: u64 = 500;
/// The checkpoint a tool awaiting its result is cancelled at.
pub const AWAITING_RESULT: &str = "awaiting_result";

/// The rules of the stack the adapter stands for, read from its profile once.
#[derive(Clone, Copy, Debug)]
pub(super) struct Rules {
    /// The turn ends when its generation does; its audio plays on downstream.
    audio_outlives_turn: bool,
    /// An interrupted turn is truncated to what was heard.
    truncates: bool,
    /// Speech pauses the output until a transcript confirms it or a timer resumes it.
    pauses_on_speech: bool,
    /// A reply waiting on its calls alone, its generation done, holds the session no longer:
    /// it speaks no more, and the user's turn interrupts it.
    calls_outlive_speech: bool,
    /// A stop or a barge-in lets running tool calls finish.
    tools_run_on: bool,
    /// Every tool call is answered once.
    answers_calls: bool,
}

impl Rules {
    pub(super) fn of(profile: Profile) -> Rules {
        // The adapter's calls are all cancellable (registered as a stack registers them by
        // default): an interruption lets one run on only where the profile lets every call.
        Rules {
            audio_outlives_turn: profile.playback_outlives_turn(),
            truncates: profile.truncates_to_heard(),
            pauses_on_speech: profile.pauses_on_speech(),
            calls_outlive_speech: profile.calls_outlive_generation() && profile.pauses_on_speech(),
            tools_run_on: profile.tool_runs_through_interruption(true),
            answers_calls: profile.answers_tool_calls(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    Running,
    Stopping(Cause),
    Ended(Terminal),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CallState {
    NotStarted,
    Running,
    Completed,
    Cancelled,
}

/// One tool call.
#[derive(Clone, Debug)]
pub(super) struct Call {
    id: String,
    pub(super) state: CallState,
    /// Asked to stop at its next checkpoint.
    cancel_requested: bool,
    /// Awaiting its result: a cancellation is delivered to it there, at once.
    parked: bool,
}

/// Everything the threads share.
pub(super) struct Manager {
    rules: Rules,
    clock: u64,
    pub(super) phase: Phase,
    last_seq: u64,
    model_done: bool,
    /// Frames of the turn played so far.
    pub(super) played: u32,
    deadline_at: Option<u64>,
    active_generation: u64,
    /// Frames waiting for the speaker: (delta seq, frames left).
    playback: VecDeque<(u64, u32)>,
    /// The output is paused.
    pub(super) paused: bool,
    /// When the paused output resumes, unless a transcript confirms the interruption first:
    /// armed once the user stopped speaking.
    pub(super) resume_at: Option<u64>,
    /// The user is speaking.
    user_speaking: bool,
    /// When the speech going on counts as an interruption.
    interruption_at: Option<u64>,
    calls: Vec<Call>,
    /// Events persisted for the client so far.
    persisted: u64,
    record: Record<TurnMachine>,
}

impl Manager {
    /// A session following `profile`, its turn accepted at 0 (with a deadline if given).
    pub(super) fn open(profile: Profile, deadline_ms: Option<u64>) -> Manager {
        let mut m = Manager {
            rules: Rules::of(profile),
            clock: 0,
            phase: Phase::Running,
            last_seq: 0,
            model_done: false,
            played: 0,
            deadline_at: deadline_ms,
            active_generation: GENERATION,
            playback: VecDeque::new(),
            paused: false,
            resume_at: None,
            user_speaking: false,
            interruption_at: None,
            calls: Vec::new(),
            persisted: 0,
            record: Record::default(),
        };
        m.input(InputKind::Accept {
            turn: TURN.into(),
            generation: GENERATION,
            mode: turnfence_model::turn::Mode::Audio,
            deadline_ms,
            budget: None,
            interruptible: true,
        });
        m
    }

    pub(super) fn record(&self) -> &Record<TurnMachine> {
        &self.record
    }

    pub(super) fn input(&mut self, kind: InputKind) {
        self.record.input(Input::new(self.clock, kind));
    }

    pub(super) fn tell(&mut self, output: Output) {
        self.record.told(output);
    }

    pub(super) fn buffered(&self) -> u32 {
        self.playback.iter().map(|(_, n)| n).sum()
    }

    pub(super) fn head(&self) -> Option<u64> {
        self.playback.front().map(|(seq, _)| *seq)
    }

    /// Why a delta would be dropped at the gate now, if it would.
    pub(super) fn gate(&self, seq: u64) -> Option<DropReason> {
        if GENERATION != self.active_generation {
            return Some(DropReason::StaleGeneration);
        }
        match self.phase {
            Phase::Ended(_) => Some(DropReason::Terminal),
            Phase::Stopping(_) => Some(DropReason::CancelRequested),
            Phase::Running if seq != self.last_seq + 1 => Some(DropReason::OutOfOrder),
            Phase::Running => None,
        }
    }

    /// The model stream hands over delta `seq` with `frames` frames; `pass` says whether the gate
    /// lets it through (decided now, or earlier by a flawed caller).
    pub(super) fn delta(&mut self, seq: u64, frames: u32, pass: Result<(), DropReason>) {
        self.input(InputKind::Delta {
            turn: TURN.into(),
            generation: GENERATION,
            seq,
            text: None,
            frames,
        });
        if let Err(reason) = pass {
            return self.tell(Output::LateDropped {
                turn: TURN.into(),
                generation: GENERATION,
                seq,
                reason,
            });
        }
        self.last_seq = seq;
        if frames > 0 {
            self.playback.push_back((seq, frames));
        }
        self.tell(Output::Delivered {
            turn: TURN.into(),
            generation: GENERATION,
            seq,
        });
        self.persist(false);
    }

    fn persist(&mut self, terminal: bool) {
        self.persisted += 1;
        let seq = self.persisted;
        self.tell(Output::Persisted {
            turn: TURN.into(),
            seq,
            text: None,
            terminal,
        });
    }

    pub(super) fn model_done(&mut self) {
        self.input(InputKind::ModelDone { turn: TURN.into() });
        self.model_done = true;
        self.settle();
    }

    /// The speaker plays one frame of delta `seq` (the head, or what a flawed caller peeked).
    /// Whether the speaker may take one now is the caller's to ask.
    pub(super) fn play(&mut self, seq: u64) {
        self.input(InputKind::FRAME_PLAYED);
        if let Some((_, n)) = self.playback.front_mut() {
            *n -= 1;
            if *n == 0 {
                self.playback.pop_front();
            }
        }
        if self.rules.truncates {
            self.played += 1;
        }
        self.tell(Output::Played {
            turn: TURN.into(),
            generation: GENERATION,
            seq,
            frames: 1,
        });
        self.settle();
    }

    /// The speaker may take a frame: there is one, and the output is not paused.
    pub(super) fn may_play(&self) -> bool {
        !self.playback.is_empty() && !self.paused
    }

    /// What a stop is answered now.
    pub(super) fn stop_answer(&self) -> StopAnswer {
        match self.phase {
            Phase::Running => StopAnswer::Requested,
            Phase::Stopping(_) => StopAnswer::AlreadyRequested,
            Phase::Ended(state) => StopAnswer::AlreadyTerminal { state },
        }
    }

    /// The client's stop, answered `answer`; a `requested` one cancels the turn if it runs.
    pub(super) fn stop(&mut self, request_id: &str, answer: StopAnswer) {
        self.input(InputKind::Stop {
            turn: TURN.into(),
            request_id: request_id.into(),
        });
        self.tell(Output::StopAnswered {
            turn: TURN.into(),
            request_id: request_id.into(),
            answer,
        });
        if self.phase == Phase::Running {
            self.cancel(Cause::Stop, true);
        }
    }

    /// Moves the turn to stopping: its audio cleared (unless already), its pause over, its
    /// tool calls asked to stop (unless they run on through an interruption).
    fn cancel(&mut self, cause: Cause, clear_audio: bool) {
        if clear_audio {
            self.clear_audio();
        }
        self.unpause();
        let tools_run_on = self.rules.tools_run_on && cause != Cause::Deadline;
        self.phase = Phase::Stopping(cause);
        if !tools_run_on {
            for i in 0..self.calls.len() {
                if self.calls[i].state == CallState::Running {
                    self.calls[i].cancel_requested = true;
                    let child = self.calls[i].id.clone();
                    self.tell(Output::ChildCancelRequested {
                        turn: TURN.into(),
                        child: child.into(),
                    });
                }
            }
        }
        self.settle();
    }

    /// Clears the turn's frames still to play; truncates the turn to what was heard where the
    /// stack does. How many frames were cleared.
    fn clear_audio(&mut self) -> u32 {
        let frames = self.buffered();
        self.playback.clear();
        if frames > 0 {
            self.tell(Output::PlaybackCleared {
                turn: TURN.into(),
                frames,
            });
            if self.rules.truncates {
                self.truncated(self.played);
            }
        }
        frames
    }

    pub(super) fn truncated(&mut self, heard: u32) {
        self.tell(Output::Truncated {
            turn: TURN.into(),
            generation: GENERATION,
            heard,
        });
    }

    /// The VAD hears speech: an interruption of the turn speaking now — decided at once, or
    /// (where output pauses on speech) pending a transcript.
    pub(super) fn speech(&mut self) {
        self.input(InputKind::SpeechStarted {
            confidence: 0.9,
            since: None,
        });
        if self.rules.audio_outlives_turn {
            if self.playback.is_empty() && self.phase != Phase::Running {
                return;
            }
            self.clear_audio();
            return self.interrupt_cleared();
        }
        if self.rules.pauses_on_speech {
            // Timed first: it interrupts once it has lasted long enough; meanwhile nothing
            // resumes.
            if !self.user_speaking {
                self.user_speaking = true;
                // Timed only while a reply is in progress.
                if self.phase == Phase::Running {
                    self.interruption_at = Some(self.clock + INTERRUPTION_AFTER_MS);
                }
            }
            self.resume_at = None;
            return;
        }
        if self.speaking() {
            self.barge_in();
        }
    }

    /// The turn is speaking: running, its generation active, with output out or queued — and,
    /// where calls outlive the speech, not done generating with all its audio played (it waits
    /// on its calls alone).
    fn speaking(&self) -> bool {
        self.phase == Phase::Running
            && self.active_generation == GENERATION
            && (self.last_seq > 0 || !self.playback.is_empty())
            && !self.waits_on_calls_alone()
    }

    /// Where calls outlive the speech: the generation is done and all its audio played, only
    /// calls keep the turn running.
    fn waits_on_calls_alone(&self) -> bool {
        self.rules.calls_outlive_speech && self.model_done && self.playback.is_empty()
    }

    /// The VAD hears the user stop: speech too short to count interrupts nothing; a paused
    /// output's resume is armed.
    pub(super) fn speech_stopped(&mut self) {
        self.input(InputKind::SpeechStopped);
        if !self.rules.pauses_on_speech {
            return;
        }
        self.user_speaking = false;
        self.interruption_at = None;
        if self.paused {
            self.resume_at = Some(self.clock + RESUME_AFTER_MS);
        }
    }

    /// The speech has lasted long enough to count: the speaking turn's output pauses (said once).
    fn interruption_counted(&mut self) {
        self.interruption_at = None;
        if !self.speaking() {
            return;
        }
        // Counted while the user speaks: the resume waits for them to stop.
        if !self.paused {
            self.paused = true;
            self.tell(Output::PlaybackPaused { turn: TURN.into() });
        }
    }

    fn unpause(&mut self) {
        self.paused = false;
        self.resume_at = None;
    }

    /// The VAD's speech under a stack where audio outlives its turn, with the frames to play
    /// and the count heard read by a flawed caller beforehand: cleared and truncated as read.
    pub(super) fn speech_as_read(&mut self, buffered: u32, heard: u32) {
        self.input(InputKind::SpeechStarted {
            confidence: 0.9,
            since: None,
        });
        if buffered == 0 && self.phase != Phase::Running {
            return;
        }
        self.playback.clear();
        if buffered > 0 {
            self.tell(Output::PlaybackCleared {
                turn: TURN.into(),
                frames: buffered,
            });
            self.truncated(heard);
        }
        self.interrupt_cleared();
    }

    /// After the audio is cleared: the generation fenced, the turn cancelled if it runs.
    fn interrupt_cleared(&mut self) {
        self.fence();
        if self.phase == Phase::Running {
            self.cancel(Cause::BargeIn, false);
        }
    }

    /// The interruption, decided: every frame cleared (said even when none were left), the
    /// generation fenced, the turn cancelled.
    fn barge_in(&mut self) {
        let frames = self.buffered();
        self.playback.clear();
        self.tell(Output::PlaybackCleared {
            turn: TURN.into(),
            frames,
        });
        self.fence();
        self.cancel(Cause::BargeIn, false);
    }

    fn fence(&mut self) {
        self.active_generation = self.active_generation.max(GENERATION + 1);
        self.tell(Output::GenerationFenced {
            turn: TURN.into(),
            generation: GENERATION,
        });
    }

    /// A final transcript: a paused output's interruption is confirmed; a turn waiting on its
    /// calls alone is interrupted by the user's turn (fenced and stopped).
    pub(super) fn transcribed(&mut self) {
        self.input(InputKind::Transcribed);
        if self.phase == Phase::Running && self.waits_on_calls_alone() {
            self.fence();
            self.cancel(Cause::BargeIn, false);
        }
        if self.paused && self.phase == Phase::Running {
            self.barge_in();
        }
    }

    /// The next timer: speech counting as an interruption, a paused output's resume, the
    /// running turn's deadline.
    pub(super) fn next_timer(&self) -> Option<u64> {
        let deadline = self.deadline_at.filter(|_| self.phase == Phase::Running);
        [self.interruption_at, self.resume_at, deadline]
            .into_iter()
            .flatten()
            .min()
    }

    /// Time passes to `at`, the next timer (never further), and the timers due then fire.
    pub(super) fn tick(&mut self, at: u64) {
        self.clock = self.clock.max(at);
        self.input(InputKind::Tick);
        let now = self.clock;
        let deadline = self.deadline_at.filter(|_| self.phase == Phase::Running);
        // Time only ever passes to the next timer, so what is due now is due at once: the
        // deadline first (it ends the turn, and its pause with it: nothing is left to pause or
        // resume), then speech counting as an interruption, then a resume.
        if deadline.is_some_and(|d| d <= now) {
            self.tell(Output::DeadlineExceeded { turn: TURN.into() });
            self.cancel(Cause::Deadline, true);
        }
        if self.interruption_at.is_some_and(|at| at <= now) {
            self.interruption_counted();
        }
        if self.resume_at.is_some_and(|at| at <= now) {
            self.resume();
        }
    }

    /// Time passes to `at`, where a flawed timer read that the paused output resumes: it
    /// resumes, whatever happened since.
    pub(super) fn tick_resuming(&mut self, at: u64) {
        self.clock = self.clock.max(at);
        self.input(InputKind::Tick);
        self.resume();
    }

    /// The paused output resumes where it stopped.
    pub(super) fn resume(&mut self) {
        self.unpause();
        self.tell(Output::PlaybackResumed { turn: TURN.into() });
    }

    /// Ends the turn if nothing is left to wait for: no call running and (unless its audio
    /// outlives it) nothing left to play.
    pub(super) fn settle(&mut self) {
        let waiting = self.calls.iter().any(|c| c.state == CallState::Running);
        let buffered = !self.rules.audio_outlives_turn && !self.playback.is_empty();
        let state = match self.phase {
            Phase::Running if self.model_done && !waiting && !buffered => Terminal::Completed,
            Phase::Stopping(Cause::Deadline) if !waiting => Terminal::Failed {
                code: FailCode::DeadlineExceeded,
            },
            Phase::Stopping(_) if !waiting => Terminal::Cancelled,
            _ => return,
        };
        self.phase = Phase::Ended(state);
        self.unpause();
        self.tell(Output::Terminal {
            turn: TURN.into(),
            state,
        });
        self.persist(true);
    }
}
