//! The `model` component's stream and the `delivery-gate` that judges it: a response starting,
//! its deltas (with the gate's verdict when the line carries one), its end, and the gate's
//! deliveries and drops.

use turnfence_model::turn::{ChildKind, DropReason, InputKind, Mode, Output};

use super::context::{Line, Memory, Out};
use super::detail::from_name;
use crate::trace::turn_facts::TurnFact;
use crate::trace::InputError;

/// `model response.started`: the turn's model child starts, unless it already runs.
pub(super) fn response_started(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let turn = x.turn();
    x.d.only(&["stream", "remaining_ms"])?;
    let remaining = x.d.u64("remaining_ms")?;
    match x.view.child_of(&turn, &ChildKind::Model, true) {
        Some(_) => o.input(InputKind::Tick),
        None => {
            o.input(InputKind::Spawn {
                turn: turn.clone().into(),
                child: "model".into(),
                kind: ChildKind::Model,
                need_ms: None,
                timeout_ms: None,
            });
            o.exact(Output::ChildStarted {
                turn: turn.clone().into(),
                child: "model".into(),
            });
        }
    }
    o.stated(&turn, remaining, TurnFact::RemainingMs);
    let mode = match x.d.str("stream")?.as_deref() {
        None => None,
        Some("text") => Some(Mode::Text),
        Some("audio" | "realtime_audio") => Some(Mode::Audio),
        Some(s) => return Err(InputError::at(x.line, format!("unknown stream {s:?}"))),
    };
    o.stated(&turn, mode, TurnFact::Mode);
    Ok(())
}

/// `model response.delta`, `response.audio.delta`: a delta (an audio one has a frame unless it
/// says how many), delivered or dropped when the line says so.
pub(super) fn delta(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let d = x.only(&["seq", "text", "delivered", "generation", "frames"])?;
    let (turn, generation, seq) = x.delta(d.u64("generation")?)?;
    let audio = x.l.event == "response.audio.delta";
    let frames = d.u64("frames")?.map_or(u32::from(audio), |f| f as u32);
    o.input(InputKind::Delta {
        turn: turn.clone().into(),
        generation,
        seq,
        text: d.str("text")?,
        frames,
    });
    match d.bool("delivered")? {
        Some(true) => o.exact(Output::Delivered {
            turn: turn.into(),
            generation,
            seq,
        }),
        Some(false) => o.output(
            Output::LateDropped {
                turn: turn.into(),
                generation,
                seq,
                reason: DropReason::CancelRequested,
            },
            &["reason"],
        ),
        None => {}
    }
    Ok(())
}

/// `model response.completed`: the model is done with the turn.
pub(super) fn response_completed(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    x.d.only(&["output_tokens"])?;
    o.input(InputKind::ModelDone {
        turn: x.turn().into(),
    });
    Ok(())
}

/// `delivery-gate delivered`: the gate let a delta through.
pub(super) fn delivered(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let d = x.only(&["generation", "seq"])?;
    let (turn, generation, seq) = x.delta(Some(d.need_u64("generation")?))?;
    o.exact(Output::Delivered {
        turn: turn.into(),
        generation,
        seq,
    });
    Ok(())
}

/// `delivery-gate late.delta.dropped`, `late.audio.dropped`: the gate dropped a delta; without a
/// reason, the reason is not compared.
pub(super) fn dropped(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let d = x.only(&["generation", "seq", "reason"])?;
    let generation = d.need_u64("generation")?;
    let (reason, wild): (DropReason, &'static [&'static str]) = match d.str("reason")? {
        Some(r) => (from_name(&r, x.line)?, &[]),
        None => (DropReason::CancelRequested, &["reason"]),
    };
    let (turn, generation, seq) = x.delta(Some(generation))?;
    o.output(
        Output::LateDropped {
            turn: turn.into(),
            generation,
            seq,
            reason,
        },
        wild,
    );
    Ok(())
}
