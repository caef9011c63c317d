//! The monitor's account of delivery: deltas delivered and frames played (never late, seqs in
//! order), and the store's events as the client takes them in, resumes and renders them.

use super::memory::{Moment, Monitor, StoredSeen};
use super::Invariant;
use crate::said;
use crate::said::{Gist, Noun};
use crate::turn::machine::RESUME_TTL_MS;
use crate::turn::types::*;

impl Monitor {
    pub(super) fn on_delivered(&mut self, turn: &str, generation: Generation, seq: Seq) {
        let active = self.active_generation;
        let Some(t) = self.turns.get_mut(turn) else {
            return;
        };
        let last = t.last_seq.entry(generation).or_insert(0);
        let expected = last.saturating_add(1);
        *last = seq;
        let stopping = t.stopping();
        let stale = generation != t.generation || Some(generation) != active;
        if seq >= 2 {
            self.reach(Invariant::SeqMonotonic);
        }
        let (g, s) = (generation.to_string(), seq.to_string());
        if seq != expected {
            self.violate(
                Invariant::SeqMonotonic,
                &[turn, &g, &s],
                format!("delivered seq {seq} of generation {generation} where {expected} was next"),
            );
        }
        if stopping || stale {
            let why = if stale {
                "a generation other than the active one"
            } else {
                "a turn already cancelled or ended"
            };
            self.violate_after(
                Invariant::NoLateDelivery,
                &[turn, &g, &s],
                format!("delta seq {seq} of generation {generation} was delivered for {why}"),
                Moment::Stopped,
            );
        }
    }

    pub(super) fn on_played(&mut self, turn: &str, generation: Generation, seq: Seq) {
        let active = self.active_generation;
        let Some(t) = self.turns.get(turn) else {
            return;
        };
        // Where audio plays on after its turn ended, a frame of an ended turn or an older
        // generation may still play — unless its turn was cancelled or its generation fenced
        // (an uninterruptible turn's, older than the one fenced, is not: speech leaves it alone).
        let (late, stale) = if self.audio_outlives_turns() {
            let survives = self.uninterruptible.contains(turn);
            (t.cancelled, self.fenced(generation) && !survives)
        } else {
            let ended_otherwise = matches!(t.terminal, Some(s) if s != Terminal::Completed);
            (t.cancelled || ended_otherwise, Some(generation) != active)
        };
        if late || stale {
            let (g, s) = (generation.to_string(), seq.to_string());
            self.violate_after(
                Invariant::NoLateDelivery,
                &[turn, &g, &s],
                said![
                    format!("a frame of generation {generation} (seq {seq}) was played after its "),
                    Noun::Turn,
                    " was stopped or fenced"
                ]
                .with_gist(Gist::LateFrame),
                Moment::Stopped,
            );
        }
    }

    pub(super) fn on_receive(&mut self, seq: Seq) {
        if seq <= self.client_received {
            self.expect.receive_dup = Some(seq);
            return;
        }
        self.client_received = seq;
        if let Some(StoredSeen { turn, text, .. }) = self.store.get((seq as usize).wrapping_sub(1))
        {
            let rendered = self.client_text.entry(turn.clone()).or_default();
            if let Some(text) = text {
                rendered.push_str(text);
            }
        }
    }

    pub(super) fn on_resume_refused(&mut self, after_seq: Seq, reason: ResumeRefusal) {
        self.expect.resume_answered = true;
        let last = self.store.len() as Seq;
        let expired = self
            .disconnected_at
            .is_some_and(|d| self.now.saturating_sub(d) > RESUME_TTL_MS);
        let fair = match reason {
            ResumeRefusal::UnknownCursor => after_seq > last,
            ResumeRefusal::Expired => expired,
        };
        if !fair {
            // Why the refusal's own reason does not hold.
            let why = match (reason, self.disconnected_at) {
                (ResumeRefusal::UnknownCursor, _) => {
                    format!("the store holds events up to seq {last}: the cursor is known")
                }
                (ResumeRefusal::Expired, Some(d)) => format!(
                    "it came {} ms after the disconnect, within the {RESUME_TTL_MS} ms window",
                    self.now.saturating_sub(d)
                ),
                (ResumeRefusal::Expired, None) => {
                    "no disconnect was open (the client was never away, or its resume was served)"
                        .to_owned()
                }
            };
            let a = after_seq.to_string();
            self.violate(
                Invariant::ReplayExactlyOnce,
                &[&a],
                format!(
                    "resume after seq {after_seq} was refused ({}), though {why}",
                    reason.name()
                ),
            );
        }
    }

    pub(super) fn on_replayed(&mut self, from: Seq, to: Seq) {
        self.expect.resume_answered = true;
        self.replayed = true;
        self.disconnected_at = None;
        let last = self.store.len() as Seq;
        let Some(after) = self.expect.resume else {
            return;
        };
        let problem = if after > last {
            Some(format!(
                "resume after unknown seq {after} replayed instead of being refused: a silent gap"
            ))
        } else if from != after + 1 || to != last {
            Some(format!(
                "resume after seq {after} replayed {from}..{to}; expected {}..{last}",
                after + 1
            ))
        } else {
            None
        };
        if let Some(message) = problem {
            let (f, t) = (from.to_string(), to.to_string());
            self.violate(Invariant::ReplayExactlyOnce, &[&f, &t], message);
        }
    }

    pub(super) fn on_rendered(&mut self, turn: &str, text: &str) {
        if self.replayed {
            self.reach(Invariant::ReplayExactlyOnce);
        }
        let persisted: String = self
            .store
            .iter()
            .filter(|p| p.turn == turn)
            .filter_map(|p| p.text.as_deref())
            .collect();
        if text != persisted {
            self.violate(
                Invariant::ReplayExactlyOnce,
                &[turn],
                format!("the client rendered {text:?} but the store persisted {persisted:?}"),
            );
        }
    }
}
