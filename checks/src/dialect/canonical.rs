//! turnfence's own form (JSON Schema in `schema/`), of either machine: the registry's entry for
//! it. Its reader is the engine's own (`crate::trace::canonical`), which every other dialect's
//! events come to.

use serde_json::Value;
use turnfence_model::fence::FenceMachine;
use turnfence_model::turn::TurnMachine;

use crate::trace::canonical::{CanonicalReader, DEFAULT_SESSION};
use crate::trace::{judging, DialectEntry, InputError, Judging, Machine, Party, Reading};

use super::str_at;

/// The canonical form.
pub struct Entry;

impl DialectEntry for Entry {
    fn name(&self) -> &'static str {
        "canonical"
    }

    fn about(&self) -> &'static str {
        "turnfence's own form (JSON Schema in `schema/`)"
    }

    fn reads_fence(&self) -> bool {
        true
    }

    fn reader(&self, read: &Reading) -> Result<Box<dyn Judging>, InputError> {
        match read.machine {
            Machine::Turn => judging(CanonicalReader::<TurnMachine>::default(), read.profile),
            Machine::Fence => judging(CanonicalReader::<FenceMachine>::default(), read.profile),
        }
    }

    /// A line without a session is in the default one.
    fn session_of(&self, line: &Value, _key: Option<&str>) -> Option<String> {
        match line.get("session") {
            Some(Value::String(s)) => Some(s.clone()),
            None => Some(DEFAULT_SESSION.to_owned()),
            _ => None,
        }
    }

    /// An input from whoever gives it to the app, an output from the app to whom it is for, by
    /// its name; the fence machine's and anything else, the app's own step.
    fn said(&self, v: &Value) -> (Party, Party, String) {
        if let Some(name) = str_at(v, "/input") {
            let from = match name {
                "stop" | "speech_started" | "speech_stopped" | "transcribed" | "resume"
                | "disconnect" | "client_receive" | "client_ack" => Party::User,
                "frame_played" | "played" => Party::Player,
                "delta" | "checkpoint" | "child_completed" | "model_done" | "commit_acked" => {
                    Party::Tools
                }
                n if n.starts_with("tool_") => Party::Tools,
                _ => Party::App,
            };
            let to = match name {
                "spawn" | "commit_sent" => Party::Tools,
                _ => Party::App,
            };
            let (from, to) = if from == Party::App {
                (Party::App, to)
            } else {
                (from, Party::App)
            };
            return (from, to, name.to_owned());
        }
        if let Some(name) = str_at(v, "/output") {
            let to = match name {
                "stop_answered" | "turn_refused" => Party::User,
                "delivered" | "played" | "playback_cleared" | "playback_paused"
                | "playback_resumed" | "truncated" | "rendered" | "replayed" => Party::Player,
                "child_cancel_requested"
                | "child_started"
                | "child_cancelled"
                | "tool_not_started"
                | "tool_answered"
                | "cancel_deferred" => Party::Tools,
                _ => Party::App,
            };
            return (Party::App, to, name.to_owned());
        }
        let words = if v.get("session_end").is_some() {
            "session_end".to_owned()
        } else if let Some(fact) = v.get("fact") {
            match fact {
                Value::String(s) => format!("fact {s}"),
                Value::Object(o) => format!(
                    "fact {}",
                    o.keys().next().map(String::as_str).unwrap_or_default()
                ),
                _ => "fact".to_owned(),
            }
        } else {
            "(unknown)".to_owned()
        };
        (Party::App, Party::App, words)
    }
}
