//! The turn machine's state: a session, its turns and their children, the playback buffer, the
//! stream store and the client's cursor.
//!
//! A turn's phase:
//!
//! ```text
//!             stop / speech_started / deadline
//!   running ─────────────────────────────────► cancel_requested{cause}
//!      │                                              │
//!      │ model done, every child resolved             │ every child resolved
//!      ▼                                              ▼
//!   completed | reconcile_required       cancelled | failed{DEADLINE_EXCEEDED}
//!                                         | reconcile_required (an effect may have happened)
//! ```
//!
//! A child's state:
//!
//! ```text
//!   running ──► completed
//!      │ ─────► cancelled{checkpoint}
//!      └ (non-cancellable tool) commit_sent{key} ──► committed | commit_failed | commit_unknown
//! ```

use std::collections::VecDeque;

use serde::Serialize;

use super::types::{Budget, Cause, ChildId, ChildKind, Generation, Mode, Seq, Terminal, TurnId};
use super::{Interruption, Profile};
use crate::{Hashed, Millis};

/// The checkpoint a child refused at its spawn is `cancelled` at: it never ran.
pub const NOT_STARTED: &str = "not_started";

/// A turn's phase: one enum, payloads inline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Running,
    CancelRequested { cause: Cause },
    Terminal { state: Terminal },
}

impl Phase {
    pub fn is_running(&self) -> bool {
        matches!(self, Phase::Running)
    }

    pub fn is_cancel_requested(&self) -> bool {
        matches!(self, Phase::CancelRequested { .. })
    }

    pub fn is_terminal(&self) -> bool {
        matches!(self, Phase::Terminal { .. })
    }
}

/// A child's state.
#[derive(Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildState {
    Running,
    Completed,
    Cancelled { checkpoint: String },
    CommitSent { idempotency_key: String },
    Committed { idempotency_key: String },
    CommitFailed { idempotency_key: String },
    CommitUnknown { idempotency_key: String },
}

/// A clone in place over a state of the same kind keeps its text's buffer.
impl Clone for ChildState {
    fn clone(&self) -> ChildState {
        match self {
            ChildState::Running => ChildState::Running,
            ChildState::Completed => ChildState::Completed,
            ChildState::Cancelled { checkpoint } => ChildState::Cancelled {
                checkpoint: checkpoint.clone(),
            },
            ChildState::CommitSent { idempotency_key } => ChildState::CommitSent {
                idempotency_key: idempotency_key.clone(),
            },
            ChildState::Committed { idempotency_key } => ChildState::Committed {
                idempotency_key: idempotency_key.clone(),
            },
            ChildState::CommitFailed { idempotency_key } => ChildState::CommitFailed {
                idempotency_key: idempotency_key.clone(),
            },
            ChildState::CommitUnknown { idempotency_key } => ChildState::CommitUnknown {
                idempotency_key: idempotency_key.clone(),
            },
        }
    }

    fn clone_from(&mut self, source: &ChildState) {
        use ChildState::*;
        match (self, source) {
            (Cancelled { checkpoint: a }, Cancelled { checkpoint: b })
            | (CommitSent { idempotency_key: a }, CommitSent { idempotency_key: b })
            | (Committed { idempotency_key: a }, Committed { idempotency_key: b })
            | (CommitFailed { idempotency_key: a }, CommitFailed { idempotency_key: b })
            | (CommitUnknown { idempotency_key: a }, CommitUnknown { idempotency_key: b }) => {
                a.clone_from(b)
            }
            (this, source) => *this = source.clone(),
        }
    }
}

impl ChildState {
    /// Still doing work the turn has to wait for.
    pub fn is_pending(&self) -> bool {
        matches!(self, ChildState::Running | ChildState::CommitSent { .. })
    }

    /// Stopped after it had started: a report from it now is late, not work that never ran.
    /// (A child refused at its spawn is `cancelled` at the checkpoint `not_started`.)
    pub fn is_stopped(&self) -> bool {
        matches!(self, ChildState::Cancelled { checkpoint } if checkpoint != NOT_STARTED)
    }

    /// The key of a side effect that happened or may have happened.
    pub fn effect_key(&self) -> Option<&str> {
        match self {
            ChildState::Committed { idempotency_key }
            | ChildState::CommitFailed { idempotency_key }
            | ChildState::CommitUnknown { idempotency_key } => Some(idempotency_key),
            _ => None,
        }
    }

    /// The effect may have happened but nobody knows: it must be reconciled whatever the turn did.
    pub fn is_uncertain(&self) -> bool {
        matches!(
            self,
            ChildState::CommitFailed { .. } | ChildState::CommitUnknown { .. }
        )
    }

    pub fn name(&self) -> &'static str {
        match self {
            ChildState::Running => "running",
            ChildState::Completed => "completed",
            ChildState::Cancelled { .. } => "cancelled",
            ChildState::CommitSent { .. } => "commit_sent",
            ChildState::Committed { .. } => "committed",
            ChildState::CommitFailed { .. } => "commit_failed",
            ChildState::CommitUnknown { .. } => "commit_unknown",
        }
    }
}

#[derive(Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Child {
    pub id: ChildId,
    pub kind: ChildKind,
    pub state: ChildState,
    /// Temporary outputs a cancellable tool holds now.
    pub temporary_outputs: u32,
    /// The child has been asked to stop at its next checkpoint.
    pub cancel_requested: bool,
    /// Its side effect has been handed to reconciliation.
    pub reconcile_enqueued: bool,
    /// (`livekit-agents`, `pipecat`.) The tool call was answered; elsewhere always `false`.
    pub answered: bool,
    /// (`pipecat`.) When the tool call is cancelled unless it ended before.
    pub times_out_at: Option<Millis>,
}

clone_in_place!(Child {
    id,
    kind,
    state,
    temporary_outputs,
    cancel_requested,
    reconcile_enqueued,
    answered,
    times_out_at
});

#[derive(Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Turn {
    pub id: TurnId,
    pub generation: Generation,
    pub mode: Mode,
    pub accepted_at: Millis,
    pub deadline_at: Option<Millis>,
    pub budget: Option<Budget>,
    pub phase: Phase,
    pub children: Vec<Child>,
    /// The last seq the delivery gate let through.
    pub last_delivered_seq: Seq,
    /// The model finished its response.
    pub model_done: bool,
    /// Frames of its audio played so far: kept only by a profile that truncates to what was
    /// heard (elsewhere always 0, so the lab's states are what they were).
    pub played: u32,
    /// Speech may interrupt it (`false` only under a profile that has uninterruptible turns).
    pub interruptible: bool,
}

clone_in_place!(Turn {
    id,
    generation,
    mode,
    accepted_at,
    deadline_at,
    budget,
    phase,
    children,
    last_delivered_seq,
    model_done,
    played,
    interruptible
});

impl Turn {
    pub fn child(&self, id: &str) -> Option<&Child> {
        self.children.iter().find(|c| c.id == id)
    }

    pub fn has_pending_children(&self) -> bool {
        self.children.iter().any(|c| c.state.is_pending())
    }

    /// Its generation is done and only tool calls keep it from ending: under a profile whose
    /// calls outlive their generation ([`crate::turn::Profile::calls_outlive_generation`]) it no
    /// longer holds the session.
    pub fn waits_on_calls_alone(&self) -> bool {
        self.model_done
            && self
                .children
                .iter()
                .filter(|c| c.state.is_pending())
                .all(|c| c.kind.is_tool())
    }

    /// The remaining time before the deadline at `now`, if the turn has one.
    pub fn remaining_ms(&self, now: Millis) -> Option<u64> {
        self.deadline_at.map(|d| d.saturating_sub(now))
    }
}

/// One audio frame waiting for the speaker.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Frame {
    pub turn: TurnId,
    pub generation: Generation,
    pub seq: Seq,
}

/// The playback buffer: frames in the order they play, kept as runs of equal frames (a stretch
/// of audio measured in milliseconds is one run, not thousands of entries). Runs are merged as
/// they are pushed, so one sequence of frames has one form, and states compare as values.
#[derive(Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Playback {
    runs: VecDeque<(Frame, u32)>,
    len: usize,
}

clone_in_place!(Playback { runs, len });

impl Playback {
    /// Frames waiting, in all.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The runs, head first.
    pub fn runs(&self) -> impl DoubleEndedIterator<Item = &(Frame, u32)> {
        self.runs.iter()
    }

    /// Each frame, head first (a run repeated).
    pub fn iter(&self) -> impl Iterator<Item = &Frame> {
        self.runs
            .iter()
            .flat_map(|(f, n)| std::iter::repeat_n(f, *n as usize))
    }

    /// The frame at the head, if any.
    pub fn front(&self) -> Option<&Frame> {
        self.runs.front().map(|(f, _)| f)
    }

    /// Frames of `turn` waiting.
    pub fn frames_of(&self, turn: &str) -> u32 {
        self.runs
            .iter()
            .filter(|(f, _)| f.turn == turn)
            .map(|(_, n)| *n)
            .sum()
    }

    pub fn holds(&self, turn: &str) -> bool {
        self.runs.iter().any(|(f, _)| f.turn == turn)
    }

    /// `n` frames of `frame` join the tail.
    pub fn push(&mut self, frame: Frame, n: u32) {
        if n == 0 {
            return;
        }
        self.len = self.len.saturating_add(n as usize);
        match self.runs.back_mut() {
            Some((last, count)) if *last == frame => *count = count.saturating_add(n),
            _ => self.runs.push_back((frame, n)),
        }
    }

    /// Up to `n` frames leave the head: the runs they came from, with how many of each.
    pub fn play(&mut self, mut n: u32) -> Vec<(Frame, u32)> {
        let mut played = Vec::new();
        while n > 0 {
            let Some((frame, count)) = self.runs.front_mut() else {
                break;
            };
            let take = n.min(*count);
            *count -= take;
            n -= take;
            self.len -= take as usize;
            if *count == 0 {
                if let Some((frame, _)) = self.runs.pop_front() {
                    played.push((frame, take));
                }
            } else {
                played.push((frame.clone(), take));
            }
        }
        played
    }

    /// Removes every frame of `turn`; how many there were.
    pub fn remove_turn(&mut self, turn: &str) -> u32 {
        let before = self.len;
        self.runs.retain(|(f, _)| f.turn != turn);
        // Two runs of one frame that the removed turn's frames kept apart now meet.
        let mut merged: VecDeque<(Frame, u32)> = VecDeque::with_capacity(self.runs.len());
        for (f, n) in self.runs.drain(..) {
            match merged.back_mut() {
                Some((last, count)) if *last == f => *count = count.saturating_add(n),
                _ => merged.push_back((f, n)),
            }
        }
        self.runs = merged;
        self.len = self.runs.iter().map(|(_, n)| *n as usize).sum();
        (before - self.len) as u32
    }

    /// Removes every frame; how many there were.
    pub fn clear(&mut self) -> u32 {
        let n = self.len as u32;
        self.runs.clear();
        self.len = 0;
        n
    }
}

/// One event of the stream store. Seqs are the store's, 1, 2, 3… per session.
#[derive(Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Stored {
    pub turn: TurnId,
    pub text: Option<String>,
    pub terminal: bool,
}

clone_in_place!(Stored {
    turn,
    text,
    terminal
});

/// The client's view of the stream.
#[derive(Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Client {
    pub connected: bool,
    /// Highest store seq the client has taken in (seqs arrive in order, possibly repeated).
    pub received: Seq,
    /// Highest store seq the client acknowledged.
    pub acked: Seq,
    pub disconnected_at: Option<Millis>,
    /// What the client has rendered so far, per turn, in the order turns first appeared.
    pub rendered: Vec<(TurnId, String)>,
}

clone_in_place!(Client {
    connected,
    received,
    acked,
    disconnected_at,
    rendered
});

impl Client {
    /// The text rendered so far for a turn, created empty on first use.
    pub fn text_of(&mut self, turn: &str) -> &mut String {
        let i = match self.rendered.iter().position(|(t, _)| t == turn) {
            Some(i) => i,
            None => {
                self.rendered.push((turn.into(), String::new()));
                self.rendered.len() - 1
            }
        };
        &mut self.rendered[i].1
    }
}

/// The whole session. Compared and hashed as a value, so a state can be fingerprinted; its
/// larger parts keep their hashes ([`Hashed`]): a step touches one or two of them.
#[derive(Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Session {
    /// The rule choices this session follows.
    #[serde(skip_serializing_if = "Profile::is_lab")]
    pub profile: Profile,
    /// (`livekit-agents`.) The interruption options this session was made with.
    pub interruption: Interruption,
    pub now: Millis,
    pub active_generation: Option<Generation>,
    /// The highest generation any turn of the session has used.
    pub max_generation: Option<Generation>,
    pub turns: Hashed<Vec<Turn>>,
    pub playback: Hashed<Playback>,
    /// (`livekit-agents`.) The turn whose output speech paused, and when it resumes unless a
    /// transcript confirms the interruption first: armed when the user stops speaking, `None`
    /// while they speak.
    pub paused: Option<(TurnId, Option<Millis>)>,
    /// (`livekit-agents`.) The user is speaking.
    pub user_speaking: bool,
    /// (`livekit-agents`.) When the speech going on counts as an interruption, if it lasts till
    /// then; `None` once counted, or when the user is silent.
    pub interruption_due: Option<Millis>,
    /// `store[i]` has seq `i + 1`.
    pub store: Hashed<Vec<Stored>>,
    pub client: Hashed<Client>,
}

clone_in_place!(Session {
    profile,
    interruption,
    now,
    active_generation,
    max_generation,
    paused,
    user_speaking,
    interruption_due
} parts {
    turns,
    playback,
    store,
    client
});

impl Default for Session {
    fn default() -> Session {
        Session {
            profile: Profile::Lab,
            interruption: Interruption::LIVEKIT,
            now: 0,
            active_generation: None,
            max_generation: None,
            turns: Hashed::default(),
            playback: Hashed::default(),
            paused: None,
            user_speaking: false,
            interruption_due: None,
            store: Hashed::default(),
            client: Hashed::new(Client {
                connected: true,
                ..Client::default()
            }),
        }
    }
}

impl Session {
    pub fn turn(&self, id: &str) -> Option<&Turn> {
        // Ids are unique (a second accept of one is misuse); the newest turns are the ones most
        // inputs name, so the search starts from them.
        self.turns.iter().rev().find(|t| t.id == id)
    }

    /// The highest generation a new turn may not take: every generation the session used, and
    /// the one below the generation a barge-in made active. `None` before the first turn.
    pub fn generation_floor(&self) -> Option<Generation> {
        match (self.max_generation, self.active_generation) {
            (Some(max), Some(active)) => Some(max.max(active.saturating_sub(1))),
            (max, active) => max.or(active.map(|a| a.saturating_sub(1))),
        }
    }

    /// The lowest generation a new turn may take.
    pub fn next_generation(&self) -> Generation {
        self.generation_floor().map_or(1, |f| f.saturating_add(1))
    }

    pub fn last_persisted(&self) -> Seq {
        self.store.len() as Seq
    }
}
