//! Planted flaws: rules the suite must prove it catches when they are broken. Names only: a
//! machine breaks one only as `TurnMachine<Planted<Flaw>>` (`crate::plant`).

use serde::{Deserialize, Serialize};

use super::invariants::Invariant;

/// A rule of the turn machine, broken on purpose.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Flaw {
    /// The delivery gate checks the generation but not whether the turn is being cancelled.
    DeliverAfterStop,
    /// A barge-in fences the generation but leaves its frames in the playback buffer.
    KeepPlaybackOnBargeIn,
    /// A stop for a finished turn emits its terminal again.
    SecondTerminalOnRepeatedStop,
    /// A stop for a turn already being cancelled cancels it again.
    RepeatedStopRecancels,
    /// A stop ends the turn `cancelled` at once, without waiting for its children.
    CancelledBeforeChildrenStopped,
    /// A child spawned after the cancel is started like any other.
    SpawnAfterCancelRuns,
    /// The budget is never consulted: a child starts whatever time remains, even after the deadline.
    ToolStartsAfterDeadline,
    /// A cancelled turn claims `cancelled` even after a commit went through.
    CancelledAfterCommit,
    /// A cancelled tool's temporary outputs are left behind.
    TemporaryOutputsKept,
    /// A resume replays from the cursor itself instead of the event after it.
    ReplayFromCursor,
    /// The delivery gate lets deltas through whatever their seq.
    DeltaSeqUnchecked,
    /// A new turn is accepted while another still runs.
    AcceptWhileRunning,
    /// Deadlines never fire.
    DeadlineIgnored,
    /// A turn whose last child stops at a checkpoint is never settled: it hangs in cancelling.
    DrainedTurnNeverEnds,
}

impl crate::Flaw for Flaw {
    type Invariant = Invariant;

    const ALL: &'static [Flaw] = &[
        Flaw::DeliverAfterStop,
        Flaw::KeepPlaybackOnBargeIn,
        Flaw::SecondTerminalOnRepeatedStop,
        Flaw::RepeatedStopRecancels,
        Flaw::CancelledBeforeChildrenStopped,
        Flaw::SpawnAfterCancelRuns,
        Flaw::ToolStartsAfterDeadline,
        Flaw::CancelledAfterCommit,
        Flaw::TemporaryOutputsKept,
        Flaw::ReplayFromCursor,
        Flaw::DeltaSeqUnchecked,
        Flaw::AcceptWhileRunning,
        Flaw::DeadlineIgnored,
        Flaw::DrainedTurnNeverEnds,
    ];

    /// The invariant this flaw breaks first.
    fn breaks(self) -> Invariant {
        match self {
            Flaw::DeliverAfterStop | Flaw::KeepPlaybackOnBargeIn => Invariant::NoLateDelivery,
            Flaw::SecondTerminalOnRepeatedStop => Invariant::OneTerminalState,
            Flaw::RepeatedStopRecancels => Invariant::IdempotentStop,
            Flaw::CancelledBeforeChildrenStopped | Flaw::SpawnAfterCancelRuns => {
                Invariant::CancelTreeDrained
            }
            Flaw::ToolStartsAfterDeadline | Flaw::DeadlineIgnored => Invariant::DeadlineRespected,
            Flaw::CancelledAfterCommit => Invariant::NoFalseCancelClaim,
            Flaw::TemporaryOutputsKept => Invariant::CancelledToolLeavesNothing,
            Flaw::ReplayFromCursor => Invariant::ReplayExactlyOnce,
            Flaw::DeltaSeqUnchecked => Invariant::SeqMonotonic,
            Flaw::AcceptWhileRunning => Invariant::SingleRunningTurn,
            Flaw::DrainedTurnNeverEnds => Invariant::QuiescentTurnsTerminal,
        }
    }
}
