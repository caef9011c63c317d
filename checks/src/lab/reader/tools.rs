//! The `tool` component's own events and the `reconciler`: temporary outputs removed, a
//! non-cancellable tool's commit (sent, acknowledged, failed), a cancel it defers, and the
//! commit enqueued for reconciliation.

use turnfence_model::turn::{DeferReason, InputKind, Output};

use super::children::turn_and_child;
use super::context::{Line, Memory, Out};
use crate::trace::turn_facts::Fact;
use crate::trace::InputError;

/// `tool temporary_output.removed`: a cancelled tool's temporary outputs were removed.
pub(super) fn temporary_removed(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let d = &x.d;
    let (turn, child) = turn_and_child(x, &["synthetic_files", "child"], "tool")?;
    o.exact(Output::TemporaryOutputRemoved {
        turn,
        child,
        count: d.need_u64("synthetic_files")? as u32,
    });
    Ok(())
}

/// `tool commit.sent`: the tool sent its commit, with its idempotency key.
pub(super) fn commit_sent(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let d = &x.d;
    let (turn, child) = turn_and_child(x, &["idempotency_key", "child"], "tool")?;
    o.input(InputKind::CommitSent {
        turn,
        child,
        idempotency_key: d.need_str("idempotency_key")?,
    });
    Ok(())
}

/// `tool commit.acknowledged`, `commit.failed`: how the commit ended.
pub(super) fn commit_ended(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let (turn, child) = turn_and_child(x, &["committed_side_effects", "child"], "tool")?;
    let (t, c) = (turn.clone(), child.clone());
    match x.l.event.as_str() {
        "commit.acknowledged" => o.input(InputKind::CommitAcked { turn, child }),
        _ => o.input(InputKind::CommitFailed { turn, child }),
    }
    if let Some(count) = x.d.u64("committed_side_effects")? {
        o.fact(Fact::CommittedSideEffects {
            turn: t,
            child: c,
            count,
            claims_cancelled: false,
        });
    }
    Ok(())
}

/// `tool cancel.deferred`: the tool defers its cancel while its commit is in flight.
pub(super) fn cancel_deferred(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let d = &x.d;
    let (turn, child) = turn_and_child(x, &["reason", "child"], "tool")?;
    match d.need_str("reason")?.as_str() {
        "commit_in_flight" => o.exact(Output::CancelDeferred {
            turn,
            child,
            reason: DeferReason::CommitInFlight,
        }),
        r => return Err(InputError::at(x.line, format!("unknown reason {r:?}"))),
    }
    Ok(())
}

/// `reconciler status.enqueued`: a commit that may have happened, enqueued by its key.
pub(super) fn reconcile_enqueued(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let d = &x.d;
    let (turn, child) = turn_and_child(x, &["key", "child"], "tool")?;
    o.exact(Output::ReconcileEnqueued {
        turn,
        child,
        idempotency_key: d.need_str("key")?,
    });
    Ok(())
}
