//! Delivery: the gate a delta passes (or is dropped at), the playback buffer and the frames played
//! from it, and barge-in.

use super::TurnMachine;
use crate::turn::output::*;
use crate::turn::state::{ChildState, Frame, Phase};
use crate::turn::types::*;
use crate::turn::Flaw;
use crate::Millis;
use crate::Plant;

impl<P: Plant<Flaw>> TurnMachine<P> {
    /// The delivery gate.
    pub(super) fn delta(
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
        // Read first: a dropped delta changes no turn, so the turns are borrowed mutably (and,
        // shared with another state, copied) only for a delivered one.
        let Some(t) = self.session.turn(turn) else {
            return;
        };
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
        let turn = turn.into();
        if let Some(reason) = reason {
            self.emit(Output::LateDropped {
                turn,
                generation,
                seq,
                reason,
            });
            return;
        }
        if let Some(t) = self.turn_mut(&turn) {
            t.last_delivered_seq = seq;
        }
        let frame = Frame {
            turn: turn.clone(),
            generation,
            seq,
        };
        self.session.playback.push(frame, frames);
        self.emit(Output::Delivered {
            turn: turn.clone(),
            generation,
            seq,
        });
        self.persist(turn, text.clone(), false);
    }

    /// The speaker consumed `frames` frames from the head of the buffer: one `played` per run.
    pub(super) fn frame_played(&mut self, frames: u32) {
        let counts = self.session.profile.truncates_to_heard();
        for (frame, n) in self.session.playback.play(frames) {
            let turn = frame.turn.clone();
            // Nothing is played for a terminal turn (unless its audio plays on after it ended):
            // it holds no frames.
            debug_assert!(
                !self.sound()
                    || self.session.profile.playback_outlives_turn()
                    || self
                        .session
                        .turn(&turn)
                        .is_none_or(|t| !t.phase.is_terminal()),
                "a terminal turn holds nothing"
            );
            if counts {
                if let Some(t) = self.turn_mut(&turn) {
                    t.played = t.played.saturating_add(n);
                }
            }
            self.emit(Output::Played {
                turn: frame.turn,
                generation: frame.generation,
                seq: frame.seq,
                frames: n,
            });
            self.settle(&turn);
        }
    }

    /// Barge-in: the user speaks over an audio turn that is speaking (under a profile that
    /// pauses on speech, the speech is timed first: see [`Self::speech_began`]).
    pub(super) fn speech_started(&mut self, since: Option<Millis>) {
        if self.session.profile.playback_outlives_turn() {
            return self.speech_started_downstream();
        }
        if self.session.profile.pauses_on_speech() {
            return self.speech_began(since);
        }
        let Some((turn, generation)) = self.speaking() else {
            return;
        };
        self.barge_in(&turn, generation);
    }

    /// Speech began where output pauses on speech: with a reply in progress (a turn running),
    /// it counts as an interruption once it has lasted the session's `min_ms` — from `since`,
    /// where the speech counts from another time than now (the detector dates its start earlier
    /// than it said so: counted at once if that is past); meanwhile a paused output's resume
    /// waits for it to end.
    fn speech_began(&mut self, since: Option<Millis>) {
        let s = &mut self.session;
        let mut count_now = false;
        if !s.user_speaking {
            s.user_speaking = true;
            if s.turns.iter().any(|t| t.phase.is_running()) {
                let due = since.unwrap_or(s.now).saturating_add(s.interruption.min_ms);
                if due <= s.now {
                    count_now = true;
                } else {
                    s.interruption_due = Some(due);
                }
            }
        }
        if let Some((_, resume_at)) = s.paused.as_mut() {
            *resume_at = None;
        }
        if count_now {
            self.interruption_counted();
        }
    }

    /// The user stopped speaking: speech too short to count interrupts nothing, and a paused
    /// output's resume is armed.
    pub(super) fn speech_stopped(&mut self) {
        let s = &mut self.session;
        if !s.profile.pauses_on_speech() {
            return;
        }
        s.user_speaking = false;
        s.interruption_due = None;
        let timeout = s.interruption.false_timeout_ms.unwrap_or_default();
        let resume_at = s.now.saturating_add(timeout);
        if let Some((_, at)) = s.paused.as_mut() {
            *at = Some(resume_at);
        }
    }

    /// The speech going on has lasted long enough to count: the speaking turn's output pauses,
    /// or — where the session takes no interruption for a false one — is interrupted at once.
    pub(super) fn interruption_counted(&mut self) {
        self.session.interruption_due = None;
        let Some((turn, generation)) = self.speaking() else {
            return;
        };
        if self.session.interruption.pauses() {
            return self.pause(&turn);
        }
        let interruptible = self.session.turn(&turn).is_some_and(|t| t.interruptible);
        if interruptible {
            self.barge_in(&turn, generation);
        }
    }

    /// The audio turn speaking now (of the active generation, with output delivered or queued).
    /// Where calls outlive their generation, not one whose generation is done, all its audio
    /// played, that waits on its calls alone: it speaks no more (LiveKit's scheduler lets go of
    /// a speech once its generation is done, `_current_speech = None` after
    /// `_wait_for_generation()`, and audio activity interrupts the current speech alone).
    fn speaking(&self) -> Option<(TurnId, Generation)> {
        let s = &self.session;
        let apart = s.profile.calls_outlive_generation();
        s.turns
            .iter()
            .find(|t| {
                t.phase.is_running()
                    && t.mode == Mode::Audio
                    && Some(t.generation) == s.active_generation
                    && (t.last_delivered_seq > 0 || s.playback.holds(&t.id))
                    && !(apart && t.waits_on_calls_alone() && !s.playback.holds(&t.id))
            })
            .map(|t| (t.id.clone(), t.generation))
    }

    /// The interruption, decided: clear playback, fence the generation, cancel the turn — in
    /// that order, as the real systems do it.
    fn barge_in(&mut self, turn: &str, generation: Generation) {
        if !flawed!(self, KeepPlaybackOnBargeIn) {
            // An empty buffer is not borrowed mutably (nor, shared with another state, copied).
            let frames = if self.session.playback.is_empty() {
                0
            } else {
                self.session.playback.clear()
            };
            self.emit(Output::PlaybackCleared {
                turn: turn.into(),
                frames,
            });
        }
        self.fence(turn, generation);
        // The buffer is already cleared (and reported once): the cancel must not clear it again.
        self.cancel_with(turn, Cause::BargeIn, false);
    }

    /// Speech over a speaking turn: its output pauses (said once), unless the turn is
    /// uninterruptible. It pauses only while the user speaks (the speech counted), so its resume
    /// is not armed yet: the end of the speech arms it.
    fn pause(&mut self, turn: &str) {
        let uninterruptible = self.session.turn(turn).is_some_and(|t| !t.interruptible);
        if uninterruptible && !flawed!(self, UninterruptibleIsPaused) {
            return;
        }
        debug_assert!(
            self.session.user_speaking,
            "a pause comes from counted speech"
        );
        let again = self.session.paused.as_ref().is_some_and(|(p, _)| p == turn);
        self.session.paused = Some((turn.into(), None));
        if !again {
            self.emit(Output::PlaybackPaused { turn: turn.into() });
        }
    }

    /// A final transcript: the paused output's interruption is confirmed. Where calls outlive
    /// their generation and speech pauses output (LiveKit), the user's turn also interrupts each reply that waits on its calls
    /// alone and allows it (LiveKit's `_user_turn_completed_impl` interrupts its
    /// `_background_speeches` first): fenced and stopped, its calls asked to stop.
    pub(super) fn transcribed(&mut self) {
        let profile = self.session.profile;
        if profile.calls_outlive_generation() && profile.pauses_on_speech() {
            let waiting: Vec<(TurnId, Generation)> = self
                .session
                .turns
                .iter()
                .filter(|t| {
                    t.phase.is_running()
                        && t.interruptible
                        && t.waits_on_calls_alone()
                        && !self.session.playback.holds(&t.id)
                })
                .map(|t| (t.id.clone(), t.generation))
                .collect();
            for (turn, generation) in waiting {
                self.fence(&turn, generation);
                self.cancel_with(&turn, Cause::BargeIn, false);
            }
        }
        let Some((turn, _)) = self.session.paused.clone() else {
            return;
        };
        let Some(generation) = self
            .session
            .turn(&turn)
            .filter(|t| t.phase.is_running())
            .map(|t| t.generation)
        else {
            return;
        };
        self.barge_in(&turn, generation);
    }

    /// No transcript came in time: the pause was a false interruption, and the output resumes
    /// where it stopped.
    pub(super) fn resume_if_due(&mut self) {
        let now = self.session.now;
        let due = self
            .session
            .paused
            .as_ref()
            .and_then(|(_, at)| *at)
            .is_some_and(|at| at <= now);
        if !due || flawed!(self, PauseNeverDecided) {
            return;
        }
        let Some((turn, _)) = self.session.paused.take() else {
            return;
        };
        if flawed!(self, ResumeDropsBuffered) {
            let frames = self.session.playback.remove_turn(&turn);
            if frames > 0 {
                self.emit(Output::PlaybackCleared {
                    turn: turn.clone(),
                    frames,
                });
            }
        }
        self.emit(Output::PlaybackResumed { turn });
    }

    /// Barge-in where audio plays on downstream after its turn ended: speech clears everything
    /// still to play, whoever's it is, truncates each turn it cut to what was heard, fences the
    /// newest generation it cut, and cancels each running turn (which need not have spoken yet).
    /// An uninterruptible turn (`pipecat`) is left alone: its audio plays on, it runs on.
    fn speech_started_downstream(&mut self) {
        let ignore_ended = flawed!(self, BargeInIgnoredAfterDone);
        let s = &self.session;
        let mut cut: Vec<(TurnId, Generation)> = Vec::new();
        for t in s.turns.iter().filter(|t| t.interruptible) {
            let audible = s.playback.holds(&t.id) && !(ignore_ended && t.phase.is_terminal());
            if audible || t.phase.is_running() {
                cut.push((t.id.clone(), t.generation));
            }
        }
        let Some(newest) = cut.iter().max_by_key(|(_, g)| *g).cloned() else {
            return;
        };
        let truncate = !flawed!(self, NoTruncateOnBargeIn);
        for (turn, _) in &cut {
            self.clear_turn_audio(turn, truncate);
        }
        self.fence(&newest.0, newest.1);
        // The running turn it cut; where calls outlive their generation, also those waiting on
        // their calls beside it, each fenced as the newest is (nothing of it reaches the user any
        // more, and it is stopped, not left running past its deadline).
        let every = self.session.profile.calls_outlive_generation();
        for (turn, generation) in &cut {
            if self
                .session
                .turn(turn)
                .is_some_and(|t| t.phase.is_running())
            {
                if every && (turn, generation) != (&newest.0, &newest.1) {
                    self.fence(turn, *generation);
                }
                self.cancel_with(turn, Cause::BargeIn, false);
                if !every {
                    break;
                }
            }
        }
    }

    /// Fences `generation` of `turn` off: nothing of it reaches the user any more.
    fn fence(&mut self, turn: &str, generation: Generation) {
        let s = &mut self.session;
        s.active_generation = Some(
            generation
                .saturating_add(1)
                .max(s.active_generation.unwrap_or(0)),
        );
        debug_assert!(
            self.generations_in_order(),
            "the session's generations are in order"
        );
        self.emit(Output::GenerationFenced {
            turn: turn.into(),
            generation,
        });
    }

    /// Removes a turn's frames from the playback buffer. Reported when there were frames, or
    /// when the turn has a TTS child whose buffer this is.
    pub(super) fn clear_playback_of(&mut self, turn: &str) {
        let has_tts = self.session.turn(turn).is_some_and(|t| {
            t.children
                .iter()
                .any(|c| c.kind == ChildKind::Tts && c.state == ChildState::Running)
        });
        let frames = self.clear_turn_audio(turn, true);
        if frames == 0 && has_tts {
            self.emit(Output::PlaybackCleared {
                turn: turn.into(),
                frames,
            });
        }
    }

    /// Removes a turn's frames, reporting them when there were any; under a profile that
    /// truncates to what was heard (and when `truncate`), the turn is then truncated to the
    /// frames it played. How many frames were removed.
    fn clear_turn_audio(&mut self, turn: &str, truncate: bool) -> u32 {
        if !self.session.playback.holds(turn) {
            return 0;
        }
        let frames = self.session.playback.remove_turn(turn);
        if frames == 0 {
            return 0;
        }
        self.emit(Output::PlaybackCleared {
            turn: turn.into(),
            frames,
        });
        let at_delivered = flawed!(self, TruncateAtDelivered);
        let t = self.session.turn(turn);
        if let Some(t) = t.filter(|_| truncate && self.session.profile.truncates_to_heard()) {
            let heard = if at_delivered {
                t.played.saturating_add(frames)
            } else {
                t.played
            };
            self.emit(Output::Truncated {
                turn: turn.into(),
                generation: t.generation,
                heard,
            });
        }
        frames
    }
}
