//! What the turn machine does ([`Output`]): serde data, the canonical trace's output lines.

use serde::{Deserialize, Serialize};

use super::types::*;

/// What the system does (SPEC §2.3). Outputs happen at the `at` of the input that caused them.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "output", rename_all = "snake_case", deny_unknown_fields)]
pub enum Output {
    /// A new turn was refused.
    TurnRefused { turn: TurnId, reason: RefuseReason },
    /// The delivery gate let a delta through to the user.
    Delivered {
        turn: TurnId,
        generation: Generation,
        seq: Seq,
    },
    /// The delivery gate dropped a delta.
    LateDropped {
        turn: TurnId,
        generation: Generation,
        seq: Seq,
        reason: DropReason,
    },
    /// The speaker played a frame of `(turn, generation, seq)` — `frames` of them, one unless said.
    Played {
        turn: TurnId,
        generation: Generation,
        seq: Seq,
        #[serde(default = "one", skip_serializing_if = "is_one")]
        frames: u32,
    },
    /// (`livekit-agents`.) The turn's output was paused: speech may be an interruption.
    PlaybackPaused { turn: TurnId },
    /// (`livekit-agents`.) The paused output goes on where it stopped: the speech was not an
    /// interruption.
    PlaybackResumed { turn: TurnId },
    /// (`livekit-agents`.) A tool call was answered (once): its result, its error, or its
    /// cancellation.
    ToolAnswered {
        turn: TurnId,
        child: ChildId,
        answer: ToolAnswer,
    },
    /// (`openai-realtime`.) The turn's audio was cut to what was heard: `heard` frames played of
    /// what its generation delivered; the rest is dropped from the conversation.
    Truncated {
        turn: TurnId,
        generation: Generation,
        heard: u32,
    },
    /// Frames were removed from the playback buffer unplayed.
    PlaybackCleared { turn: TurnId, frames: u32 },
    /// A running child was asked to stop at its next checkpoint.
    ChildCancelRequested { turn: TurnId, child: ChildId },
    /// A child stopped.
    ChildCancelled {
        turn: TurnId,
        child: ChildId,
        checkpoint: String,
    },
    /// A cancelled tool's temporary outputs were removed.
    TemporaryOutputRemoved {
        turn: TurnId,
        child: ChildId,
        count: u32,
    },
    /// A child (tool or other) started: the answer to a spawn the turn admits, and what a log
    /// reports when it says a child started.
    ChildStarted { turn: TurnId, child: ChildId },
    /// A child (tool or other) was not allowed to start.
    ToolNotStarted {
        turn: TurnId,
        child: ChildId,
        reason: NotStartedReason,
    },
    /// A child cannot be cancelled now; it will be settled later.
    CancelDeferred {
        turn: TurnId,
        child: ChildId,
        reason: DeferReason,
    },
    /// A child the system had already stopped reported (a checkpoint, or its completion) as it
    /// unwound: the report is dropped and changes nothing — a benign race real stacks log.
    ReportIgnored {
        turn: TurnId,
        child: ChildId,
        report: IgnoredReport,
    },
    /// A side effect that may have happened was handed to reconciliation.
    ReconcileEnqueued {
        turn: TurnId,
        child: ChildId,
        idempotency_key: String,
    },
    /// A stop request was answered.
    StopAnswered {
        turn: TurnId,
        request_id: String,
        answer: StopAnswer,
    },
    /// A generation was fenced off: nothing of it reaches the user any more.
    GenerationFenced {
        turn: TurnId,
        generation: Generation,
    },
    /// The turn's deadline passed while it was running.
    DeadlineExceeded { turn: TurnId },
    /// The stream store persisted an event.
    Persisted {
        turn: TurnId,
        seq: Seq,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        terminal: bool,
    },
    /// A resume was refused: no silent gap.
    ResumeRefused {
        after_seq: Seq,
        reason: ResumeRefusal,
    },
    /// The store replayed events `from..=to` to the reconnected client.
    Replayed { from: Seq, to: Seq },
    /// The client dropped an event it already had.
    DuplicateIgnored { seq: Seq },
    /// The client rendered a finished turn's whole text.
    Rendered { turn: TurnId, text: String },
    /// The turn ended.
    Terminal { turn: TurnId, state: Terminal },
}

/// How a tool call was answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ToolAnswer {
    Result,
    Error,
    Cancelled,
}

/// What a stopped child reported late.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum IgnoredReport {
    Checkpoint,
    ChildCompleted,
}

/// Why a child's cancel waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum DeferReason {
    CommitInFlight,
}

impl Output {
    /// The turn this output is about, if it is about one.
    pub fn turn(&self) -> Option<&str> {
        use Output::*;
        match self {
            TurnRefused { turn, .. }
            | Delivered { turn, .. }
            | LateDropped { turn, .. }
            | Played { turn, .. }
            | Truncated { turn, .. }
            | PlaybackPaused { turn }
            | PlaybackResumed { turn }
            | ToolAnswered { turn, .. }
            | PlaybackCleared { turn, .. }
            | ChildCancelRequested { turn, .. }
            | ChildCancelled { turn, .. }
            | TemporaryOutputRemoved { turn, .. }
            | ChildStarted { turn, .. }
            | ToolNotStarted { turn, .. }
            | CancelDeferred { turn, .. }
            | ReportIgnored { turn, .. }
            | ReconcileEnqueued { turn, .. }
            | StopAnswered { turn, .. }
            | GenerationFenced { turn, .. }
            | DeadlineExceeded { turn }
            | Persisted { turn, .. }
            | Rendered { turn, .. }
            | Terminal { turn, .. } => Some(turn),
            ResumeRefused { .. } | Replayed { .. } | DuplicateIgnored { .. } => None,
        }
    }
}
