//! Stopping a turn: its whole tree of children drains in time and nothing late is delivered
//! (`cancel_tree`), and a repeated stop has one effect and one stable answer (`idempotent_stop`).

use turnfence_model::turn::{ChildId, InputKind, Invariant, Output, StopAnswer, Terminal};
use turnfence_model::Millis;

use super::facts::Facts;
use super::{labels, late_delivery_check, Checks};

fn children_started_before(f: &Facts, turn: &str, before: Millis) -> Vec<ChildId> {
    let refused: Vec<&str> = f
        .outputs()
        .filter_map(|(_, o)| match o {
            Output::ToolNotStarted { turn: t, child, .. } if t == turn => Some(child.as_str()),
            _ => None,
        })
        .collect();
    f.inputs()
        .filter_map(|(at, k)| match k {
            InputKind::Spawn { turn: t, child, .. }
                if t == turn && at < before && !refused.contains(&child.as_str()) =>
            {
                Some(child.clone())
            }
            _ => None,
        })
        .collect()
}

/// `cancel_tree`: every child started before the stop is stopped, within the propagation SLO,
/// and nothing is delivered after the stop.
pub(super) fn cancel_tree(c: &mut Checks, f: &Facts, turn: &str) {
    let stop = f.stop_at(turn).unwrap_or(Millis::MAX);
    let terminals = f.terminals(turn);
    let end = terminals.first().map(|(at, _)| *at);
    let children = children_started_before(f, turn, stop);
    let late_started = children_started_before(f, turn, Millis::MAX).len() - children.len();
    let stopped = f
        .outputs()
        .filter(|(at, o)| {
            matches!(o, Output::ChildCancelled { turn: t, child, .. }
                if t == turn && children.contains(child) && end.is_some_and(|e| *at <= e))
        })
        .count();
    let cancelled = matches!(terminals.as_slice(), [(_, Terminal::Cancelled)]);
    let ok = cancelled && stopped == children.len() && !children.is_empty() && late_started == 0;
    let mut actual = format!("{stopped} stopped");
    if late_started > 0 {
        actual = format!("{actual}, {late_started} started after the stop");
    }
    c.add(
        "cancel-tree-drained",
        format!("{} children stopped", children.len()),
        ok,
        actual,
        &[Invariant::CancelTreeDrained],
    );

    let (ok, actual) = match end {
        Some(end) if stop != Millis::MAX => (end - stop <= 50, format!("{}ms", end - stop)),
        _ => (false, "never ended".to_owned()),
    };
    c.add(
        "propagation-slo",
        "<=50ms".into(),
        ok,
        actual,
        &[Invariant::OneTerminalState],
    );

    late_delivery_check(
        c,
        f,
        turn,
        "no-late-delivery",
        "late generation dropped".into(),
        stop,
        None,
    );
}

/// `idempotent_stop`: repeated stops have one effect, one stable terminal state, and every
/// request an answer.
pub(super) fn idempotent_stop(c: &mut Checks, f: &Facts, turn: &str) {
    let answers = f.answers(turn);
    let effects = answers
        .iter()
        .filter(|a| **a == StopAnswer::Requested)
        .count();
    c.add(
        "idempotent-stop",
        "cancel effects=1".into(),
        effects == 1,
        format!("{effects}"),
        &[Invariant::IdempotentStop],
    );

    let terminals = f.terminals(turn);
    let stable = answers.iter().all(|a| match a {
        StopAnswer::AlreadyTerminal { state } => *state == Terminal::Cancelled,
        _ => true,
    });
    let ok = stable && matches!(terminals.as_slice(), [(_, Terminal::Cancelled)]);
    let actual = match terminals.as_slice() {
        [(_, s)] if stable => s.label().to_owned(),
        other => labels(other),
    };
    c.add(
        "stable-terminal-state",
        "CANCELLED".into(),
        ok,
        actual,
        &[Invariant::IdempotentStop, Invariant::OneTerminalState],
    );

    let stops = f
        .inputs()
        .filter(|(_, k)| matches!(k, InputKind::Stop { turn: t, .. } if t == turn))
        .count();
    c.add(
        "safe-client-retry",
        format!("{stops} requests answered"),
        stops > 1 && answers.len() == stops,
        format!("{} answered", answers.len()),
        &[Invariant::IdempotentStop],
    );
}
