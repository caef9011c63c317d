//! Pipecat pipeline frames, as its observer (`interop/pipecat/turnfence_observer.py`) writes
//! them: the registry's entry for them.

use serde_json::{Map, Value};
use turnfence_model::turn::Profile;

use super::PipecatReader;
use crate::dialect::str_at;
use crate::trace::{judging, turn_only, DialectEntry, InputError, Judging, Party, Reading};

/// The `pipecat` dialect.
pub struct Entry;

impl DialectEntry for Entry {
    fn name(&self) -> &'static str {
        "pipecat"
    }

    fn about(&self) -> &'static str {
        "Pipecat pipeline frames, as its observer (`interop/pipecat/turnfence_observer.py`) writes them"
    }

    fn recognise(&self, first: &Map<String, Value>) -> Option<&'static str> {
        let frame = first.get("frame").and_then(Value::as_str);
        (frame.is_some_and(|f| f.ends_with("Frame")) && first.contains_key("t_ms")).then_some(
            "its first line is a Pipecat frame as the observer writes it (`t_ms`, `frame`)",
        )
    }

    fn profile(&self) -> Option<Profile> {
        Some(Profile::Pipecat)
    }

    fn reader(&self, read: &Reading) -> Result<Box<dyn Judging>, InputError> {
        turn_only(read)?;
        judging(PipecatReader::default(), read.profile)
    }

    /// The frame by its class name, between the parties it passes (the pipeline is the app; a
    /// played audio chunk is the loudspeaker's, one synthesized the TTS's).
    fn said(&self, v: &Value) -> (Party, Party, String) {
        let Some(frame) = str_at(v, "/frame") else {
            return (Party::App, Party::App, "(unknown)".to_owned());
        };
        let played = v.get("played").and_then(Value::as_bool);
        let (from, to) = match frame {
            "TTSAudioRawFrame" if played == Some(true) => (Party::App, Party::Player),
            "BotStartedSpeakingFrame" | "BotStoppedSpeakingFrame" => (Party::Player, Party::App),
            f if f.starts_with("TTS") => (Party::Tts, Party::App),
            f if f.starts_with("LLM") => (Party::Llm, Party::App),
            f if f.starts_with("FunctionCall") => (Party::Tools, Party::App),
            f if f.starts_with("User")
                || f.starts_with("VADUser")
                || f.contains("Interruption")
                || f == "TranscriptionFrame" =>
            {
                (Party::User, Party::App)
            }
            _ => (Party::App, Party::App),
        };
        let words = match played {
            Some(true) => format!("{frame} played"),
            Some(false) => format!("{frame} synthesized"),
            None => frame.to_owned(),
        };
        (from, to, words)
    }
}
