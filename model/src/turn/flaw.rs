//! Planted flaws: rules the suite must prove it catches when they are broken. Names only: a
//! machine breaks one only as `TurnMachine<Planted<Flaw>>` (`crate::plant`).

use super::invariants::Invariant;
use super::Profile;

flaws! {
    /// The delivery gate checks the generation but not whether the turn is being cancelled.
    DeliverAfterStop => NoLateDelivery,
    /// A barge-in fences the generation but leaves its frames in the playback buffer.
    KeepPlaybackOnBargeIn => NoLateDelivery,
    /// A stop for a finished turn emits its terminal again.
    SecondTerminalOnRepeatedStop => OneTerminalState,
    /// A stop for a turn already being cancelled cancels it again.
    RepeatedStopRecancels => IdempotentStop,
    /// A stop ends the turn `cancelled` at once, without waiting for its children.
    CancelledBeforeChildrenStopped => CancelTreeDrained,
    /// A child spawned after the cancel is started like any other.
    SpawnAfterCancelRuns => CancelTreeDrained,
    /// The budget is never consulted: a child starts whatever time remains, even after the deadline.
    ToolStartsAfterDeadline => DeadlineRespected,
    /// A cancelled turn claims `cancelled` even after a commit went through.
    CancelledAfterCommit => NoFalseCancelClaim,
    /// A cancelled tool's temporary outputs are left behind.
    TemporaryOutputsKept => CancelledToolLeavesNothing,
    /// A resume replays from the cursor itself instead of the event after it.
    ReplayFromCursor => ReplayExactlyOnce,
    /// The delivery gate lets deltas through whatever their seq.
    DeltaSeqUnchecked => SeqMonotonic,
    /// A new turn is accepted while another still runs.
    AcceptWhileRunning => SingleRunningTurn,
    /// Deadlines never fire.
    DeadlineIgnored => DeadlineRespected,
    /// A turn whose last child stops at a checkpoint is never settled: it hangs in cancelling.
    DrainedTurnNeverEnds => QuiescentTurnsTerminal,
    /// (`openai-realtime`.) A barge-in clears playback and cancels, but never truncates: the
    /// conversation keeps audio the user never heard.
    NoTruncateOnBargeIn => TruncatedToHeard,
    /// (`openai-realtime`.) The truncation point is what was delivered (sent downstream, or a
    /// wall clock), not what was played.
    TruncateAtDelivered => TruncatedToHeard,
    /// (`openai-realtime`.) Once a turn ended, speech no longer interrupts it: its audio still
    /// buffered downstream plays on.
    BargeInIgnoredAfterDone => TruncatedToHeard,
    /// (`openai-realtime`.) A new turn is accepted as soon as the previous one's cancel was
    /// requested, before that turn ended.
    CreateWhileCancelling => OneActiveResponse,
    /// (`openai-realtime`.) A stop for a turn that already ended cancels the turn active now.
    StaleCancelHitsActive => CancelTargetsItsResponse,
    /// (`livekit-agents`.) A tool that finishes after its turn was interrupted is never answered:
    /// its result is lost, and the next inference runs it again.
    ToolResultDroppedOnInterruption => ToolCallSettled,
    /// (`livekit-agents`.) A result reported after its call was cancelled is answered too.
    ToolAnsweredAfterCancel => ToolCallSettled,
    /// (`livekit-agents`.) A pause whose speech brings no transcript is never resumed: the
    /// session is wedged.
    PauseNeverDecided => InterruptionDecidedOnce,
    /// (`livekit-agents`.) A confirmed interruption leaves the pause's timer armed: the output
    /// resumes after it was interrupted.
    ResumeAfterInterruption => InterruptionDecidedOnce,
    /// (`livekit-agents`.) A resume drops the output queued while paused.
    ResumeDropsBuffered => InterruptionDecidedOnce,
    /// (`livekit-agents`.) Speech pauses an uninterruptible turn like any other.
    UninterruptibleIsPaused => UninterruptibleOutputSurvives,
}

impl Flaw {
    /// The profile whose rule the flaw breaks: the machine it is planted in follows it.
    pub fn profile(self) -> Profile {
        match self {
            Flaw::NoTruncateOnBargeIn
            | Flaw::TruncateAtDelivered
            | Flaw::BargeInIgnoredAfterDone
            | Flaw::CreateWhileCancelling
            | Flaw::StaleCancelHitsActive => Profile::OpenaiRealtime,
            Flaw::ToolResultDroppedOnInterruption
            | Flaw::ToolAnsweredAfterCancel
            | Flaw::PauseNeverDecided
            | Flaw::ResumeAfterInterruption
            | Flaw::ResumeDropsBuffered
            | Flaw::UninterruptibleIsPaused => Profile::LivekitAgents,
            _ => Profile::Lab,
        }
    }
}
