//! The monitor's account of what real voice stacks add (`openai-realtime`): each turn's audio —
//! delivered, played, cleared — and its truncation to what was heard; one active turn until it
//! ends; a stop acting on the turn it names only.

use super::memory::{Moment, Monitor};
use super::Invariant;
use crate::said;
use crate::said::Noun;
use crate::turn::output::*;
use crate::turn::types::*;

impl Monitor {
    /// Whether this monitor keeps the audio account (the profile truncates to what was heard, or
    /// `truncated_to_heard` alone was asked for).
    pub(super) fn counts_audio(&self) -> bool {
        self.judges(Invariant::TruncatedToHeard)
    }

    /// Speech started: the audio still to play now must be cleared in this step.
    pub(super) fn on_speech(&mut self) {
        if !self.counts_audio() {
            return;
        }
        self.expect.speech = self
            .audio
            .iter()
            .filter(|(_, a)| a.waiting() > 0)
            .map(|(turn, a)| (turn.clone(), a.waiting()))
            .collect();
    }

    /// A delta was delivered: its frames join the turn's audio.
    pub(super) fn count_delivered(&mut self, turn: &str) {
        if self.counts_audio() && self.expect.delta_frames > 0 {
            let frames = self.expect.delta_frames;
            let a = self.audio.entry(turn.into()).or_default();
            a.delivered = a.delivered.saturating_add(frames);
        }
    }

    pub(super) fn count_played(&mut self, turn: &str, frames: u32) {
        if self.counts_audio() {
            let a = self.audio.entry(turn.into()).or_default();
            a.played = a.played.saturating_add(frames);
        }
    }

    pub(super) fn count_cleared(&mut self, turn: &str, frames: u32) {
        if self.counts_audio() && frames > 0 {
            let a = self.audio.entry(turn.into()).or_default();
            a.cleared = a.cleared.saturating_add(frames);
            self.expect.cleared.push(turn.into());
        }
    }

    /// The turn was truncated to `heard` frames: exactly what it played, never past what it
    /// delivered.
    pub(super) fn on_truncated(&mut self, turn: &str, heard: u32) {
        if !self.counts_audio() {
            return;
        }
        self.expect.truncated.push(turn.into());
        let a = self.audio.get(turn).copied().unwrap_or_default();
        let problem = if heard > a.delivered {
            Some(format!(
                "truncated to {heard} frames heard, past the {} frames it delivered",
                a.delivered
            ))
        } else if heard != a.played {
            Some(format!(
                "truncated to {heard} frames heard, but {} frames of it were played",
                a.played
            ))
        } else {
            None
        };
        match problem {
            Some(message) => self.violate_after(
                Invariant::TruncatedToHeard,
                &[turn, &heard.to_string()],
                message,
                Moment::Stopped,
            ),
            None => self.reach(Invariant::TruncatedToHeard),
        }
    }

    /// Audio plays on downstream after its turn ended (`openai-realtime`, `pipecat`): a frame may
    /// play for an ended turn or an older generation, unless fenced or cancelled.
    pub(super) fn audio_outlives_turns(&self) -> bool {
        self.counts_audio() || self.profile.playback_outlives_turn()
    }

    /// Every fenced generation's frames are done: none may play later.
    pub(super) fn on_fenced(&mut self, generation: Generation) {
        if self.audio_outlives_turns() {
            let below = generation.saturating_add(1);
            self.fenced_below = Some(self.fenced_below.map_or(below, |b| b.max(below)));
        }
    }

    /// Under the realtime rules a frame may play after its turn ended (the audio waits
    /// downstream); only a fenced generation's may not.
    pub(super) fn fenced(&self, generation: Generation) -> bool {
        self.fenced_below.is_some_and(|below| generation < below)
    }

    /// A stop acts on the turn it names: any cancel effect on another turn in its step is the
    /// stop hitting the wrong turn.
    pub(super) fn check_stop_target(&mut self, output: &Output) {
        if !self.judges(Invariant::CancelTargetsItsResponse) {
            return;
        }
        let Some((named, request)) = self.expect.stop.clone() else {
            return;
        };
        let effect = match output {
            Output::ChildCancelRequested { turn, .. }
            | Output::ChildCancelled { turn, .. }
            | Output::CancelDeferred { turn, .. }
            | Output::PlaybackCleared { turn, .. }
            | Output::Truncated { turn, .. }
            | Output::GenerationFenced { turn, .. }
            | Output::Terminal { turn, .. } => Some(turn),
            _ => None,
        };
        if let Some(turn) = effect.filter(|t| **t != named && !self.expect.stop_misdirected) {
            self.expect.stop_misdirected = true;
            self.violate(
                Invariant::CancelTargetsItsResponse,
                &[turn, &request],
                said![
                    format!("stop {request} named "),
                    said::turn(&named),
                    " but acted on ",
                    said::turn(turn)
                ],
            );
        }
    }

    /// A stop names a turn that ended while another is active: the stale cancel is put to the
    /// test, and remembered.
    pub(super) fn on_stop_named(&mut self, turn: &str, request_id: &str) {
        let ended = self.turns.get(turn).is_some_and(|t| t.terminal.is_some());
        let other_active = self
            .turns
            .iter()
            .any(|(id, t)| id != turn && t.terminal.is_none());
        if ended && other_active && self.judges(Invariant::CancelTargetsItsResponse) {
            self.reach(Invariant::CancelTargetsItsResponse);
            self.stale_stop = Some((turn.into(), request_id.to_owned()));
        }
    }

    /// A turn ends cancelled with nothing that names it cancelling it (no stop for it, no
    /// barge-in, no deadline) after a stale stop: the stale stop hit it — in a log, the effect
    /// shows at the turn's end, later than the stop.
    pub(super) fn check_uncaused_cancel(&mut self, turn: &str, state: Terminal) {
        if state != Terminal::Cancelled || self.expect.stop_misdirected {
            return;
        }
        let caused = self
            .turns
            .get(turn)
            .is_none_or(|t| t.cancelled || t.terminal.is_some());
        if caused {
            return;
        }
        if let Some((named, request)) = self.stale_stop.take() {
            self.violate(
                Invariant::CancelTargetsItsResponse,
                &[turn, &request],
                said![
                    said::turn(turn),
                    format!(" ended cancelled though nothing named it; the last stop, {request}, named "),
                    said::turn(&named),
                    ", which had already ended"
                ],
            );
        }
    }

    /// A turn is accepted: whether another has not ended yet.
    pub(super) fn on_accept_beside(&mut self) {
        if self.judges(Invariant::OneActiveResponse) {
            self.expect.beside_active = self
                .turns
                .iter()
                .filter(|(_, t)| t.terminal.is_none())
                .map(|(id, _)| id.clone())
                .next();
        }
    }

    /// The step's end, for the realtime rules: what it accepted beside an active turn, what it
    /// cleared without truncating, what speech left playing.
    pub(super) fn check_realtime_step(&mut self) {
        let expect = &self.expect;
        if let (Some(turn), Some(other)) = (&expect.accept, &expect.beside_active) {
            let (turn, other) = (turn.clone(), other.clone());
            if expect.refused {
                self.reach(Invariant::OneActiveResponse);
            } else {
                self.violate_after(
                    Invariant::OneActiveResponse,
                    &[&other, &turn],
                    said![
                        said::turn(&turn),
                        " was accepted while ",
                        said::turn(&other),
                        " had not ended"
                    ],
                    Moment::Stopped,
                );
            }
        }
        if !self.counts_audio() {
            return;
        }
        let expect = &self.expect;
        let untruncated: Vec<TurnId> = expect
            .cleared
            .iter()
            .filter(|t| !expect.truncated.contains(t))
            .cloned()
            .collect();
        let still_playing: Vec<(TurnId, u32)> = expect
            .speech
            .iter()
            .filter(|(t, _)| !expect.cleared.contains(t))
            .cloned()
            .collect();
        for turn in untruncated {
            let a = self.audio.get(&turn).copied().unwrap_or_default();
            self.violate_after(
                Invariant::TruncatedToHeard,
                &[&turn],
                said![
                    format!(
                        "its audio was cleared after {} of {} frames played, but the ",
                        a.played, a.delivered
                    ),
                    Noun::Turn,
                    " was not truncated to what was heard"
                ],
                Moment::Stopped,
            );
        }
        for (turn, waiting) in still_playing {
            self.violate(
                Invariant::TruncatedToHeard,
                &[&turn],
                format!(
                    "speech started while {waiting} frames of it were still to play; they were neither cleared nor truncated"
                ),
            );
        }
    }
}
