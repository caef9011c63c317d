//! The `turn` component: a turn accepted or refused, the answers to a stop, the barge-in that
//! fences a generation and the turn it starts, and the turn's terminal state.

use turnfence_model::turn::{
    Budget, FailCode, InputKind, Mode, Output, RefuseReason, StopAnswer, Terminal,
};

use super::context::{Line, Memory, Out};
use crate::trace::turn_facts::{Fact, TurnFact};
use crate::trace::InputError;

/// `turn accepted`, `accept.requested`: a new turn (`accept.requested` when the lab then logs it
/// refused); without a generation it takes the session's next.
pub(super) fn accepted(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let (d, line) = (&x.d, x.line);
    d.only(&[
        "deadline_ms",
        "generation",
        "mode",
        "resume_ttl_s",
        "budget",
    ])?;
    let mode = match d.str("mode")?.as_deref() {
        None | Some("text") => Mode::Text,
        Some("audio" | "realtime_audio") => Mode::Audio,
        Some(m) => return Err(InputError::at(line, format!("unknown mode {m:?}"))),
    };
    let budget = match x.l.detail.get("budget") {
        None => None,
        Some(b) => Some(
            serde_json::from_value::<Budget>(b.clone())
                .map_err(|e| InputError::at(line, format!("detail `budget`: {e}")))?,
        ),
    };
    let generation = match d.u64("generation")? {
        Some(g) => g,
        None => x.view.next_generation(),
    };
    o.input(InputKind::Accept {
        turn: x.turn().into(),
        generation,
        mode,
        deadline_ms: d.u64("deadline_ms")?,
        budget,
        interruptible: true,
    });
    if let Some(s) = d.u64("resume_ttl_s")? {
        o.fact(Fact::ResumeTtlMs {
            ms: s.saturating_mul(1000),
        });
    }
    Ok(())
}

/// `turn cancel.requested`, `cancel.already_requested`, `cancel.already_terminal`: the answer to
/// a stop; without a request id, the turn's last stop's.
pub(super) fn stop_answered(x: &Line, o: &mut Out, m: &mut Memory) -> Result<(), InputError> {
    let d = &x.d;
    let turn = x.turn();
    d.only(&[
        "request_id",
        "generation",
        "response_delivery",
        "transition_count",
        "state",
    ])?;
    let request_id = d
        .str("request_id")?
        .unwrap_or_else(|| m.stop_request(&turn));
    let answer = match x.l.event.as_str() {
        "cancel.requested" => StopAnswer::Requested,
        "cancel.already_requested" => StopAnswer::AlreadyRequested,
        _ => StopAnswer::AlreadyTerminal {
            state: terminal_from_label(&d.need_str("state")?, x.line)?,
        },
    };
    o.exact(Output::StopAnswered {
        turn: turn.clone().into(),
        request_id,
        answer,
    });
    o.stated(&turn, d.u64("generation")?, TurnFact::Generation);
    let stopped = d.str("response_delivery")?.map(|r| r == "stopped");
    o.stated(&turn, stopped, TurnFact::DeliveryStopped);
    o.stated(&turn, d.u64("transition_count")?, TurnFact::CancelEffects);
    Ok(())
}

/// `turn cancelled`, `completed`, `failed`, `reconcile_required`, `old_generation.cancelled`: the
/// terminal state of the turn (of the generation, when the line names one).
pub(super) fn terminal(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let d = x.only(&[
        "terminal_events",
        "propagation_ms",
        "cancel_effects",
        "active_generation",
        "terminal_seq",
        "code",
        "generation",
    ])?;
    let generation = d.u64("active_generation")?.or(d.u64("generation")?);
    let turn = x.turn_at(generation);
    let state = match x.l.event.as_str() {
        "completed" => Terminal::Completed,
        "failed" => match d.need_str("code")?.as_str() {
            "DEADLINE_EXCEEDED" => Terminal::Failed {
                code: FailCode::DeadlineExceeded,
            },
            c => {
                return Err(InputError::at(
                    x.line,
                    format!("unknown failure code {c:?}"),
                ))
            }
        },
        "reconcile_required" => Terminal::ReconcileRequired,
        _ => Terminal::Cancelled,
    };
    o.exact(Output::Terminal {
        turn: turn.clone().into(),
        state,
    });
    o.stated(&turn, d.u64("terminal_events")?, TurnFact::TerminalEvents);
    o.stated(&turn, d.u64("cancel_effects")?, TurnFact::CancelEffects);
    o.stated(&turn, d.u64("propagation_ms")?, TurnFact::PropagationMs);
    o.stated(&turn, d.u64("terminal_seq")?, TurnFact::TerminalSeq);
    Ok(())
}

/// `turn barge_in.accepted`: the fenced generation (or the one before the new).
pub(super) fn barge_in(x: &Line, o: &mut Out, m: &mut Memory) -> Result<(), InputError> {
    let d = x.only(&["new_generation", "fenced_generation"])?;
    let generation = match d.u64("fenced_generation")? {
        Some(g) => g,
        None => d.need_u64("new_generation")?.saturating_sub(1),
    };
    let turn = x.turn_at(Some(generation));
    o.exact(Output::GenerationFenced {
        turn: turn.into(),
        generation,
    });
    m.new_generation = d.u64("new_generation")?;
    Ok(())
}

/// `turn created_from_barge_in`: the successor turn, accepted with the session's next generation
/// in the barged-in turn's mode.
pub(super) fn created_from_barge_in(
    x: &Line,
    o: &mut Out,
    m: &mut Memory,
) -> Result<(), InputError> {
    let d = x.only(&["new_turn"])?;
    let mode = x.view.mode_of(&x.turn()).unwrap_or(Mode::Audio);
    o.input(InputKind::Accept {
        turn: d.need_str("new_turn")?.into(),
        generation: m
            .new_generation
            .take()
            .unwrap_or_else(|| x.view.next_generation()),
        mode,
        deadline_ms: None,
        budget: None,
        interruptible: true,
    });
    Ok(())
}

/// `turn accept.refused`: the lab's reason is not compared.
pub(super) fn refused(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    x.d.only(&["reason"])?;
    o.output(
        Output::TurnRefused {
            turn: x.turn().into(),
            reason: RefuseReason::ActiveTurnExists,
        },
        &["reason"],
    );
    Ok(())
}

fn terminal_from_label(label: &str, line: usize) -> Result<Terminal, InputError> {
    Ok(match label {
        "COMPLETED" => Terminal::Completed,
        "CANCELLED" => Terminal::Cancelled,
        "DEADLINE_EXCEEDED" => Terminal::Failed {
            code: FailCode::DeadlineExceeded,
        },
        "RECONCILE_REQUIRED" => Terminal::ReconcileRequired,
        s => return Err(InputError::at(line, format!("unknown state {s:?}"))),
    })
}
