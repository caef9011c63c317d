//! The deadline and the budget (`deadline_budget`): the deadline reaches the model, a tool with
//! too little time left is not started, and the turn ends in an explicit error.

use turnfence_model::turn::{InputKind, Invariant, Output, Terminal};
use turnfence_model::Millis;

use super::facts::Facts;
use super::{terminal_label, Checks};

/// `deadline_budget`: the model observes the deadline, a late tool is not started, and the turn
/// fails explicitly.
pub(super) fn deadline_budget(c: &mut Checks, f: &Facts, turn: &str) {
    let (accepted, _, deadline_ms) = f.accept(turn).unwrap_or((0, 0, None));
    let deadline_at = accepted + deadline_ms.unwrap_or(0);
    let fired = f.outputs().find_map(|(at, o)| match o {
        Output::DeadlineExceeded { turn: t } if t == turn => Some(at),
        _ => None,
    });
    let model_stopped = f.outputs().find_map(|(at, o)| match o {
        Output::ChildCancelled { turn: t, child, .. }
            if t == turn && fired.is_some_and(|d| at >= d) && child.contains("model") =>
        {
            Some(at)
        }
        _ => None,
    });
    let (ok, actual) = match (fired, model_stopped) {
        (Some(d), Some(m)) => (
            d == deadline_at,
            format!("observed (fired@{d}ms, model stopped@{m}ms)"),
        ),
        (Some(d), None) => (false, format!("fired@{d}ms, model never stopped")),
        (None, _) => (false, "deadline never fired".to_owned()),
    };
    c.add(
        "deadline-propagated",
        "model observes deadline".into(),
        ok,
        actual,
        &[Invariant::DeadlineRespected],
    );

    late_tool_blocked(c, f, turn, deadline_at);

    let terminals = f.terminals(turn);
    let ok = matches!(terminals.as_slice(), [(_, Terminal::Failed { .. })]);
    let actual = terminal_label(&terminals);
    c.add(
        "explicit-terminal-error",
        "DEADLINE_EXCEEDED".into(),
        ok,
        actual,
        &[Invariant::DeadlineRespected, Invariant::OneTerminalState],
    );
}

/// No tool that asked to start too late (at or after the deadline, or with less time left than
/// it needs) was started.
fn late_tool_blocked(c: &mut Checks, f: &Facts, turn: &str, deadline_at: Millis) {
    // Tools that asked to start with less time left than they need, or after the deadline.
    let budget_tools: Vec<(Millis, &str, bool)> = f
        .inputs()
        .filter_map(|(at, k)| match k {
            InputKind::Spawn {
                turn: t,
                child,
                kind,
                need_ms,
                ..
            } if t == turn && kind.is_tool() => {
                let late = at >= deadline_at || deadline_at - at < need_ms.unwrap_or(0);
                late.then_some((at, child.as_str(), late))
            }
            _ => None,
        })
        .collect();
    let started = budget_tools
        .iter()
        .filter(|(_, child, _)| {
            !f.outputs().any(|(_, o)| {
                matches!(o, Output::ToolNotStarted { turn: t, child: c, .. } if t == turn && c == child)
            })
        })
        .count();
    let ok = !budget_tools.is_empty() && started == 0;
    let actual = format!("{started} of {} late tools started", budget_tools.len());
    c.add(
        "unsafe-late-tool-blocked",
        "tool starts=0".into(),
        ok,
        actual,
        &[Invariant::DeadlineRespected],
    );
}
