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
use crate::Millis;

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
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
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

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
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
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
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
}

impl Turn {
    pub fn child(&self, id: &str) -> Option<&Child> {
        self.children.iter().find(|c| c.id == id)
    }

    pub fn has_pending_children(&self) -> bool {
        self.children.iter().any(|c| c.state.is_pending())
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

/// One event of the stream store. Seqs are the store's, 1, 2, 3… per session.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Stored {
    pub turn: TurnId,
    pub text: Option<String>,
    pub terminal: bool,
}

/// The client's view of the stream.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
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

impl Client {
    /// The text rendered so far for a turn, created empty on first use.
    pub fn text_of(&mut self, turn: &str) -> &mut String {
        let i = match self.rendered.iter().position(|(t, _)| t == turn) {
            Some(i) => i,
            None => {
                self.rendered.push((turn.to_owned(), String::new()));
                self.rendered.len() - 1
            }
        };
        &mut self.rendered[i].1
    }
}

/// The whole session. Compared and hashed as a value, so a state can be fingerprinted.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Session {
    pub now: Millis,
    pub active_generation: Option<Generation>,
    /// The highest generation any turn of the session has used.
    pub max_generation: Option<Generation>,
    pub turns: Vec<Turn>,
    pub playback: VecDeque<Frame>,
    /// `store[i]` has seq `i + 1`.
    pub store: Vec<Stored>,
    pub client: Client,
}

impl Default for Session {
    fn default() -> Session {
        Session {
            now: 0,
            active_generation: None,
            max_generation: None,
            turns: Vec::new(),
            playback: VecDeque::new(),
            store: Vec::new(),
            client: Client {
                connected: true,
                ..Client::default()
            },
        }
    }
}

impl Session {
    pub fn turn(&self, id: &str) -> Option<&Turn> {
        self.turns.iter().find(|t| t.id == id)
    }

    pub fn last_persisted(&self) -> Seq {
        self.store.len() as Seq
    }
}
