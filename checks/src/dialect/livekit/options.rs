//! A LiveKit session's options, in LiveKit's names and units (seconds): what a session report
//! states (`options`, `sdk_version`), else what the meta line states (`options`, `version`), else
//! LiveKit's defaults. docs/DESIGN.md ("The livekit-agents dialect") gives each default's source.

use serde_json::{Map, Value};
use turnfence_model::turn::Interruption;
use turnfence_model::Millis;

use crate::trace::stack_options::{flag, seconds};
use crate::trace::InputError;

/// The options a LiveKit session ran with, as far as the checker reads them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The stack's version, where stated.
    pub version: Option<String>,
    /// `allow_interruptions`: the session's replies may be interrupted (a speech's own choice,
    /// `say(..., allow_interruptions=…)`, is not in the log).
    pub allow_interruptions: bool,
    /// `min_interruption_duration`, `false_interruption_timeout`, `resume_false_interruption`.
    pub interruption: Interruption,
    /// `aec_warmup_duration`: speech interrupts nothing this long after the agent first speaks.
    pub aec_warmup_ms: Option<Millis>,
    /// `min_interruption_words`: a user's turn with fewer words interrupts nothing (0: any).
    pub min_words: u64,
    /// The meta line states the options (a report does not state how a pause is decided).
    pub pause_stated: bool,
    /// The user's speech (its voice activity, its transcripts) pauses or interrupts a speech:
    /// not under `turn_detection` `manual` or `realtime_llm`, where LiveKit turns interruption
    /// by audio activity off (`AgentActivity.__init__`: `_interruption_by_audio_activity_enabled`,
    /// checked first by `_interrupt_by_audio_activity`; `on_interim_transcript` and
    /// `on_final_transcript` do not call it under those modes; 1.6.4 and 1.8.9 alike).
    pub speech_interrupts: bool,
}

impl Default for Options {
    /// LiveKit's defaults (livekit-agents 1.6 to 1.8: `AgentSession.__init__`).
    fn default() -> Options {
        Options {
            version: None,
            allow_interruptions: true,
            interruption: Interruption::LIVEKIT,
            aec_warmup_ms: Some(3_000),
            min_words: 0,
            pause_stated: false,
            speech_interrupts: true,
        }
    }
}

/// The option names of LiveKit's `AgentSession` (and of a report's `options`) that do not bear on
/// a rule the checker judges: read and left.
const LEFT: &[&str] = &[
    "discard_audio_if_uninterruptible",
    "user_away_timeout",
    "min_endpointing_delay",
    "max_endpointing_delay",
    "max_tool_steps",
    "min_consecutive_speech_delay",
    "preemptive_generation",
    "recording_options",
];

impl Options {
    /// The meta line's `version` and `options` over LiveKit's defaults. An option it does not
    /// know, or a value of the wrong type, is an input error on line 1.
    pub fn from_meta(meta: &Value) -> Result<Options, InputError> {
        let mut options = Options::default();
        if let Some(v) = meta.get("version") {
            let v = v
                .as_str()
                .ok_or_else(|| InputError::at(1, "meta line: `version` is a string"))?;
            options.version = Some(v.to_owned());
        }
        match meta.get("options") {
            None => {}
            Some(Value::Object(o)) => {
                options
                    .apply(o)
                    .map_err(|e| InputError::at(1, format!("meta line: {e}")))?;
                options.pause_stated = true;
            }
            Some(_) => return Err(InputError::at(1, "meta line: `options` is an object")),
        }
        Ok(options)
    }

    /// A session report's `options` and `sdk_version` over `meta`'s: what the log states wins.
    pub fn from_report(report: &Map<String, Value>, meta: &Options) -> Result<Options, String> {
        let mut options = meta.clone();
        if let Some(v) = report.get("sdk_version").and_then(Value::as_str) {
            options.version = Some(v.to_owned());
        }
        match report.get("options") {
            None | Some(Value::Null) => {}
            Some(Value::Object(o)) => options.apply(o)?,
            Some(_) => return Err("`options` is an object".to_owned()),
        }
        Ok(options)
    }

    fn apply(&mut self, o: &Map<String, Value>) -> Result<(), String> {
        for (k, v) in o {
            match k.as_str() {
                "allow_interruptions" => self.allow_interruptions = flag(k, v)?,
                "resume_false_interruption" => self.interruption.resume = flag(k, v)?,
                "min_interruption_duration" => {
                    self.interruption.min_ms = seconds(k, v)?.unwrap_or_default()
                }
                "false_interruption_timeout" | "agent_false_interruption_timeout" => {
                    self.interruption.false_timeout_ms = seconds(k, v)?
                }
                "aec_warmup_duration" => self.aec_warmup_ms = seconds(k, v)?,
                "min_interruption_words" => {
                    self.min_words = v.as_u64().ok_or_else(|| {
                        format!("option `{k}` is a whole number of words, not {v}")
                    })?
                }
                "turn_detection" => {
                    // A mode's name, `null` (LiveKit's default), or a turn detector's.
                    let mode = match v {
                        Value::String(m) => Some(m.as_str()),
                        Value::Null => None,
                        _ => {
                            return Err(format!(
                                "option `{k}` is a mode's name (vad, stt, manual, realtime_llm) or null, not {v}"
                            ))
                        }
                    };
                    self.speech_interrupts = !matches!(mode, Some("manual" | "realtime_llm"));
                }
                k if LEFT.contains(&k) => {}
                k => {
                    return Err(format!(
                        "unknown LiveKit option `{k}` (options are AgentSession's, in its names and units: allow_interruptions, min_interruption_duration, false_interruption_timeout, resume_false_interruption, aec_warmup_duration, …)"
                    ))
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Options;
    use serde_json::json;

    /// Under `manual` and `realtime_llm` the user's speech interrupts nothing; any other mode, a
    /// turn detector's name or `null` (LiveKit's default) leaves it on; another type is an error.
    #[test]
    fn turn_detection_decides_whether_speech_interrupts() {
        let read = |mode| Options::from_meta(&json!({ "options": { "turn_detection": mode } }));
        for (mode, interrupts) in [
            (json!("manual"), false),
            (json!("realtime_llm"), false),
            (json!("vad"), true),
            (json!("stt"), true),
            (json!("MultilingualModel"), true),
            (json!(null), true),
        ] {
            assert_eq!(
                read(mode.clone()).unwrap().speech_interrupts,
                interrupts,
                "{mode}"
            );
        }
        assert!(Options::default().speech_interrupts);
        assert!(read(json!(1)).is_err());
    }
}
