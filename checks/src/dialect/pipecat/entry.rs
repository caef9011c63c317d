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

#[cfg(test)]
mod tests {
    use crate::trace::Party;

    /// Every way a line of this stack is said: who passes it to whom, in the stack's words; and
    /// the first lines it writes recognised as its own among every dialect the registry has.
    #[test]
    fn every_line_is_said_between_the_parties_it_passes_and_its_first_known() {
        use Party::*;
        // An audio chunk played goes from the pipeline to the loudspeaker; one synthesized comes
        // from the TTS.
        let cases: &[(&str, Party, Party, &str)] = &[
            (
                r#"{"t_ms":1,"frame":"TTSAudioRawFrame","played":true}"#,
                App,
                Player,
                "TTSAudioRawFrame played",
            ),
            (
                r#"{"t_ms":1,"frame":"TTSAudioRawFrame","played":false}"#,
                Tts,
                App,
                "TTSAudioRawFrame synthesized",
            ),
            (
                r#"{"frame":"BotStartedSpeakingFrame"}"#,
                Player,
                App,
                "BotStartedSpeakingFrame",
            ),
            (
                r#"{"frame":"BotStoppedSpeakingFrame"}"#,
                Player,
                App,
                "BotStoppedSpeakingFrame",
            ),
            (
                r#"{"frame":"TTSStartedFrame"}"#,
                Tts,
                App,
                "TTSStartedFrame",
            ),
            (
                r#"{"frame":"LLMFullResponseEndFrame"}"#,
                Llm,
                App,
                "LLMFullResponseEndFrame",
            ),
            (
                r#"{"frame":"FunctionCallResultFrame"}"#,
                Tools,
                App,
                "FunctionCallResultFrame",
            ),
            (
                r#"{"frame":"UserStartedSpeakingFrame"}"#,
                User,
                App,
                "UserStartedSpeakingFrame",
            ),
            (
                r#"{"frame":"VADUserStoppedSpeakingFrame"}"#,
                User,
                App,
                "VADUserStoppedSpeakingFrame",
            ),
            (
                r#"{"frame":"StartInterruptionFrame"}"#,
                User,
                App,
                "StartInterruptionFrame",
            ),
            (
                r#"{"frame":"TranscriptionFrame"}"#,
                User,
                App,
                "TranscriptionFrame",
            ),
            (r#"{"frame":"EndFrame"}"#, App, App, "EndFrame"),
            (r#"{"t_ms":0}"#, App, App, "(unknown)"),
        ];
        crate::dialect::assert_said_and_recognised(
            &super::Entry,
            cases,
            &[r#"{"t_ms":0,"frame":"StartFrame","id":1,"src":"a","dst":"b","dir":"down"}"#],
        );
    }
}
