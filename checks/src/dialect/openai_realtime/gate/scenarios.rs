//! The `openai-realtime` profile's four gate scenarios, as input scripts for the turn machine made
//! with that profile (the lab's `Script`, with the moves of a response beside its own). A turn is a response (`resp-…`), a frame a millisecond of audio, `speech`
//! server VAD's `input_audio_buffer.speech_started`, a stop the client's `response.cancel`, a
//! model-done the response's own `response.done`. Facts behind each script:
//! docs/research/openai-realtime.md (§2.3–2.8); as with the lab's eight, no script states an
//! outcome.

use turnfence_model::turn::{ChildKind, InputKind, Mode};
use turnfence_model::Millis;

use crate::gate::scenarios::Script;
use crate::gate::Scenario;

/// The gate's scenario names, in gate order.
pub const NAMES: [&str; 4] = [
    "realtime_barge_in_truncates",
    "realtime_interrupt_after_done",
    "realtime_cancel_then_create",
    "realtime_stale_cancel",
];

/// The scenario of that name, if it is one of these.
pub(super) fn scenario(name: &str) -> Option<Scenario> {
    let build = match name {
        "realtime_barge_in_truncates" => barge_in_truncates,
        "realtime_interrupt_after_done" => interrupt_after_done,
        "realtime_cancel_then_create" => cancel_then_create,
        "realtime_stale_cancel" => stale_cancel,
        _ => return None,
    };
    Some(build())
}

impl Script {
    /// A response in audio, with no deadline (the Realtime API sets none).
    fn respond(&mut self, at: Millis, generation: u64) -> &mut Script {
        self.accept(at, generation, Mode::Audio, None)
    }

    /// `ms` milliseconds of audio of `(generation, seq)` arrive.
    fn audio(&mut self, at: Millis, generation: u64, seq: u64, ms: u32) -> &mut Script {
        self.delta(at, generation, seq, None, ms)
    }

    /// The player reports `ms` more milliseconds heard.
    fn played(&mut self, at: Millis, ms: u32) -> &mut Script {
        self.at(at, InputKind::FramePlayed { frames: ms })
    }

    fn speech(&mut self, at: Millis) -> &mut Script {
        self.at(
            at,
            InputKind::SpeechStarted {
                confidence: 0.9,
                since: None,
            },
        )
    }

    /// A create for another response (`response.create`, or VAD's own).
    fn create(&mut self, at: Millis, turn: &str, generation: u64) -> &mut Script {
        self.at(
            at,
            InputKind::Accept {
                turn: turn.into(),
                generation,
                mode: Mode::Audio,
                deadline_ms: None,
                budget: None,
                interruptible: true,
            },
        )
    }

    /// Appends another response's script, in time order after this one's inputs.
    fn then(&mut self, other: &mut Script) -> &mut Script {
        self.inputs.append(&mut other.inputs);
        self
    }
}

/// Server VAD hears the user 350 ms into a 720 ms reply: the 370 ms still queued is cleared, the
/// response truncated to what played and cancelled; a delta still in flight arrives late.
fn barge_in_truncates() -> Scenario {
    Script::new("resp-001")
        .respond(0, 1)
        .spawn(2, "model-stream", ChildKind::Model)
        .audio(40, 1, 1, 240)
        .audio(60, 1, 2, 240)
        .audio(80, 1, 3, 240)
        .played(290, 250)
        .played(390, 100)
        .speech(400)
        .audio(405, 1, 4, 240)
        .checkpoint(412, "model-stream", "stream_closed", 0)
        .done("realtime_barge_in_truncates")
}

/// The response is done after 1 000 ms of audio was generated; 300 ms of it has played when the
/// user speaks. The next response then plays.
fn interrupt_after_done() -> Scenario {
    let mut next = Script::new("resp-003");
    next.respond(600, 2)
        .audio(620, 2, 1, 200)
        .model_done(640)
        .played(840, 200);
    Script::new("resp-002")
        .respond(0, 1)
        .audio(30, 1, 1, 600)
        .audio(45, 1, 2, 400)
        .model_done(60)
        .played(360, 300)
        .speech(420)
        .then(&mut next)
        .done("realtime_interrupt_after_done")
}

/// The client cancels a response whose stream is still unwinding and asks for a new one at once;
/// it asks again, for a newer generation, once the cancelled response is done.
fn cancel_then_create() -> Scenario {
    let mut next = Script::new("resp-006");
    next.audio(75, 3, 1, 180).model_done(90).played(270, 180);
    Script::new("resp-004")
        .respond(0, 1)
        .spawn(3, "model-stream", ChildKind::Model)
        .text(20, 1, "Let me look that up")
        .stop(40, "cancel-001")
        .create(42, "resp-005", 2)
        .delta(48, 1, 2, Some(" for you"), 0)
        .checkpoint(55, "model-stream", "stream_closed", 0)
        .create(60, "resp-006", 3)
        .then(&mut next)
        .done("realtime_cancel_then_create")
}

/// A cancel naming the first response arrives after it is done and heard, while the second
/// streams. (The second's audio is still queued when the script ends: a player's report of it
/// would be a misuse for a machine that wrongly cleared it, and the check would measure nothing.)
fn stale_cancel() -> Scenario {
    let mut next = Script::new("resp-008");
    next.respond(120, 2)
        .spawn(121, "model-stream", ChildKind::Model)
        .at(
            125,
            InputKind::Stop {
                turn: "resp-007".into(),
                request_id: "cancel-002".into(),
            },
        )
        .audio(130, 2, 1, 150)
        .audio(140, 2, 2, 150)
        .model_done(150);
    Script::new("resp-007")
        .respond(0, 1)
        .audio(10, 1, 1, 100)
        .model_done(15)
        .played(110, 100)
        .then(&mut next)
        .done("realtime_stale_cancel")
}
