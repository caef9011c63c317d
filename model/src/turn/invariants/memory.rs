//! What the turn monitor remembers of a run: the turns and children it has seen, the store and
//! the client as the outputs showed them, the expectations of the current step, and the
//! violations and reachability it found; the [`crate::Monitor`] interface over them.

use crate::fence::{Map, Set};

use super::Invariant;
use crate::said::Said;
use crate::turn::output::*;
use crate::turn::types::*;
use crate::turn::{Interruption, Profile};
use crate::{Findings, Hashed, Millis};

#[derive(Debug, PartialEq, Hash)]
pub(super) enum ChildObs {
    Running,
    Resolved,
    InFlight(String),
    Effect { key: String, uncertain: bool },
}

/// A clone in place over an observation of the same kind keeps its key's buffer.
impl Clone for ChildObs {
    fn clone(&self) -> ChildObs {
        match self {
            ChildObs::Running => ChildObs::Running,
            ChildObs::Resolved => ChildObs::Resolved,
            ChildObs::InFlight(key) => ChildObs::InFlight(key.clone()),
            ChildObs::Effect { key, uncertain } => ChildObs::Effect {
                key: key.clone(),
                uncertain: *uncertain,
            },
        }
    }

    fn clone_from(&mut self, source: &ChildObs) {
        match (self, source) {
            (ChildObs::InFlight(key), ChildObs::InFlight(k)) => key.clone_from(k),
            (
                ChildObs::Effect { key, uncertain },
                ChildObs::Effect {
                    key: k,
                    uncertain: u,
                },
            ) => {
                key.clone_from(k);
                *uncertain = *u;
            }
            (this, source) => *this = source.clone(),
        }
    }
}

#[derive(Debug, Hash)]
pub(super) struct ChildSeen {
    pub(super) kind: ChildKind,
    pub(super) state: ChildObs,
    pub(super) cancel_requested: bool,
    pub(super) temporaries: u32,
    pub(super) enqueued: bool,
    pub(super) cancelled: bool,
}

clone_in_place!(ChildSeen {
    kind,
    state,
    cancel_requested,
    temporaries,
    enqueued,
    cancelled
});

/// A piece of the stream store as the outputs showed it: its turn, its text, whether it ends
/// the turn's stream.
#[derive(Debug, Hash)]
pub(super) struct StoredSeen {
    pub(super) turn: TurnId,
    pub(super) text: Option<String>,
    pub(super) terminal: bool,
}

clone_in_place!(StoredSeen {
    turn,
    text,
    terminal
});

#[derive(Debug, Default, Hash)]
pub(super) struct TurnSeen {
    pub(super) generation: Generation,
    pub(super) deadline_at: Option<Millis>,
    pub(super) budget: Option<Budget>,
    /// Cancel requested by a stop, a barge-in or the deadline.
    pub(super) cancelled: bool,
    pub(super) by_deadline: bool,
    pub(super) cancel_effects: u32,
    pub(super) terminal: Option<Terminal>,
    pub(super) children: Map<ChildId, ChildSeen>,
    pub(super) last_seq: Map<Generation, Seq>,
    /// Its model is done (kept only under a profile whose calls outlive their generation;
    /// elsewhere always `false`, so other profiles' states are what they were).
    pub(super) generation_done: bool,
}

clone_in_place!(TurnSeen {
    generation, deadline_at, budget, cancelled, by_deadline, cancel_effects, terminal,
    generation_done
} maps { children, last_seq });

impl TurnSeen {
    pub(super) fn stopping(&self) -> bool {
        self.cancelled || self.terminal.is_some()
    }

    /// Running as far as the session goes: not stopping, and (`calls_apart`: under a profile
    /// whose calls outlive their generation) not a turn whose generation is done that waits on
    /// its tool calls alone.
    pub(super) fn holds_session(&self, calls_apart: bool) -> bool {
        let waits_on_calls = self.generation_done
            && self.children.values().all(|c| {
                c.kind.is_tool() || !matches!(c.state, ChildObs::Running | ChildObs::InFlight(_))
            });
        !(self.stopping() || (calls_apart && waits_on_calls))
    }

    pub(super) fn pending_children(&self) -> Vec<&str> {
        self.children
            .iter()
            .filter(|(_, c)| matches!(c.state, ChildObs::Running | ChildObs::InFlight(_)))
            .map(|(id, _)| id.as_str())
            .collect()
    }
}

/// Expectations an input sets for its own step's outputs.
#[derive(Clone, Debug, Default)]
pub(super) struct StepExpect {
    pub(super) stop: Option<(TurnId, String)>,
    pub(super) spawn: Option<(TurnId, ChildId, Unallowed)>,
    pub(super) accept: Option<TurnId>,
    pub(super) receive_dup: Option<Seq>,
    pub(super) resume: Option<Seq>,
    pub(super) answered: bool,
    pub(super) not_started: bool,
    pub(super) started: bool,
    pub(super) refused: bool,
    pub(super) duplicate_ignored: bool,
    pub(super) resume_answered: bool,
    /// The frames a `delta` brings, for the turn's audio account when it is delivered.
    pub(super) delta_frames: u32,
    /// Speech started: the turns whose audio was still to play then, and how much.
    pub(super) speech: Vec<(TurnId, u32)>,
    /// The turns whose audio this step cleared, and those it truncated.
    pub(super) cleared: Vec<TurnId>,
    pub(super) truncated: Vec<TurnId>,
    /// A turn not yet ended when this step's accept came.
    pub(super) beside_active: Option<TurnId>,
    /// This step's stop already acted on a turn it did not name (reported once).
    pub(super) stop_misdirected: bool,
    /// Speech started or a transcript came in this step (`livekit-agents`).
    pub(super) speech_step: bool,
    /// A paused output resumed in this step.
    pub(super) resumed: bool,
    /// A turn whose queued audio this step cleared (any profile).
    pub(super) dropped: Option<TurnId>,
}

/// A turn's audio as the outputs showed it, in frames: kept only under a profile that truncates
/// to what was heard.
#[derive(Clone, Copy, Debug, Default, Hash)]
pub(super) struct Audio {
    pub(super) delivered: u32,
    pub(super) played: u32,
    pub(super) cleared: u32,
}

impl Audio {
    /// Frames delivered and neither played nor cleared yet.
    pub(super) fn waiting(&self) -> u32 {
        self.delivered
            .saturating_sub(self.played)
            .saturating_sub(self.cleared)
    }
}

/// The monitor: feed it a run, collect the violations.
#[derive(Debug, Default)]
pub struct Monitor {
    /// The rule choices judged by (the invariants a profile has).
    pub(super) profile: Profile,
    pub(super) now: Millis,
    pub(super) active_generation: Option<Generation>,
    pub(super) turns: Hashed<Map<TurnId, TurnSeen>>,
    /// The persisted events, in order: index i has seq i + 1.
    pub(super) store: Hashed<Vec<StoredSeen>>,
    pub(super) client_received: Seq,
    pub(super) client_text: Hashed<Map<TurnId, String>>,
    pub(super) disconnected_at: Option<Millis>,
    /// A resume was served by a replay.
    pub(super) replayed: bool,
    /// Standing conditions already reported, so each is reported once.
    pub(super) reported: Hashed<Set<(Invariant, String)>>,
    pub(super) expect: StepExpect,
    pub(super) findings: Findings<Invariant>,
    /// The step at which each turn's story moments happened (by `Moment`), for a violation's
    /// `since`. Not part of the fingerprint: it decides no verdict, only where a report says a
    /// story starts.
    pub(super) moments: Map<TurnId, [Option<usize>; 3]>,
    /// Why each child that had to be refused had to be: it asked too late, or after the cancel.
    /// Not part of the fingerprint either: a machine answers a spawn within the spawn's own step
    /// (`child_started` or `tool_not_started`), where the step's expectation judges it, so in an
    /// explored run a refusal never decides a later step's verdict. Only a log shows a start
    /// later than its spawn, and a log is checked, not explored.
    pub(super) refusals: Map<TurnId, Map<ChildId, Unallowed>>,
    /// Each turn's audio (`openai-realtime` only; empty otherwise).
    pub(super) audio: Hashed<Map<TurnId, Audio>>,
    /// Every generation below this one was fenced off (`openai-realtime` only): its frames
    /// still buffered may not play.
    pub(super) fenced_below: Option<Generation>,
    /// The last stop that named a turn already ended while another was active (`openai-realtime`
    /// only): a later cancel nothing named is that stop hitting the wrong turn.
    pub(super) stale_stop: Option<(TurnId, String)>,
    /// Each tool call started and its answer, once it has one (`livekit-agents` only).
    pub(super) calls: Hashed<Map<(TurnId, ChildId), Option<ToolAnswer>>>,
    /// The turn whose output is paused, and since when the user is silent (`None` while they
    /// speak: its resume is not due before they stop).
    pub(super) pause: Option<(TurnId, Option<Millis>)>,
    /// The user is speaking (`livekit-agents` only).
    pub(super) user_speaking: bool,
    /// The turns accepted uninterruptible.
    pub(super) uninterruptible: Hashed<Set<TurnId>>,
    /// The session's interruption options (`livekit-agents`): when an open pause is due.
    pub(super) interruption: Interruption,
}

clone_in_place!(Monitor {
    profile, now, active_generation, client_received, disconnected_at, replayed, expect, findings,
    fenced_below, stale_stop, pause, user_speaking, interruption
} maps { moments, refusals } parts {
    turns, store, client_text, reported, audio, calls, uninterruptible
});

/// A turn's moment a later violation's story starts at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Moment {
    /// Cancelled (a stop, a barge-in or the deadline), fenced, or ended: from here nothing of it
    /// reaches the user.
    Stopped,
    /// Its first terminal state.
    Terminal,
    /// A stop answered `requested`.
    StopRequested,
}

monitor! {
    fingerprint: profile, now, active_generation, turns, store, client_received, client_text,
        disconnected_at, replayed, reported, audio, fenced_below, stale_stop, calls, pause,
        user_speaking, uninterruptible, interruption;
}

impl Monitor {
    /// A monitor judging by `profile`'s rules.
    pub fn for_profile(profile: Profile) -> Monitor {
        Monitor {
            profile,
            ..Monitor::default()
        }
    }

    /// This monitor, judging a session made with `interruption`.
    pub fn with_interruption(mut self, interruption: Interruption) -> Monitor {
        self.interruption = interruption;
        self
    }

    /// Whether `invariant` is judged: the profile has it, or it is the one invariant asked for.
    pub(super) fn judges(&self, invariant: Invariant) -> bool {
        self.profile.judges(invariant) || self.findings.kept_only() == Some(invariant)
    }

    /// Like `violate`, the story starting at the turn's `moment` where it happened.
    pub(super) fn violate_after(
        &mut self,
        invariant: Invariant,
        ids: &[&str],
        message: impl Into<Said>,
        moment: Moment,
    ) {
        let since = ids
            .first()
            .and_then(|turn| self.moments.get(*turn))
            .and_then(|m| m[moment as usize]);
        self.findings
            .violate_since(invariant, self.now, ids, message, since);
    }

    /// The turn's `moment` happens now, unless it already did.
    pub(super) fn moment(&mut self, turn: &str, moment: Moment) {
        let step = self.findings.step();
        let at = match self.moments.get_mut(turn) {
            Some(m) => m,
            None => self.moments.entry(turn.into()).or_default(),
        };
        at[moment as usize].get_or_insert(step);
    }

    /// Reports a standing condition once per (invariant, subject), not at every step it persists.
    pub(super) fn violate_once(
        &mut self,
        invariant: Invariant,
        ids: &[&str],
        message: impl Into<Said>,
    ) {
        if self.reported.insert((invariant, ids.join(","))) {
            self.violate(invariant, ids, message);
        }
    }

    pub(super) fn set_child(&mut self, turn: &str, child: &str, f: impl FnOnce(&mut ChildSeen)) {
        if let Some(c) = self
            .turns
            .get_mut(turn)
            .and_then(|t| t.children.get_mut(child))
        {
            f(c);
        }
    }
}

/// Why a child may not start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Unallowed {
    /// The turn's deadline leaves it less time than it needs.
    Late,
    /// Its turn was already cancelled.
    Cancelled,
}
