//! Audio: the `tts` frames played and the playback buffer cleared, the `speaker` consuming a
//! frame, and the `vad` hearing the user start to speak.

use serde_json::Value;
use turnfence_model::turn::{InputKind, Output};

use super::context::{Line, Memory, Out};
use crate::trace::turn_facts::TurnFact;
use crate::trace::InputError;

/// `speaker frame.consumed`: the speaker took the head of the playback buffer.
pub(super) fn frame_consumed(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    x.d.only(&[])?;
    o.input(InputKind::FramePlayed);
    Ok(())
}

/// `tts frame.played`: a frame was played — an effect, held against the model's `played`. The
/// speaker's consuming it, when no `speaker frame.consumed` line says so (the gate logs the two
/// apart), is the hidden step the model supplies while the frame is still buffered. Which of its
/// delta's frames it was (`frame`, the gate's) is not compared.
pub(super) fn frame_played(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let d = x.only(&["seq", "generation", "frame"])?;
    let stated = d.u64("generation")?;
    let (turn, generation, seq) = x.delta(stated)?;
    if stated.is_none() {
        // The lab logs the speaker's consumption and the play as one line.
        o.input(InputKind::FramePlayed);
    }
    o.exact(Output::Played {
        turn,
        generation,
        seq,
    });
    Ok(())
}

/// `tts output_audio.clear`, `buffer.cleared`: the playback buffer was cleared. The frame count
/// is not compared: the lab's buffer holds frames its log never shows queued.
pub(super) fn cleared(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    x.d.only(&["buffered_frames", "queued_frames"])?;
    o.output(
        Output::PlaybackCleared {
            turn: x.turn(),
            frames: 0,
        },
        &["frames"],
    );
    let stated = x.d.u64("buffered_frames")?.or(x.d.u64("queued_frames")?);
    o.stated(&x.turn(), stated, TurnFact::ClearedFrames);
    Ok(())
}

/// `vad input_audio.speech_started`: the user started speaking, with the detector's confidence.
pub(super) fn speech_started(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    x.d.only(&["confidence"])?;
    let confidence =
        x.l.detail
            .get("confidence")
            .and_then(Value::as_f64)
            .ok_or_else(|| InputError::at(x.line, "missing detail field `confidence`"))?;
    o.input(InputKind::SpeechStarted { confidence });
    Ok(())
}
