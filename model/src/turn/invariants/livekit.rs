//! The monitor's account of what LiveKit Agents adds (`livekit-agents`): tool calls answered
//! exactly once; a pause decided once, in time, without dropping or repeating output; and
//! uninterruptible turns that speech leaves alone.

use super::memory::{Moment, Monitor};
use super::Invariant;
use crate::said;
use crate::said::Noun;
use crate::turn::output::*;
use crate::turn::types::*;

impl Monitor {
    fn settles_calls(&self) -> bool {
        self.judges(Invariant::ToolCallSettled)
    }

    fn decides_pauses(&self) -> bool {
        self.judges(Invariant::InterruptionDecidedOnce)
    }

    /// A child started: a tool call is owed its answer.
    pub(super) fn on_call_started(&mut self, turn: &str, child: &str) {
        let tool = self
            .turns
            .get(turn)
            .and_then(|t| t.children.get(child))
            .is_some_and(|c| c.kind.is_tool());
        if tool && self.settles_calls() {
            self.calls.insert((turn.into(), child.into()), None);
        }
    }

    /// A tool call was answered: it started, and was not answered before.
    pub(super) fn on_tool_answered(&mut self, turn: &str, child: &str, answer: ToolAnswer) {
        if !self.settles_calls() {
            return;
        }
        let interrupted = self.turns.get(turn).is_some_and(|t| t.stopping());
        let key = (turn.into(), child.into());
        let problem = match self.calls.get(&key) {
            None => Some("was answered though it never started".to_owned()),
            Some(Some(first)) => Some(format!(
                "was answered twice: {} after {}",
                name(answer),
                name(*first)
            )),
            Some(None) => None,
        };
        if let Some(message) = problem {
            return self.violate_after(
                Invariant::ToolCallSettled,
                &[turn, child],
                said![said::call(child), " ", message],
                Moment::Stopped,
            );
        }
        self.calls.insert(key, Some(answer));
        if interrupted {
            self.reach(Invariant::ToolCallSettled);
        }
    }

    /// A turn ended: every tool call it started was answered.
    pub(super) fn check_calls_answered(&mut self, turn: &str) {
        if !self.settles_calls() {
            return;
        }
        let open: Vec<ChildId> = self
            .calls
            .iter()
            .filter(|((t, _), answer)| t == turn && answer.is_none())
            .map(|((_, c), _)| c.clone())
            .collect();
        for child in open {
            self.violate(
                Invariant::ToolCallSettled,
                &[turn, &child],
                said![
                    "the ",
                    Noun::Turn,
                    " ended with ",
                    said::call(&child),
                    " never answered: it stays in progress forever"
                ],
            );
        }
    }

    /// Speech started (or a transcript came): a step in which uninterruptible turns must be left
    /// alone; while the user speaks, an open pause is not due.
    pub(super) fn on_speech_step(&mut self, transcript: bool) {
        if !self.decides_pauses() && !self.judges(Invariant::UninterruptibleOutputSurvives) {
            return;
        }
        self.expect.speech_step = true;
        if !transcript {
            if self.decides_pauses() {
                self.user_speaking = true;
                if let Some((_, since)) = self.pause.as_mut() {
                    *since = None;
                }
            }
            let speaking_uninterruptible = self
                .uninterruptible
                .iter()
                .any(|t| self.turns.get(t).is_some_and(|t| !t.stopping()));
            if speaking_uninterruptible {
                self.reach(Invariant::UninterruptibleOutputSurvives);
            }
        }
    }

    /// The user stopped speaking: an open pause is due to be decided from now.
    pub(super) fn on_speech_stopped(&mut self) {
        if !self.decides_pauses() {
            return;
        }
        self.user_speaking = false;
        let now = self.now;
        if let Some((_, since)) = self.pause.as_mut() {
            *since = Some(now);
        }
    }

    /// An output about `turn` in a speech step: one that clears or fences an uninterruptible
    /// turn breaks it (a pause breaks it in any step: only speech pauses).
    pub(super) fn check_uninterruptible(&mut self, turn: &str, what: &str) {
        if (self.expect.speech_step || what == PAUSED)
            && self.uninterruptible.contains(turn)
            && self.judges(Invariant::UninterruptibleOutputSurvives)
        {
            self.violate(
                Invariant::UninterruptibleOutputSurvives,
                &[turn],
                said![
                    format!("speech {what} "),
                    said::turn(turn),
                    ", which is uninterruptible"
                ],
            );
        }
    }

    pub(super) fn on_paused(&mut self, turn: &str) {
        self.check_uninterruptible(turn, PAUSED);
        if !self.decides_pauses() {
            return;
        }
        if let Some((open, _)) = &self.pause {
            if open != turn {
                let open = open.clone();
                self.violate(
                    Invariant::InterruptionDecidedOnce,
                    &[turn, &open],
                    said![
                        said::turn(turn),
                        " was paused while ",
                        said::turn(&open),
                        "'s pause was undecided"
                    ],
                );
            }
        }
        let since = (!self.user_speaking).then_some(self.now);
        self.pause = Some((turn.into(), since));
    }

    /// A resume: the one decision of an open pause, dropping nothing.
    pub(super) fn on_resumed(&mut self, turn: &str) {
        if !self.decides_pauses() {
            return;
        }
        match self.pause.take() {
            Some((open, _)) if open == turn => {
                self.expect.resumed = true;
                self.reach(Invariant::InterruptionDecidedOnce);
            }
            other => {
                self.pause = other;
                self.violate_after(
                    Invariant::InterruptionDecidedOnce,
                    &[turn],
                    said![
                        said::turn(turn),
                        " resumed with no pause open: its interruption was already decided"
                    ],
                    Moment::Stopped,
                );
            }
        }
    }

    /// The paused turn was interrupted (fenced, stopped, past its deadline): the pause's one
    /// decision — too late if its time to resume had passed (the user silent since).
    pub(super) fn pause_decided(&mut self, turn: &str) {
        let Some((open, since)) = self.pause.clone().filter(|(open, _)| open == turn) else {
            return;
        };
        self.pause = None;
        let timeout = self.interruption.false_timeout_ms.unwrap_or_default();
        // At its very time a decision is in time (another timer of that instant may come first).
        if let Some(due) = since
            .map(|s| s.saturating_add(timeout))
            .filter(|d| self.now > *d)
        {
            self.violate_once(
                Invariant::InterruptionDecidedOnce,
                &[&open],
                format!("the pause, the user silent since {} ms, was still undecided at {} ms, past its {due} ms: neither resumed nor interrupted in time", since.unwrap_or_default(), self.now),
            );
        }
    }

    /// A frame played: never while the output is paused.
    pub(super) fn check_played_in_pause(&mut self, turn: &str) {
        if let Some((open, _)) = self.pause.clone() {
            if self.decides_pauses() {
                self.violate(
                    Invariant::InterruptionDecidedOnce,
                    &[turn, &open],
                    said![
                        Noun::Frame,
                        " of ",
                        said::turn(turn),
                        " played while ",
                        said::turn(&open),
                        "'s output was paused"
                    ],
                );
            }
        }
    }

    /// The step's end: a resume that dropped output, a pause left undecided past its time.
    pub(super) fn check_pause_step(&mut self) {
        if !self.decides_pauses() {
            return;
        }
        if let Some(turn) = self.expect.dropped.clone().filter(|_| self.expect.resumed) {
            self.violate(
                Invariant::InterruptionDecidedOnce,
                &[&turn],
                "the output resumed without the audio queued while it was paused: it skipped what it had not played".to_owned(),
            );
        }
        self.check_pause_in_time();
    }

    /// A pause still open past its time, the user silent: nothing decided it (no transcript, no
    /// resume) — the session is wedged.
    pub(super) fn check_pause_in_time(&mut self) {
        let Some((turn, Some(since))) = self.pause.clone() else {
            return;
        };
        // Without a false-interruption timeout nothing pauses (counted speech interrupts).
        let timeout = self.interruption.false_timeout_ms.unwrap_or_default();
        let due = since.saturating_add(timeout);
        if self.decides_pauses() && self.now >= due {
            self.violate_once(
                Invariant::InterruptionDecidedOnce,
                &[&turn],
                format!("the pause, the user silent since {since} ms, was still undecided at {} ms, past its {due} ms: neither resumed nor interrupted", self.now),
            );
        }
    }
}

/// What a pause does to a turn, as `check_uninterruptible` names it.
const PAUSED: &str = "paused";

fn name(answer: ToolAnswer) -> &'static str {
    match answer {
        ToolAnswer::Result => "result",
        ToolAnswer::Error => "error",
        ToolAnswer::Cancelled => "cancelled",
    }
}
