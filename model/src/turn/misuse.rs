//! A caller's mistake: an input the turn machine cannot take in its current state. The machine
//! refuses it without changing anything, and says what it expected and what came.

use super::types::{ChildId, Generation, Seq, TurnId};

misuse! {
    UnknownTurn { turn: TurnId } => "unknown turn {turn:?}",
    DuplicateTurn { turn: TurnId } => "turn {turn:?} was already accepted",
    /// A new turn's generation must be above every generation the session has used.
    StaleGeneration { expected_above: Generation, got: Generation } =>
        "stale generation: expected above {expected_above}, got {got}",
    /// A budget split needs a deadline to split.
    BudgetWithoutDeadline { turn: TurnId } => "turn {turn:?} has a budget split but no deadline",
    BudgetExceedsDeadline { turn: TurnId, deadline_ms: u64, budget_ms: u64 } =>
        "turn {turn:?}: budget {budget_ms} ms exceeds deadline {deadline_ms} ms",
    UnknownChild { turn: TurnId, child: ChildId } => "turn {turn:?} has no child {child:?}",
    DuplicateChild { turn: TurnId, child: ChildId } =>
        "turn {turn:?} already has a child {child:?}",
    /// The child is not in a state that can take this input.
    ChildNotInState { turn: TurnId, child: ChildId, expected: &'static str, got: &'static str } =>
        "child {child:?} of turn {turn:?}: expected {expected}, got {got}",
    /// Only a non-cancellable tool commits; only a cancellable tool makes temporary outputs.
    WrongChildKind { turn: TurnId, child: ChildId, expected: &'static str } =>
        "child {child:?} of turn {turn:?} is not {expected}",
    /// The speaker played from an empty playback buffer.
    PlaybackEmpty => "frame played from an empty playback buffer",
    /// The speaker played more frames than the buffer held (or none at all).
    PlayedBeyondBuffer { frames: u32, buffered: usize } =>
        "{frames} frames played from a playback buffer holding {buffered}",
    /// The speaker played while the output was paused.
    PlaybackPaused => "frame played while the output is paused",
    /// The input needs a rule choice the machine's profile does not make.
    ProfileLacks { what: &'static str, profile: &'static str } =>
        "{what} need a profile that has them; this machine follows {profile}",
    /// The client acknowledged or received an event the store never persisted.
    UnknownSeq { seq: Seq, last_persisted: Seq } =>
        "seq {seq} was never persisted (last persisted {last_persisted})",
    /// The transport handed the client an event past a gap.
    ReceiveGap { expected_at_most: Seq, got: Seq } =>
        "client received seq {got} past a gap (expected at most {expected_at_most})",
    /// The input needs the client connected (or disconnected) and it is not.
    Connection { expected: &'static str } => "the client is not {expected}",
}
