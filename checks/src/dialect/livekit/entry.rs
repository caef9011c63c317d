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

#[cfg(test)]
mod tests {
    use crate::report::words::said;
    use crate::trace::{Dialect, Party};

    #[test]
    fn a_line_names_its_session_by_its_key_and_a_tts_metric_comes_from_the_tts() {
        let s = said(
            Dialect(&super::Entry),
            Some("room"),
            r#"{"type":"agent_state_changed","new_state":"speaking","room":"r1"}"#,
        );
        assert_eq!(s.words, "agent_state_changed speaking");
        assert_eq!(s.session.as_deref(), Some("r1"));
        let s = said(
            Dialect(&super::Entry),
            None,
            r#"{"type":"metrics_collected","metrics":{"type":"tts_metrics"}}"#,
        );
        assert_eq!((s.from, s.to), (Party::Tts, Party::Agent));
    }

    /// Every way a line of this stack is said: who passes it to whom, in the stack's words; and
    /// the first lines it writes recognised as its own among every dialect the registry has.
    #[test]
    fn every_line_is_said_between_the_parties_it_passes_and_its_first_known() {
        use Party::*;
        let cases: &[(&str, Party, Party, &str)] = &[
            (
                r#"{"type":"user_state_changed","new_state":"speaking"}"#,
                User,
                Agent,
                "user_state_changed speaking",
            ),
            (
                r#"{"type":"user_input_transcribed","transcript":"hi"}"#,
                User,
                Agent,
                "user_input_transcribed",
            ),
            (
                r#"{"type":"agent_state_changed","new_state":"thinking"}"#,
                Agent,
                Agent,
                "agent_state_changed thinking",
            ),
            (
                r#"{"type":"metrics_collected","metrics":{"type":"llm_metrics"}}"#,
                Llm,
                Agent,
                "metrics_collected llm_metrics",
            ),
            (
                r#"{"type":"metrics_collected","metrics":{"type":"eou_metrics"}}"#,
                Agent,
                Agent,
                "metrics_collected eou_metrics",
            ),
            (
                r#"{"type":"function_tools_executed"}"#,
                Tools,
                Agent,
                "function_tools_executed",
            ),
            (
                r#"{"type":"tool_execution_updated"}"#,
                Tools,
                Agent,
                "tool_execution_updated",
            ),
            (
                r#"{"type":"conversation_item_added","item":{"role":"user"}}"#,
                User,
                Agent,
                "conversation_item_added user",
            ),
            (
                r#"{"type":"conversation_item_added","item":{"role":"assistant"}}"#,
                Agent,
                User,
                "conversation_item_added assistant",
            ),
            (
                r#"{"type":"conversation_item_added","item":{"type":"function_call"}}"#,
                Agent,
                Tools,
                "conversation_item_added function_call",
            ),
            (
                r#"{"type":"conversation_item_added","item":{"type":"function_call_output"}}"#,
                Tools,
                Agent,
                "conversation_item_added function_call_output",
            ),
            (
                r#"{"type":"conversation_item_added","item":{"type":"agent_handoff"}}"#,
                Agent,
                Agent,
                "conversation_item_added agent_handoff",
            ),
            (r#"{"type":"close"}"#, Agent, Agent, "close"),
            (r#"{"events":[]}"#, Agent, Agent, "session report"),
            (r#"{"x":1}"#, Agent, Agent, "(unknown)"),
        ];
        crate::dialect::assert_said_and_recognised(
            &super::Entry,
            cases,
            &[
                r#"{"type":"agent_state_changed","old_state":"initializing","new_state":"listening","created_at":1.5}"#,
                r#"{"job_id":"j","events":[],"options":{}}"#,
            ],
        );
    }
}
