//! A turn's children, whichever component speaks for them (`retriever`, `model`, `tool`, `tts`,
//! `cancel-tree`, `planner`): spawned, completed, at a checkpoint, asked to stop, stopped, or
//! never started. A line that does not name its child is about the turn's child of the
//! component's kind.

use turnfence_model::turn::{ChildKind, InputKind, NotStartedReason, Output};

use super::context::{Line, Memory, Out};
use super::detail::{from_name, Detail};
use super::LabLine;
use crate::dialect::lab::{kind_of, usual_child};
use crate::trace::turn_conform::kind_from_name;
use crate::trace::InputError;

/// `<child> started`: a child asked to start and started — an effect, held against the model's
/// answer to the spawn. `cancel-tree child.spawned`, `child.spawn_requested`: the tree registered
/// a child that asks to start — a request (the lab logs a refused one `tool.not_started` next,
/// and what shows a registered child running, a checkpoint or a completion, is judged where it
/// comes).
pub(super) fn spawn(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let d = x.only(&["parent", "child", "kind", "tool", "cancellable", "need_ms"])?;
    let (child, kind) = spawned(x.l, d)?;
    let turn = x.turn();
    o.input(InputKind::Spawn {
        turn: turn.clone().into(),
        child: child.clone().into(),
        kind,
        need_ms: d.u64("need_ms")?,
        timeout_ms: None,
    });
    if x.l.event == "started" {
        o.exact(Output::ChildStarted {
            turn: turn.into(),
            child: child.into(),
        });
    }
    Ok(())
}

/// `<child> completed`: the child finished its work.
pub(super) fn completed(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let (turn, child) = own_child(x, &["documents", "elapsed_ms", "child", "output_tokens"])?;
    o.input(InputKind::ChildCompleted {
        turn: turn.into(),
        child: child.into(),
    });
    Ok(())
}

/// `<child> checkpoint`, `tool cancel.observed`: the child reached a checkpoint. A phase that
/// names `temporary`, on a line that names no child, creates one temporary output.
pub(super) fn checkpoint(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let d = &x.d;
    let (turn, child) = own_child(x, &["phase", "checkpoint", "child", "temporary_outputs"])?;
    let phase = match d.str("phase")? {
        Some(p) => p,
        None => d.need_str("checkpoint")?,
    };
    let temporary_outputs = match d.u64("temporary_outputs")? {
        Some(n) => n as u32,
        None if x.l.detail.get("child").is_none() && phase.contains("temporary") => 1,
        None => 0,
    };
    o.input(InputKind::Checkpoint {
        turn: turn.into(),
        child: child.into(),
        phase,
        temporary_outputs,
    });
    Ok(())
}

/// `<child> cancelled`: the child stopped, at its checkpoint (or for a reason, which is not
/// compared).
pub(super) fn cancelled(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let d = &x.d;
    let (turn, child) = own_child(
        x,
        &["checkpoint", "reason", "child", "committed_side_effects"],
    )?;
    let (checkpoint, wild): (String, &'static [&'static str]) = match d.str("checkpoint")? {
        Some(cp) => (cp, &[]),
        None => (d.str("reason")?.unwrap_or_default(), &["checkpoint"]),
    };
    o.output(
        Output::ChildCancelled {
            turn: turn.clone().into(),
            child: child.clone().into(),
            checkpoint,
        },
        wild,
    );
    o.stated_commits(turn, child, d.u64("committed_side_effects")?, true);
    Ok(())
}

/// `<child> report.ignored`: a child the system had already stopped reported late; the report
/// was dropped.
pub(super) fn report_ignored(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let (turn, child) = own_child(x, &["report", "child"])?;
    let report = from_name(&x.d.need_str("report")?, x.line)?;
    o.exact(Output::ReportIgnored {
        turn: turn.into(),
        child: child.into(),
        report,
    });
    Ok(())
}

/// `cancel-tree cancel.propagated`: a running child was asked to stop.
pub(super) fn cancel_propagated(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let (turn, child) = x.turn_and("child")?;
    o.exact(Output::ChildCancelRequested {
        turn: turn.into(),
        child: child.into(),
    });
    Ok(())
}

/// `planner tool.not_started`: a child was not allowed to start. One the line does not name gets
/// a name of its own.
pub(super) fn not_started(x: &Line, o: &mut Out, m: &mut Memory) -> Result<(), InputError> {
    let d = x.only(&["reason", "child", "tool"])?;
    let child = match d.str("child")? {
        Some(c) => c,
        None => {
            m.hidden += 1;
            format!(
                "{}-{}",
                d.str("tool")?.unwrap_or_else(|| "planned-tool".into()),
                m.hidden
            )
        }
    };
    let reason = match d.need_str("reason")?.as_str() {
        "no_budget" => NotStartedReason::NoBudget,
        "turn_cancelled" => NotStartedReason::TurnCancelled,
        r => return Err(InputError::at(x.line, format!("unknown reason {r:?}"))),
    };
    o.exact(Output::ToolNotStarted {
        turn: x.turn().into(),
        child: child.into(),
        reason,
    });
    Ok(())
}

/// The child a spawn line names, and its kind.
fn spawned(l: &LabLine, d: &Detail) -> Result<(String, ChildKind), InputError> {
    if let Some(tool) = d.str("tool")? {
        let cancellable = d.bool("cancellable")?.unwrap_or(true);
        let child = d.str("child")?.unwrap_or_else(|| tool.clone());
        return Ok((
            child,
            ChildKind::Tool {
                name: tool,
                cancellable,
            },
        ));
    }
    let child = match d.str("child")? {
        Some(c) => c,
        None => usual_child(&l.component),
    };
    let kind = match d.str("kind")?.as_deref() {
        Some("retrieval") => ChildKind::Retrieval,
        Some("model") => ChildKind::Model,
        Some("tts") => ChildKind::Tts,
        Some(k) => return Err(InputError::at(d.line, format!("unknown child kind {k:?}"))),
        // A child's own component names its kind, whatever the child is called; only a
        // `cancel-tree` line, which speaks for every kind, leaves it to the name.
        None => match l.component.as_str() {
            "retriever" | "model" | "tts" => kind_of(&l.component),
            "tool" => ChildKind::Tool {
                name: child.clone(),
                cancellable: d.bool("cancellable")?.unwrap_or(true),
            },
            _ => kind_from_name(&child),
        },
    };
    Ok((child, kind))
}

/// The turn and the child a line of the child's own component (`retriever`, `model`, `tool`,
/// `tts`) is about, once its detail is known to have only `known` keys.
fn own_child(x: &Line, known: &[&str]) -> Result<(String, String), InputError> {
    turn_and_child(x, known, &x.l.component)
}

/// The turn and the child a line about a child is about, once its detail is known to have only
/// `known` keys.
pub(super) fn turn_and_child(
    x: &Line,
    known: &[&str],
    component: &str,
) -> Result<(String, String), InputError> {
    x.d.only(known)?;
    Ok((x.turn(), child(x, component)?))
}

/// The child a component's line is about: named in the detail, else the turn's child of the
/// component's kind (the latest one still running, else the latest), else its usual name.
fn child(x: &Line, component: &str) -> Result<String, InputError> {
    let (view, turn) = (&x.view, &x.l.turn_id);
    if let Some(c) = x.d.str("child")? {
        return Ok(c);
    }
    let kind = kind_of(component);
    Ok(view
        .child_of(turn, &kind, true)
        .or_else(|| view.child_of(turn, &kind, false))
        .map_or_else(|| usual_child(component), String::from))
}
