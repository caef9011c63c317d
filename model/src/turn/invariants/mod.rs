//! The eleven turn invariants of SPEC §2.5, as a monitor over what happened: inputs and the
//! outputs each one caused. The monitor never looks inside a machine, so it judges the model, a
//! flawed model and a real system's trace alike.
//!
//! Each invariant is an `always` property with a paired `sometimes` ([`crate::Invariant::reached`]): a
//! run in which an invariant was never put to the test proves nothing about it.
//!
//! Feed the monitor `input`, then that input's outputs, then `end_step`; call `finish` at the end.
//! The named functions ([`one_terminal_state`], …) run it over a recorded [`Step`] sequence.
//!
//! The monitor is "memory + handlers": `memory` holds what it remembers of a run and the
//! [`crate::Monitor`] interface; `handlers` takes each input, output and end of step to the
//! handler of its subject — `turns` (turns, their children, stops and deadlines), `terminal` (a
//! turn's terminal state) and `delivery` (what was delivered, played, persisted, replayed and
//! rendered).

use serde::{Deserialize, Serialize};

use super::output::*;
use super::types::*;
use crate::Monitor as _;

mod delivery;
mod handlers;
mod livekit;
mod memory;
mod realtime;
mod rename;
mod terminal;
mod turns;

pub use memory::Monitor;

/// The turn invariants. Their names are fixed (SPEC §2.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Invariant {
    OneTerminalState,
    IdempotentStop,
    NoLateDelivery,
    CancelTreeDrained,
    DeadlineRespected,
    NoFalseCancelClaim,
    CancelledToolLeavesNothing,
    ReplayExactlyOnce,
    SeqMonotonic,
    SingleRunningTurn,
    QuiescentTurnsTerminal,
    TruncatedToHeard,
    OneActiveResponse,
    CancelTargetsItsResponse,
    ToolCallSettled,
    InterruptionDecidedOnce,
    UninterruptibleOutputSurvives,
}

impl crate::Invariant for Invariant {
    const ALL: &'static [Invariant] = &[
        Invariant::OneTerminalState,
        Invariant::IdempotentStop,
        Invariant::NoLateDelivery,
        Invariant::CancelTreeDrained,
        Invariant::DeadlineRespected,
        Invariant::NoFalseCancelClaim,
        Invariant::CancelledToolLeavesNothing,
        Invariant::ReplayExactlyOnce,
        Invariant::SeqMonotonic,
        Invariant::SingleRunningTurn,
        Invariant::QuiescentTurnsTerminal,
        Invariant::TruncatedToHeard,
        Invariant::OneActiveResponse,
        Invariant::CancelTargetsItsResponse,
        Invariant::ToolCallSettled,
        Invariant::InterruptionDecidedOnce,
        Invariant::UninterruptibleOutputSurvives,
    ];

    fn name(self) -> &'static str {
        match self {
            Invariant::OneTerminalState => "one_terminal_state",
            Invariant::IdempotentStop => "idempotent_stop",
            Invariant::NoLateDelivery => "no_late_delivery",
            Invariant::CancelTreeDrained => "cancel_tree_drained",
            Invariant::DeadlineRespected => "deadline_respected",
            Invariant::NoFalseCancelClaim => "no_false_cancel_claim",
            Invariant::CancelledToolLeavesNothing => "cancelled_tool_leaves_nothing",
            Invariant::ReplayExactlyOnce => "replay_exactly_once",
            Invariant::SeqMonotonic => "seq_monotonic",
            Invariant::SingleRunningTurn => "single_running_turn",
            Invariant::QuiescentTurnsTerminal => "quiescent_turns_terminal",
            Invariant::TruncatedToHeard => "truncated_to_heard",
            Invariant::OneActiveResponse => "one_active_response",
            Invariant::CancelTargetsItsResponse => "cancel_targets_its_response",
            Invariant::ToolCallSettled => "tool_call_settled",
            Invariant::InterruptionDecidedOnce => "interruption_decided_once",
            Invariant::UninterruptibleOutputSurvives => "uninterruptible_output_survives",
        }
    }

    /// What a run must show for this invariant to have been put to the test (its `sometimes`).
    fn reached(self) -> &'static str {
        match self {
            Invariant::OneTerminalState => "a turn reached a terminal state",
            Invariant::IdempotentStop => "a stop was answered for a turn already stopping or ended",
            Invariant::NoLateDelivery => "the gate dropped a delta, or playback was cleared",
            Invariant::CancelTreeDrained => "a turn with a stopped child ended cancelled or failed",
            Invariant::DeadlineRespected => "a deadline fired",
            Invariant::NoFalseCancelClaim => "a turn ended reconcile_required",
            Invariant::CancelledToolLeavesNothing => {
                "a cancelled tool's temporary outputs were removed"
            }
            Invariant::ReplayExactlyOnce => "a resume replayed and the client rendered a turn",
            Invariant::SeqMonotonic => "a second delta of one generation was delivered",
            Invariant::SingleRunningTurn => "a turn was accepted or refused beside another",
            Invariant::QuiescentTurnsTerminal => "a turn past its deadline ended",
            Invariant::TruncatedToHeard => {
                "an interrupted turn's audio was cleared and the turn truncated to what was heard"
            }
            Invariant::OneActiveResponse => {
                "a turn was accepted or refused while another had not ended"
            }
            Invariant::CancelTargetsItsResponse => {
                "a stop named a turn that had ended while another was active"
            }
            Invariant::ToolCallSettled => "a tool call of an interrupted turn was answered",
            Invariant::InterruptionDecidedOnce => "a paused output was resumed",
            Invariant::UninterruptibleOutputSurvives => {
                "speech started while an uninterruptible turn was speaking"
            }
        }
    }
}

named! {
    /// Every turn reaches at most one terminal state and never leaves it.
    one_terminal_state => OneTerminalState;
    /// Per turn at most one cancel effect; every stop is answered; later answers agree with the
    /// terminal state.
    idempotent_stop => IdempotentStop;
    /// Nothing is delivered or played for a generation other than the active one, or for a turn
    /// that is cancel-requested or terminal.
    no_late_delivery => NoLateDelivery;
    /// A turn ends only after every child stopped; a child spawned after the cancel never runs.
    cancel_tree_drained => CancelTreeDrained;
    /// Nothing starts after the deadline (or with less time left than it needs); a turn still
    /// running at its deadline ends `failed{DEADLINE_EXCEEDED}`.
    deadline_respected => DeadlineRespected;
    /// A committed or possibly-committed side effect means the turn ends `reconcile_required`
    /// with the key enqueued (or, for a known commit, `completed`) — never `cancelled`/`failed`.
    no_false_cancel_claim => NoFalseCancelClaim;
    /// A cancelled cancellable tool leaves no temporary output and no committed effect.
    cancelled_tool_leaves_nothing => CancelledToolLeavesNothing;
    /// A replay starts right after the cursor; rendered text equals persisted text, each piece
    /// once, in order.
    replay_exactly_once => ReplayExactlyOnce;
    /// Delivered seqs per (turn, generation) are 1, 2, 3…
    seq_monotonic => SeqMonotonic;
    /// At most one turn per session is running.
    single_running_turn => SingleRunningTurn;
    /// Once every child is resolved and the deadline has passed, the turn is terminal.
    quiescent_turns_terminal => QuiescentTurnsTerminal;
    /// (`openai-realtime`.) When an interruption clears audio of a turn before it all played, the
    /// turn is truncated, in the same step, to exactly what was heard — never past what was
    /// delivered; speech while audio is still to play clears it, whether or not its turn ended.
    truncated_to_heard => TruncatedToHeard;
    /// (`openai-realtime`.) At most one turn is active: none is accepted before the previous one
    /// ended — a cancel is acknowledged by the turn's own terminal, not by the request.
    one_active_response => OneActiveResponse;
    /// (`openai-realtime`.) A stop acts on the turn it names only: a stop for a turn that ended
    /// never cancels its successor.
    cancel_targets_its_response => CancelTargetsItsResponse;
    /// (`livekit-agents`.) Every tool call that started is answered exactly once — a result, an
    /// error or its cancellation — before its turn ends, never for a call that did not start and
    /// never again after its cancellation.
    tool_call_settled => ToolCallSettled;
    /// (`livekit-agents`.) A pause ends in exactly one decision — resumed, or interrupted — and
    /// in time: nothing plays while paused, a resume drops nothing and plays nothing twice.
    interruption_decided_once => InterruptionDecidedOnce;
    /// (`livekit-agents`.) Speech neither pauses, clears nor fences an uninterruptible turn.
    uninterruptible_output_survives => UninterruptibleOutputSurvives;
}
