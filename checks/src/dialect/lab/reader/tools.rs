//! The `tool` component's own events and the `reconciler`: temporary outputs removed, a
//! non-cancellable tool's commit (sent, acknowledged, failed), a cancel it defers, and the
//! commit enqueued for reconciliation.

use turnfence_model::turn::{InputKind, Output};

use super::children::turn_and_child;
use super::context::{Line, Memory, Out};
use super::detail::{from_name, Detail};
use crate::trace::InputError;

/// The turn and the tool a `tool` or `reconciler` line is about, and the value of the one
/// detail key it has beside `child`, read by `read`.
fn tool_and<T>(
    x: &Line,
    key: &str,
    read: fn(&Detail, &str) -> Result<T, InputError>,
) -> Result<(String, String, T), InputError> {
    let (turn, child) = turn_and_child(x, &[key, "child"], "tool")?;
    Ok((turn, child, read(&x.d, key)?))
}

/// `tool temporary_output.removed`: a cancelled tool's temporary outputs were removed.
pub(super) fn temporary_removed(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let (turn, child, count) = tool_and(x, "synthetic_files", |d, k| Ok(d.need_u64(k)? as u32))?;
    o.exact(Output::TemporaryOutputRemoved {
        turn: turn.into(),
        child: child.into(),
        count,
    });
    Ok(())
}

/// `tool commit.sent`: the tool sent its commit, with its idempotency key (an input).
/// `reconciler status.enqueued`: a commit that may have happened, enqueued by its key (an
/// output).
pub(super) fn commit_keyed(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let sent = x.l.component == "tool";
    let key = if sent { "idempotency_key" } else { "key" };
    let (turn, child, idempotency_key) = tool_and(x, key, |d, k| d.need_str(k))?;
    if sent {
        o.input(InputKind::CommitSent {
            turn: turn.into(),
            child: child.into(),
            idempotency_key,
        });
    } else {
        o.exact(Output::ReconcileEnqueued {
            turn: turn.into(),
            child: child.into(),
            idempotency_key,
        });
    }
    Ok(())
}

/// `tool commit.acknowledged`, `commit.failed`: how the commit ended.
pub(super) fn commit_ended(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let (turn, child, stated) = tool_and(x, "committed_side_effects", |d, k| d.u64(k))?;
    let (t, c) = (turn.clone(), child.clone());
    match x.l.event.as_str() {
        "commit.acknowledged" => o.input(InputKind::CommitAcked {
            turn: t.into(),
            child: c.into(),
        }),
        _ => o.input(InputKind::CommitFailed {
            turn: t.into(),
            child: c.into(),
        }),
    }
    o.stated_commits(turn, child, stated, false);
    Ok(())
}

/// `tool cancel.deferred`: the tool defers its cancel while its commit is in flight.
pub(super) fn cancel_deferred(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let (turn, child, reason) = tool_and(x, "reason", |d, k| from_name(&d.need_str(k)?, d.line))?;
    o.exact(Output::CancelDeferred {
        turn: turn.into(),
        child: child.into(),
        reason,
    });
    Ok(())
}
