//! A caller's mistake: an input the turn machine cannot take in its current state. The machine
//! refuses it without changing anything, and says what it expected and what came.

use std::fmt;

use serde::Serialize;

use super::types::{ChildId, Generation, Seq, TurnId};
use crate::machine::said;
use crate::Millis;

/// An input the machine refuses as the caller's mistake. The state is unchanged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "misuse", rename_all = "snake_case")]
pub enum Misuse {
    /// Inputs must come in non-decreasing virtual time.
    TimeWentBackwards {
        expected_at_least: Millis,
        got: Millis,
    },
    UnknownTurn {
        turn: TurnId,
    },
    DuplicateTurn {
        turn: TurnId,
    },
    /// A new turn's generation must be above every generation the session has used.
    StaleGeneration {
        expected_above: Generation,
        got: Generation,
    },
    /// A budget split needs a deadline to split.
    BudgetWithoutDeadline {
        turn: TurnId,
    },
    BudgetExceedsDeadline {
        turn: TurnId,
        deadline_ms: u64,
        budget_ms: u64,
    },
    UnknownChild {
        turn: TurnId,
        child: ChildId,
    },
    DuplicateChild {
        turn: TurnId,
        child: ChildId,
    },
    /// The child is not in a state that can take this input.
    ChildNotInState {
        turn: TurnId,
        child: ChildId,
        expected: &'static str,
        got: &'static str,
    },
    /// Only a non-cancellable tool commits; only a cancellable tool makes temporary outputs.
    WrongChildKind {
        turn: TurnId,
        child: ChildId,
        expected: &'static str,
    },
    /// The speaker played from an empty playback buffer.
    PlaybackEmpty,
    /// The client acknowledged or received an event the store never persisted.
    UnknownSeq {
        seq: Seq,
        last_persisted: Seq,
    },
    /// The transport handed the client an event past a gap.
    ReceiveGap {
        expected_at_most: Seq,
        got: Seq,
    },
    /// The input needs the client connected (or disconnected) and it is not.
    Connection {
        expected: &'static str,
    },
    /// A bound of the model was reached (TigerBeetle's "a limit on everything").
    LimitReached {
        what: &'static str,
        limit: usize,
    },
}

impl fmt::Display for Misuse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Misuse::*;
        match self {
            TimeWentBackwards {
                expected_at_least,
                got,
            } => said::time_went_backwards(f, *expected_at_least, *got),
            UnknownTurn { turn } => write!(f, "unknown turn {turn:?}"),
            DuplicateTurn { turn } => write!(f, "turn {turn:?} was already accepted"),
            StaleGeneration {
                expected_above,
                got,
            } => write!(
                f,
                "stale generation: expected above {expected_above}, got {got}"
            ),
            BudgetWithoutDeadline { turn } => {
                write!(f, "turn {turn:?} has a budget split but no deadline")
            }
            BudgetExceedsDeadline {
                turn,
                deadline_ms,
                budget_ms,
            } => write!(
                f,
                "turn {turn:?}: budget {budget_ms} ms exceeds deadline {deadline_ms} ms"
            ),
            UnknownChild { turn, child } => write!(f, "turn {turn:?} has no child {child:?}"),
            DuplicateChild { turn, child } => {
                write!(f, "turn {turn:?} already has a child {child:?}")
            }
            ChildNotInState {
                turn,
                child,
                expected,
                got,
            } => write!(
                f,
                "child {child:?} of turn {turn:?}: expected {expected}, got {got}"
            ),
            WrongChildKind {
                turn,
                child,
                expected,
            } => write!(f, "child {child:?} of turn {turn:?} is not {expected}"),
            PlaybackEmpty => write!(f, "frame played from an empty playback buffer"),
            UnknownSeq {
                seq,
                last_persisted,
            } => write!(
                f,
                "seq {seq} was never persisted (last persisted {last_persisted})"
            ),
            ReceiveGap {
                expected_at_most,
                got,
            } => write!(
                f,
                "client received seq {got} past a gap (expected at most {expected_at_most})"
            ),
            Connection { expected } => write!(f, "the client is not {expected}"),
            LimitReached { what, limit } => said::limit_reached(f, what, *limit),
        }
    }
}

impl std::error::Error for Misuse {}
