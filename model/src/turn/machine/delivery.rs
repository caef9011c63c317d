//! Delivery: the gate a delta passes (or is dropped at), the playback buffer and the frames played
//! from it, and barge-in.

use super::TurnMachine;
use crate::turn::state::{ChildState, Frame, Phase};
use crate::turn::types::*;
use crate::turn::Flaw;
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

    pub(super) fn frame_played(&mut self) {
        if let Some(frame) = self.session.playback.pop_front() {
            let turn = frame.turn.clone();
            // Nothing is played for a terminal turn: it holds no frames.
            debug_assert!(
                !self.sound()
                    || self
                        .session
                        .turn(&turn)
                        .is_none_or(|t| !t.phase.is_terminal()),
                "a terminal turn holds nothing"
            );
            self.emit(Output::Played {
                turn: frame.turn,
                generation: frame.generation,
                seq: frame.seq,
            });
            self.settle(&turn);
        }
    }

    /// Barge-in: the user speaks over an audio turn that is speaking.
    pub(super) fn speech_started(&mut self) {
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
        debug_assert!(
            self.generations_in_order(),
            "the session's generations are in order"
        );
        self.emit(Output::GenerationFenced {
            turn: turn.clone(),
            generation,
        });
        // The buffer is already cleared (and reported once): the cancel must not clear it again.
        self.cancel_with(&turn, Cause::BargeIn, false);
    }

    /// Removes a turn's frames from the playback buffer. Reported when there were frames, or
    /// when the turn has a TTS child whose buffer this is.
    pub(super) fn clear_playback_of(&mut self, turn: &str) {
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
}
