//! A Pipecat pipeline's options, as the meta line states them (`options`, in Pipecat's names and
//! units: seconds), and its version (`version`): what the rules need that the frames do not say.
//! docs/DESIGN.md ("The pipecat dialect") gives each default's source.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use turnfence_model::Millis;

use super::mute::Strategy;
use crate::trace::stack_options::{flag, seconds};
use crate::trace::InputError;

/// How a registered tool runs: `register_function(name, handler, cancel_on_interruption=…,
/// timeout_secs=…)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tool {
    /// An interruption cancels the call (Pipecat's default); `false`: it runs through.
    pub cancel_on_interruption: bool,
    /// The call is cancelled when it has run this long.
    pub timeout_ms: Option<Millis>,
}

/// What the checker reads of a pipeline's options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The version, as `(major, minor, patch)`; the newest pinned one where not stated.
    pub version: (u64, u64, u64),
    /// An interruption acts on the replies (but those their own frame makes uninterruptible):
    /// before 1.0 as `PipelineParams(allow_interruptions)` says, and the user turn start
    /// strategies' `enable_interruptions` (since 0.0.99); from 1.0 always (see
    /// [`Options::from_meta`]).
    pub allow_interruptions: bool,
    /// `function_call_timeout_secs`: every call's timeout unless its tool states its own.
    pub call_timeout_ms: Option<Millis>,
    /// The registered tools.
    pub tools: BTreeMap<String, Tool>,
    /// The output transport's chunk, in ms (`audio_out_10ms_chunks`, 4 by default).
    pub chunk_ms: Millis,
    /// The strategies of the pipeline's `STTMuteFilter` (`stt_mute_filter`, before 1.0), if it
    /// has one.
    pub stt_mute: Option<Vec<Strategy>>,
}

/// The version when the meta line names none: the newest the corpus pins.
const NEWEST: (u64, u64, u64) = (1, 14, 0);

/// The options Pipecat's observer writes that bear on no rule the checker judges: read and left.
const LEFT: &[&str] = &[
    "user_turn_stop_strategies",
    "user_mute_strategies",
    "aggregation_timeout",
    "vad",
    "audio_out_sample_rate",
];

impl Default for Options {
    fn default() -> Options {
        Options {
            version: NEWEST,
            allow_interruptions: true,
            call_timeout_ms: None,
            tools: BTreeMap::new(),
            chunk_ms: 40,
            stt_mute: None,
        }
    }
}

impl Options {
    /// The meta line's `version` and `options` over Pipecat's defaults. An option it does not
    /// know, or a value of the wrong type, is an input error on line 1.
    pub fn from_meta(meta: &Value) -> Result<Options, InputError> {
        let err = |m: String| InputError::at(1, format!("meta line: {m}"));
        let mut options = Options::default();
        if let Some(v) = meta.get("version") {
            let v = v
                .as_str()
                .ok_or_else(|| err("`version` is a string".into()))?;
            options.version = parse_version(v).ok_or_else(|| {
                err(format!(
                    "`version` {v:?} is not a Pipecat version (MAJOR.MINOR.PATCH)"
                ))
            })?;
        }
        // `function_call_timeout_secs` came in 0.0.101 with a 10 s default; 1.0.0 made it None.
        if (0, 0, 101) <= options.version && options.version < (1, 0, 0) {
            options.call_timeout_ms = Some(10_000);
        }
        match meta.get("options") {
            None => {}
            Some(Value::Object(o)) => options.apply(o).map_err(err)?,
            Some(_) => return Err(err("`options` is an object".into())),
        }
        // From 1.0 Pipecat has no pipeline-wide switch of interruptions: the interruption is the
        // `InterruptionFrame` itself, which the user aggregator broadcasts at a user turn start
        // whose strategy enables interruptions (`LLMUserAggregator._on_user_turn_started`: by
        // that strategy's own `enable_interruptions`, so strategies that disagree interrupt on
        // some turns and not others) and the application may push as its own; every processor
        // acts on it whatever the strategies say. So a strategy that disables interruptions
        // shows as the frame's absence, and every reply is interruptible but for its own frame.
        if options.version >= (1, 0, 0) {
            options.allow_interruptions = true;
        }
        Ok(options)
    }

    /// Audio chunks are pushed after they are written (logged at the end of their playback):
    /// since 0.0.86; before, just before they are written (logged at their start).
    pub fn logs_chunk_at_end(&self) -> bool {
        self.version >= (0, 0, 86)
    }

    /// The tool registered as `name` (Pipecat's defaults where the options do not state it).
    pub fn tool(&self, name: &str) -> Tool {
        self.tools.get(name).copied().unwrap_or(Tool {
            cancel_on_interruption: true,
            timeout_ms: None,
        })
    }

    /// A call's timeout: its tool's own, else the pipeline's.
    pub fn timeout_of(&self, name: &str) -> Option<Millis> {
        self.tool(name).timeout_ms.or(self.call_timeout_ms)
    }

    fn apply(&mut self, o: &Map<String, Value>) -> Result<(), String> {
        for (k, v) in o {
            match k.as_str() {
                "allow_interruptions" => {
                    self.allow_interruptions &= flag(k, v)?;
                }
                "user_turn_start_strategies" => {
                    if !self.strategies_interrupt(v)? {
                        self.allow_interruptions = false;
                    }
                }
                "function_call_timeout_secs" => self.call_timeout_ms = seconds(k, v)?,
                "tools" => self.apply_tools(v)?,
                "stt_mute_filter" => self.stt_mute = Some(strategies(k, v)?),
                "audio_out_10ms_chunks" => {
                    let n = v
                        .as_u64()
                        .filter(|n| (1..=100).contains(n))
                        .ok_or_else(|| format!("option `{k}` is a count from 1 to 100, not {v}"))?;
                    self.chunk_ms = n * 10;
                }
                k if LEFT.contains(&k) => {}
                k => {
                    return Err(format!(
                        "unknown Pipecat option `{k}` (options are the pipeline's, in Pipecat's names and units: allow_interruptions, user_turn_start_strategies, function_call_timeout_secs, tools, audio_out_10ms_chunks, …)"
                    ))
                }
            }
        }
        Ok(())
    }

    /// The user turn start strategies, `[{strategy, enable_interruptions}]`: user speech
    /// interrupts when a strategy that may start a turn enables interruptions (Pipecat's default).
    fn strategies_interrupt(&self, v: &Value) -> Result<bool, String> {
        let Value::Array(list) = v else {
            return Err("option `user_turn_start_strategies` is a list".into());
        };
        if list.is_empty() {
            return Ok(true);
        }
        let mut any = false;
        for s in list {
            let enabled = match s.get("enable_interruptions") {
                None => true,
                Some(e) => flag("enable_interruptions", e)?,
            };
            any |= enabled;
        }
        Ok(any)
    }

    fn apply_tools(&mut self, v: &Value) -> Result<(), String> {
        let Value::Object(tools) = v else {
            return Err("option `tools` is an object of tool names".into());
        };
        for (name, t) in tools {
            let Value::Object(t) = t else {
                return Err(format!("tool `{name}` is an object"));
            };
            let mut tool = Tool {
                cancel_on_interruption: true,
                timeout_ms: None,
            };
            for (k, v) in t {
                match k.as_str() {
                    "cancel_on_interruption" => tool.cancel_on_interruption = flag(k, v)?,
                    "timeout_secs" => tool.timeout_ms = seconds(k, v)?,
                    k => {
                        return Err(format!(
                        "tool `{name}`: unknown key `{k}` (cancel_on_interruption, timeout_secs)"
                    ))
                    }
                }
            }
            self.tools.insert(name.clone(), tool);
        }
        Ok(())
    }
}

/// A list of strategy names: those the dialect does not know are kept as unknown (never guessed).
fn strategies(k: &str, v: &Value) -> Result<Vec<Strategy>, String> {
    let Value::Array(list) = v else {
        return Err(format!("option `{k}` is a list of strategy names"));
    };
    list.iter()
        .map(|s| {
            s.as_str()
                .map(Strategy::named)
                .ok_or_else(|| format!("option `{k}`: a strategy is a name, not {s}"))
        })
        .collect()
}

/// `MAJOR.MINOR.PATCH` (a suffix after the patch number, `1.14.0rc1`, is ignored).
fn parse_version(v: &str) -> Option<(u64, u64, u64)> {
    let mut parts = v.splitn(3, '.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let patch: String = parts
        .next()?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Some((major, minor, patch.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{parse_version, Options};

    /// A call's timeout by default: none before 0.0.101, 10 s from it until 1.0.0, none again
    /// from 1.0.0 (`function_call_timeout_secs`'s default in each release).
    #[test]
    fn a_calls_default_timeout_is_its_releases() {
        let timeout = |v: &str| {
            Options::from_meta(&json!({ "version": v }))
                .unwrap()
                .call_timeout_ms
        };
        assert_eq!(timeout("0.0.84"), None);
        assert_eq!(timeout("0.0.100"), None);
        assert_eq!(timeout("0.0.101"), Some(10_000));
        assert_eq!(timeout("0.0.105"), Some(10_000));
        assert_eq!(timeout("0.9.9"), Some(10_000));
        assert_eq!(timeout("1.0.0"), None);
        assert_eq!(timeout("1.14.0"), None);
        let stated =
            json!({ "version": "0.0.101", "options": { "function_call_timeout_secs": 2.5 } });
        assert_eq!(
            Options::from_meta(&stated).unwrap().call_timeout_ms,
            Some(2_500)
        );
    }

    #[test]
    fn a_version_is_major_minor_patch_its_suffix_ignored() {
        assert_eq!(parse_version("1.14.0"), Some((1, 14, 0)));
        assert_eq!(parse_version("1.14.0rc1"), Some((1, 14, 0)));
        assert_eq!(parse_version("0.0.84"), Some((0, 0, 84)));
        assert_eq!(parse_version("1.14"), None);
        assert_eq!(parse_version("one.2.3"), None);
    }
}
