//! The turn machine's alphabet: what happens to the system ([`Input`]) and the small value types
//! it shares with what the system does (`output.rs`). Everything here is serde data; the JSON
//! form is the canonical trace form.

use serde::{Deserialize, Serialize};

use crate::Millis;

/// A turn's id, as the client and the logs know it.
pub type TurnId = compact_str::CompactString;
/// A child's id, unique within its turn.
pub type ChildId = compact_str::CompactString;
/// A response generation. Only the session's active generation may reach the user.
pub type Generation = u64;
/// A sequence number: of a delta within a `(turn, generation)`, or of an event in the stream store.
pub type Seq = u64;

/// How the turn's response reaches the user. Only audio turns can be barged in on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    #[default]
    Text,
    Audio,
}

/// How a turn's deadline is split between its stages. The sum never exceeds the deadline.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Budget {
    pub retrieval_ms: u64,
    pub model_ms: u64,
    pub reserve_ms: u64,
}

impl Budget {
    /// The whole split, saturating rather than overflowing on absurd inputs.
    pub fn total_ms(&self) -> u64 {
        self.retrieval_ms
            .saturating_add(self.model_ms)
            .saturating_add(self.reserve_ms)
    }
}

/// What kind of work a child of a turn does.
#[derive(Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ChildKind {
    Retrieval,
    Model,
    Tts,
    Tool { name: String, cancellable: bool },
}

/// A clone in place keeps a tool's name's buffer (a copy of a turn's state allocates nothing).
impl Clone for ChildKind {
    fn clone(&self) -> ChildKind {
        match self {
            ChildKind::Retrieval => ChildKind::Retrieval,
            ChildKind::Model => ChildKind::Model,
            ChildKind::Tts => ChildKind::Tts,
            ChildKind::Tool { name, cancellable } => ChildKind::Tool {
                name: name.clone(),
                cancellable: *cancellable,
            },
        }
    }

    fn clone_from(&mut self, source: &ChildKind) {
        match (self, source) {
            (
                ChildKind::Tool { name, cancellable },
                ChildKind::Tool {
                    name: n,
                    cancellable: c,
                },
            ) => {
                name.clone_from(n);
                *cancellable = *c;
            }
            (this, source) => *this = source.clone(),
        }
    }
}

impl ChildKind {
    pub fn is_tool(&self) -> bool {
        matches!(self, ChildKind::Tool { .. })
    }

    pub fn is_cancellable_tool(&self) -> bool {
        matches!(
            self,
            ChildKind::Tool {
                cancellable: true,
                ..
            }
        )
    }

    pub fn is_noncancellable_tool(&self) -> bool {
        matches!(
            self,
            ChildKind::Tool {
                cancellable: false,
                ..
            }
        )
    }
}

/// Why a turn is being cancelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    Stop,
    BargeIn,
    Deadline,
}

/// The code of a failed turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum FailCode {
    #[serde(rename = "DEADLINE_EXCEEDED")]
    DeadlineExceeded,
}

/// The one state a turn ends in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Terminal {
    Completed,
    Cancelled,
    Failed { code: FailCode },
    ReconcileRequired,
}

impl Terminal {
    /// The upper-case name the lab's logs use (`COMPLETED`, `DEADLINE_EXCEEDED`, …).
    pub fn label(&self) -> &'static str {
        match self {
            Terminal::Completed => "COMPLETED",
            Terminal::Cancelled => "CANCELLED",
            Terminal::Failed {
                code: FailCode::DeadlineExceeded,
            } => "DEADLINE_EXCEEDED",
            Terminal::ReconcileRequired => "RECONCILE_REQUIRED",
        }
    }
}

/// The answer to a client's stop request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum StopAnswer {
    /// This stop moved the turn: it is the turn's one cancel effect.
    Requested,
    /// The turn was already being cancelled (by a stop, a barge-in or its deadline).
    AlreadyRequested,
    /// The turn had already ended; the state is the stable answer.
    AlreadyTerminal { state: Terminal },
}

/// Why a delta was dropped at the delivery gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// The delta's generation is not the session's active generation (or not its turn's).
    StaleGeneration,
    /// Its turn is being cancelled.
    CancelRequested,
    /// Its turn has ended.
    Terminal,
    /// Its seq is not the next one for its `(turn, generation)`.
    OutOfOrder,
}

impl DropReason {
    /// The reason's name in the canonical form.
    pub fn name(self) -> &'static str {
        match self {
            DropReason::StaleGeneration => "stale_generation",
            DropReason::CancelRequested => "cancel_requested",
            DropReason::Terminal => "terminal",
            DropReason::OutOfOrder => "out_of_order",
        }
    }
}

/// Why a child was not started.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum NotStartedReason {
    /// The remaining time before the deadline is below what the child needs.
    NoBudget,
    /// The turn is being cancelled or has ended.
    TurnCancelled,
}

/// Why a new turn was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RefuseReason {
    /// Another turn of the session is still running.
    ActiveTurnExists,
}

/// Why a resume was refused instead of replaying.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ResumeRefusal {
    /// The cursor names an event the store never persisted.
    UnknownCursor,
    /// The client stayed away longer than the resume window.
    Expired,
}

impl ResumeRefusal {
    /// The refusal's name in the canonical form.
    pub fn name(self) -> &'static str {
        match self {
            ResumeRefusal::UnknownCursor => "unknown_cursor",
            ResumeRefusal::Expired => "expired",
        }
    }
}

/// One thing that happens to the system, at virtual time `at`.
pub type Input = crate::Timed<InputKind>;

impl crate::TickKind for InputKind {
    const TICK: InputKind = InputKind::Tick;
}

impl Input {
    /// The turn this input names, if it names one.
    pub fn turn(&self) -> Option<&str> {
        use InputKind::*;
        match &self.kind {
            Accept { turn, .. }
            | Spawn { turn, .. }
            | ChildCompleted { turn, .. }
            | ChildFailed { turn, .. }
            | Checkpoint { turn, .. }
            | Delta { turn, .. }
            | ModelDone { turn }
            | Stop { turn, .. }
            | CommitSent { turn, .. }
            | CommitAcked { turn, .. }
            | CommitFailed { turn, .. } => Some(turn),
            FramePlayed { .. }
            | SpeechStarted { .. }
            | SpeechStopped
            | Transcribed
            | Tick
            | ClientAck { .. }
            | Disconnect
            | Resume { .. }
            | ClientReceive { .. } => None,
        }
    }
}

/// The kinds of input (SPEC §2.2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "input", rename_all = "snake_case", deny_unknown_fields)]
pub enum InputKind {
    /// A new turn. `deadline_ms` is relative to `at`.
    Accept {
        turn: TurnId,
        generation: Generation,
        #[serde(default)]
        mode: Mode,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        deadline_ms: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        budget: Option<Budget>,
        /// (`livekit-agents`.) Speech does not interrupt it.
        #[serde(default = "yes", skip_serializing_if = "is_true")]
        interruptible: bool,
    },
    /// A child of the turn asks to start. `need_ms` is the time it needs; by default the budget's
    /// share for its kind (retrieval, model), else nothing.
    Spawn {
        turn: TurnId,
        child: ChildId,
        kind: ChildKind,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        need_ms: Option<u64>,
        /// (`pipecat`.) A tool call is cancelled when it has run this long (relative to `at`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
    },
    /// A child finished its work.
    ChildCompleted { turn: TurnId, child: ChildId },
    /// A child ended in an error, without a result.
    ChildFailed { turn: TurnId, child: ChildId },
    /// A child reached a cooperative checkpoint; a cancellable tool may create temporary outputs.
    Checkpoint {
        turn: TurnId,
        child: ChildId,
        phase: String,
        #[serde(default, skip_serializing_if = "is_zero")]
        temporary_outputs: u32,
    },
    /// Model output for `(turn, generation, seq)`; `frames` audio frames go to the playback buffer.
    Delta {
        turn: TurnId,
        generation: Generation,
        seq: Seq,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        #[serde(default, skip_serializing_if = "is_zero")]
        frames: u32,
    },
    /// The model finished its response for the turn.
    ModelDone { turn: TurnId },
    /// The speaker consumed the head of the playback buffer: `frames` frames of it (one unless
    /// said; a profile measuring audio in milliseconds plays a stretch at once).
    FramePlayed {
        #[serde(default = "one", skip_serializing_if = "is_one")]
        frames: u32,
    },
    /// The client asked to stop the turn (`turn.cancel`).
    Stop { turn: TurnId, request_id: String },
    /// Voice activity detection heard the user start speaking. `since`: the time the speech
    /// counts from, where that is not now (`livekit-agents`: the detector dates a speech's start
    /// before it says so, and speech counts as an interruption from its start).
    SpeechStarted {
        confidence: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        since: Option<Millis>,
    },
    /// Voice activity detection heard the user stop speaking.
    SpeechStopped,
    /// A final transcript of the user's speech came: it was words, not noise.
    Transcribed,
    /// A non-cancellable tool sent its commit, keyed for idempotency.
    CommitSent {
        turn: TurnId,
        child: ChildId,
        idempotency_key: String,
    },
    /// The commit was acknowledged: the side effect happened.
    CommitAcked { turn: TurnId, child: ChildId },
    /// The commit failed in a way that does not prove it did not happen.
    CommitFailed { turn: TurnId, child: ChildId },
    /// Time passes; deadlines fire.
    Tick,
    /// The client acknowledged every stream event up to `seq`.
    ClientAck { seq: Seq },
    /// The client's connection dropped.
    Disconnect,
    /// The client reconnected, asking for every event after `after_seq`.
    Resume { after_seq: Seq },
    /// The transport handed the client the stream event `seq` (at least once: it may repeat).
    ClientReceive { seq: Seq },
}

impl InputKind {
    /// The speaker consumed one frame.
    pub const FRAME_PLAYED: InputKind = InputKind::FramePlayed { frames: 1 };

    /// The kind's name in the canonical form (its `input` tag).
    pub fn name(&self) -> &'static str {
        use InputKind::*;
        match self {
            Accept { .. } => "accept",
            Spawn { .. } => "spawn",
            ChildCompleted { .. } => "child_completed",
            ChildFailed { .. } => "child_failed",
            Checkpoint { .. } => "checkpoint",
            Delta { .. } => "delta",
            ModelDone { .. } => "model_done",
            FramePlayed { .. } => "frame_played",
            Stop { .. } => "stop",
            SpeechStarted { .. } => "speech_started",
            SpeechStopped => "speech_stopped",
            Transcribed => "transcribed",
            CommitSent { .. } => "commit_sent",
            CommitAcked { .. } => "commit_acked",
            CommitFailed { .. } => "commit_failed",
            Tick => "tick",
            ClientAck { .. } => "client_ack",
            Disconnect => "disconnect",
            Resume { .. } => "resume",
            ClientReceive { .. } => "client_receive",
        }
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

pub(super) fn one() -> u32 {
    1
}

pub(super) fn is_one(n: &u32) -> bool {
    *n == 1
}
