//! The turn machine's input kinds and outputs as the one pass reads them: externally tagged
//! mirrors of the model's enums (serde's `remote`), each variant read straight from the line's
//! entries after its tag, its name being the tag's value.
//!
//! The model's own enums are internally tagged (`"input": "delta"` beside the fields), which serde
//! reads by buffering the whole object before it looks at the tag. These read the same lines into
//! the same values without that buffer; the model's types stay the reference (the one pass's test
//! holds the two to the same events), and a line these refuse is read by them.
//!
//! Each mirror has every variant and field of the model's enum and its defaults: a field added to
//! the model does not compile here, and neither does a variant (the mirror's `Serialize`, never
//! called, matches every variant).

use serde::{Deserialize, Deserializer, Serialize};
use turnfence_model::turn::{
    Budget, ChildId, ChildKind, DeferReason, DropReason, Generation, IgnoredReport, InputKind,
    Mode, NotStartedReason, Output, RefuseReason, ResumeRefusal, Seq, StopAnswer, Terminal,
    ToolAnswer, TurnId,
};

/// An input's kind from a line's entries after its tag, the tag's value naming it.
pub(in crate::trace) fn input_kind<'de, D: Deserializer<'de>>(
    line: D,
) -> Result<InputKind, D::Error> {
    Input::deserialize(line)
}

/// An output from a line's entries after its tag, the tag's value naming it.
pub(in crate::trace) fn output<'de, D: Deserializer<'de>>(line: D) -> Result<Output, D::Error> {
    Out::deserialize(line)
}

/// [`InputKind`], read from the entries after its tag.
#[derive(Serialize, Deserialize)]
#[serde(remote = "InputKind", rename_all = "snake_case", deny_unknown_fields)]
#[allow(dead_code)] // `serialize` is never called: it is there for its match of every variant.
enum Input {
    Accept {
        turn: TurnId,
        generation: Generation,
        #[serde(default)]
        mode: Mode,
        #[serde(default)]
        deadline_ms: Option<u64>,
        #[serde(default)]
        budget: Option<Budget>,
        #[serde(default = "yes")]
        interruptible: bool,
    },
    Spawn {
        turn: TurnId,
        child: ChildId,
        kind: ChildKind,
        #[serde(default)]
        need_ms: Option<u64>,
        #[serde(default)]
        timeout_ms: Option<u64>,
    },
    ChildCompleted {
        turn: TurnId,
        child: ChildId,
    },
    ChildFailed {
        turn: TurnId,
        child: ChildId,
    },
    Checkpoint {
        turn: TurnId,
        child: ChildId,
        phase: String,
        #[serde(default)]
        temporary_outputs: u32,
    },
    Delta {
        turn: TurnId,
        generation: Generation,
        seq: Seq,
        #[serde(default)]
        text: Option<String>,
        #[serde(default)]
        frames: u32,
    },
    ModelDone {
        turn: TurnId,
    },
    FramePlayed {
        #[serde(default = "one")]
        frames: u32,
    },
    Stop {
        turn: TurnId,
        request_id: String,
    },
    SpeechStarted {
        confidence: f64,
        #[serde(default)]
        since: Option<turnfence_model::Millis>,
    },
    SpeechStopped,
    Transcribed,
    CommitSent {
        turn: TurnId,
        child: ChildId,
        idempotency_key: String,
    },
    CommitAcked {
        turn: TurnId,
        child: ChildId,
    },
    CommitFailed {
        turn: TurnId,
        child: ChildId,
    },
    Tick,
    ClientAck {
        seq: Seq,
    },
    Disconnect,
    Resume {
        after_seq: Seq,
    },
    ClientReceive {
        seq: Seq,
    },
}

/// [`Output`], read from the entries after its tag.
#[derive(Serialize, Deserialize)]
#[serde(remote = "Output", rename_all = "snake_case", deny_unknown_fields)]
#[allow(dead_code)] // `serialize` is never called: it is there for its match of every variant.
enum Out {
    TurnRefused {
        turn: TurnId,
        reason: RefuseReason,
    },
    Delivered {
        turn: TurnId,
        generation: Generation,
        seq: Seq,
    },
    LateDropped {
        turn: TurnId,
        generation: Generation,
        seq: Seq,
        reason: DropReason,
    },
    Played {
        turn: TurnId,
        generation: Generation,
        seq: Seq,
        #[serde(default = "one")]
        frames: u32,
    },
    PlaybackPaused {
        turn: TurnId,
    },
    PlaybackResumed {
        turn: TurnId,
    },
    ToolAnswered {
        turn: TurnId,
        child: ChildId,
        answer: ToolAnswer,
    },
    Truncated {
        turn: TurnId,
        generation: Generation,
        heard: u32,
    },
    PlaybackCleared {
        turn: TurnId,
        frames: u32,
    },
    ChildCancelRequested {
        turn: TurnId,
        child: ChildId,
    },
    ChildCancelled {
        turn: TurnId,
        child: ChildId,
        checkpoint: String,
    },
    TemporaryOutputRemoved {
        turn: TurnId,
        child: ChildId,
        count: u32,
    },
    ChildStarted {
        turn: TurnId,
        child: ChildId,
    },
    ToolNotStarted {
        turn: TurnId,
        child: ChildId,
        reason: NotStartedReason,
    },
    CancelDeferred {
        turn: TurnId,
        child: ChildId,
        reason: DeferReason,
    },
    ReportIgnored {
        turn: TurnId,
        child: ChildId,
        report: IgnoredReport,
    },
    ReconcileEnqueued {
        turn: TurnId,
        child: ChildId,
        idempotency_key: String,
    },
    StopAnswered {
        turn: TurnId,
        request_id: String,
        answer: StopAnswer,
    },
    GenerationFenced {
        turn: TurnId,
        generation: Generation,
    },
    DeadlineExceeded {
        turn: TurnId,
    },
    Persisted {
        turn: TurnId,
        seq: Seq,
        #[serde(default)]
        text: Option<String>,
        #[serde(default)]
        terminal: bool,
    },
    ResumeRefused {
        after_seq: Seq,
        reason: ResumeRefusal,
    },
    Replayed {
        from: Seq,
        to: Seq,
    },
    DuplicateIgnored {
        seq: Seq,
    },
    Rendered {
        turn: TurnId,
        text: String,
    },
    Terminal {
        turn: TurnId,
        state: Terminal,
    },
}

fn yes() -> bool {
    true
}

fn one() -> u32 {
    1
}
