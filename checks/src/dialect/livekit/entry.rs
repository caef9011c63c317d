//! LiveKit Agents session events (the event stream, or a session report): the registry's entry
//! for them.

use serde_json::{Map, Value};
use turnfence_model::turn::Profile;

use super::{Livekit, LivekitReader};
use crate::dialect::str_at;
use crate::trace::{judging, turn_only, DialectEntry, InputError, Judging, Party, Reading};

/// The `livekit-agents` dialect.
pub struct Entry;

impl DialectEntry for Entry {
    fn name(&self) -> &'static str {
        "livekit-agents"
    }

    fn about(&self) -> &'static str {
        "LiveKit Agents session events"
    }

    fn recognise(&self, first: &Map<String, Value>) -> Option<&'static str> {
        match first.get("type") {
            Some(Value::String(kind))
                if first.contains_key("created_at") && is_snake_case(kind) =>
            {
                Some("its first line is an event with a LiveKit `type` and `created_at`")
            }
            None if matches!(first.get("events"), Some(Value::Array(_))) => {
                Some("its first line is a session report with `events`")
            }
            _ => None,
        }
    }

    fn profile(&self) -> Option<Profile> {
        Some(Profile::LivekitAgents)
    }

    fn reads_session_key(&self) -> bool {
        true
    }

    fn reader(&self, read: &Reading) -> Result<Box<dyn Judging>, InputError> {
        turn_only(read)?;
        let dialect = Livekit::keyed(read.session_key.clone());
        judging(LivekitReader::new(dialect), read.profile)
    }

    fn home(&self) -> Party {
        Party::Agent
    }

    /// A line names its session in the reading's session key, else `session`.
    fn session_of(&self, line: &Value, key: Option<&str>) -> Option<String> {
        line.get(key.unwrap_or("session"))?
            .as_str()
            .map(str::to_owned)
    }

    /// The user's events to the agent session, the LLM's, TTS's and tools' reports to it, its
    /// own state changes to itself; a session report line is its own.
    fn said(&self, v: &Value) -> (Party, Party, String) {
        let Some(kind) = str_at(v, "/type") else {
            let words = if v.get("events").is_some() {
                "session report"
            } else {
                "(unknown)"
            };
            return (Party::Agent, Party::Agent, words.to_owned());
        };
        let (from, to, detail) = match kind {
            "user_state_changed" => (Party::User, Party::Agent, str_at(v, "/new_state")),
            "user_input_transcribed" => (Party::User, Party::Agent, None),
            "agent_state_changed" => (Party::Agent, Party::Agent, str_at(v, "/new_state")),
            "metrics_collected" => {
                let metrics = str_at(v, "/metrics/type");
                let from = match metrics {
                    Some("llm_metrics") => Party::Llm,
                    Some("tts_metrics") => Party::Tts,
                    _ => Party::Agent,
                };
                (from, Party::Agent, metrics)
            }
            "function_tools_executed" | "tool_execution_updated" => {
                (Party::Tools, Party::Agent, None)
            }
            "conversation_item_added" => {
                let role = str_at(v, "/item/role");
                let item = str_at(v, "/item/type");
                let (from, to) = match (role, item) {
                    (Some("user"), _) => (Party::User, Party::Agent),
                    (Some("assistant"), _) => (Party::Agent, Party::User),
                    (_, Some("function_call")) => (Party::Agent, Party::Tools),
                    (_, Some("function_call_output")) => (Party::Tools, Party::Agent),
                    _ => (Party::Agent, Party::Agent),
                };
                (from, to, role.or(item))
            }
            _ => (Party::Agent, Party::Agent, None),
        };
        let words = match detail {
            Some(d) => format!("{kind} {d}"),
            None => kind.to_owned(),
        };
        (from, to, words)
    }
}

/// A LiveKit event type's shape: `agent_state_changed`, `close`.
fn is_snake_case(kind: &str) -> bool {
    !kind.is_empty() && kind.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
}
