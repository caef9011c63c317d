//! Tools under a stop: a cancellable tool stops at its next checkpoint and leaves nothing
//! (`cancellable_tool`); a non-cancellable one's commit is never claimed cancelled and is audited
//! (`noncancellable_tool`).

use turnfence_model::turn::{InputKind, Invariant, Output, Terminal};
use turnfence_model::Millis;

use super::facts::Facts;
use super::{late_delivery_check, terminal_label, Checks};

/// `cancellable_tool`: the tool stops at its next checkpoint, its temporary work is removed and
/// nothing is committed.
pub(super) fn cancellable_tool(c: &mut Checks, f: &Facts, turn: &str) {
    let stop = f.stop_at(turn).unwrap_or(Millis::MAX);
    let tool = f.inputs().find_map(|(_, k)| match k {
        InputKind::Spawn {
            turn: t,
            child,
            kind,
            ..
        } if t == turn && kind.is_cancellable_tool() => Some(child.clone()),
        _ => None,
    });
    let tool = tool.unwrap_or_default();
    let next_checkpoint = f.inputs().find_map(|(at, k)| match k {
        InputKind::Checkpoint {
            turn: t,
            child,
            phase,
            ..
        } if t == turn && *child == tool && at >= stop => Some(phase.clone()),
        _ => None,
    });
    let observed = f.outputs().find_map(|(_, o)| match o {
        Output::ChildCancelled {
            turn: t,
            child,
            checkpoint,
        } if t == turn && *child == tool => Some(checkpoint.clone()),
        _ => None,
    });
    let ok = observed.is_some() && observed == next_checkpoint;
    let expected = format!(
        "cancel at {}",
        next_checkpoint.as_deref().unwrap_or("the next checkpoint")
    );
    let actual = observed.unwrap_or_else(|| "never observed".to_owned());
    c.add(
        "cooperative-checkpoint",
        expected,
        ok,
        actual,
        &[Invariant::CancelTreeDrained],
    );

    temporary_work_cleaned(c, f, turn, &tool, stop);

    let effects = commits(f, turn);
    let cancelled = matches!(f.terminals(turn).as_slice(), [(_, Terminal::Cancelled)]);
    c.add(
        "no-committed-side-effect",
        "side effects=0".into(),
        effects == 0 && cancelled,
        format!("{effects}"),
        &[
            Invariant::CancelledToolLeavesNothing,
            Invariant::NoFalseCancelClaim,
        ],
    );
}

/// The temporary outputs the tool created before the stop were all removed.
fn temporary_work_cleaned(c: &mut Checks, f: &Facts, turn: &str, tool: &str, stop: Millis) {
    let created: u32 = f
        .inputs()
        .filter_map(|(at, k)| match k {
            InputKind::Checkpoint {
                turn: t,
                child,
                temporary_outputs,
                ..
            } if t == turn && *child == tool && at < stop => Some(*temporary_outputs),
            _ => None,
        })
        .sum();
    let removed: u32 = f
        .outputs()
        .filter_map(|(_, o)| match o {
            Output::TemporaryOutputRemoved { turn: t, count, .. } if t == turn => Some(*count),
            _ => None,
        })
        .sum();
    let left = created.saturating_sub(removed);
    let actual = format!("{left} ({created} created, {removed} removed)");
    c.add(
        "temporary-work-cleaned",
        "temporary files=0".into(),
        created > 0 && left == 0,
        actual,
        &[Invariant::CancelledToolLeavesNothing],
    );
}

/// Commits acknowledged (or failed, so possibly applied) for the turn.
fn commits(f: &Facts, turn: &str) -> usize {
    f.inputs()
        .filter(|(_, k)| {
            matches!(k, InputKind::CommitAcked { turn: t, .. } | InputKind::CommitFailed { turn: t, .. } if t == turn)
        })
        .count()
}

/// `noncancellable_tool`: the turn does not claim a cancel it could not make, delivery stops,
/// and the commit is audited.
pub(super) fn noncancellable_tool(c: &mut Checks, f: &Facts, turn: &str) {
    let terminals = f.terminals(turn);
    let ok = matches!(terminals.as_slice(), [(_, Terminal::ReconcileRequired)]);
    let actual = terminal_label(&terminals);
    c.add(
        "no-false-cancel-claim",
        "RECONCILE_REQUIRED".into(),
        ok,
        actual,
        &[Invariant::NoFalseCancelClaim],
    );

    let stop = f.stop_at(turn).unwrap_or(Millis::MAX);
    let actual = format!("stopped@{stop}ms");
    late_delivery_check(
        c,
        f,
        turn,
        "delivery-stopped",
        "no more user output".into(),
        stop,
        Some(actual),
    );

    let keys: Vec<&str> = f
        .inputs()
        .filter_map(|(_, k)| match k {
            InputKind::CommitSent {
                turn: t,
                idempotency_key,
                ..
            } if t == turn => Some(idempotency_key.as_str()),
            _ => None,
        })
        .collect();
    let enqueued: Vec<&str> = f
        .outputs()
        .filter_map(|(_, o)| match o {
            Output::ReconcileEnqueued {
                turn: t,
                idempotency_key,
                ..
            } if t == turn => Some(idempotency_key.as_str()),
            _ => None,
        })
        .collect();
    let effects = commits(f, turn);
    let recorded = keys.iter().filter(|k| enqueued.contains(k)).count();
    let ok = effects == 1 && recorded == effects;
    c.add(
        "commit-audited",
        "side effects=1 and recorded".into(),
        ok,
        format!(
            "{effects} committed, {recorded} recorded ({})",
            enqueued.join(",")
        ),
        &[Invariant::NoFalseCancelClaim],
    );
}
