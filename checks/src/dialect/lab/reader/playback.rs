//! Audio: the `tts` frames played and the playback buffer cleared, the `speaker` consuming a
//! frame, and the `vad` hearing the user start to speak.

use serde_json::Value;
use turnfence_model::turn::{InputKind, Output};

use super::context::{Line, Memory, Out};
use crate::trace::turn_facts::TurnFact;
use crate::trace::InputError;

/// `speaker frame.consumed`: the speaker took the head of the playback buffer (`frames` of it,
/// one unless said).
pub(super) fn frame_consumed(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let d = x.only(&["frames"])?;
    let frames = frame_count(d.u64("frames")?);
    o.input(InputKind::FramePlayed { frames });
    Ok(())
}

/// A stated frame count, one when none is stated (a count past `u32` saturates: the model
/// refuses it as more than the buffer holds).
fn frame_count(stated: Option<u64>) -> u32 {
    stated.map_or(1, |n| u32::try_from(n).unwrap_or(u32::MAX))
}

/// `tts output_audio.truncated`: the turn was truncated to the frames heard.
pub(super) fn truncated(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let d = x.only(&["generation", "heard_frames"])?;
    let (turn, generation) = (x.turn(), d.u64("generation")?.unwrap_or_default());
    let heard = u32::try_from(d.u64("heard_frames")?.unwrap_or_default()).unwrap_or(u32::MAX);
    o.exact(Output::Truncated {
        turn: turn.into(),
        generation,
        heard,
    });
    Ok(())
}

/// `tts frame.played`: a frame was played — an effect, held against the model's `played`. The
/// speaker's consuming it, when no `speaker frame.consumed` line says so (the gate logs the two
/// apart), is the hidden step the model supplies while the frame is still buffered. Which of its
/// delta's frames it was (`frame`, the gate's) is not compared.
pub(super) fn frame_played(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let d = x.only(&["seq", "generation", "frame", "frames"])?;
    let stated = d.u64("generation")?;
    let frames = frame_count(d.u64("frames")?);
    let (turn, generation, seq) = x.delta(stated)?;
    if stated.is_none() {
        // The lab logs the speaker's consumption and the play as one line.
        o.input(InputKind::FramePlayed { frames });
    }
    o.exact(Output::Played {
        turn: turn.into(),
        generation,
        seq,
        frames,
    });
    Ok(())
}

/// `tts output_audio.clear`, `buffer.cleared`: the playback buffer was cleared. The frame count
/// is not compared: the lab's buffer holds frames its log never shows queued.
pub(super) fn cleared(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    x.d.only(&["buffered_frames", "queued_frames"])?;
    o.output(
        Output::PlaybackCleared {
            turn: x.turn().into(),
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
    o.input(InputKind::SpeechStarted {
        confidence,
        since: None,
    });
    Ok(())
}
