//! The lab's `events.jsonl` vocabulary: the registry's entry for it.

use serde_json::{Map, Value};

use super::reader::LabReader;
use crate::dialect::str_at;
use crate::trace::{judging, turn_only, DialectEntry, InputError, Judging, Party, Reading};

/// The lab's dialect.
pub struct Entry;

impl DialectEntry for Entry {
    fn name(&self) -> &'static str {
        "lab"
    }

    fn about(&self) -> &'static str {
        "the lab's `events.jsonl` vocabulary"
    }

    fn recognise(&self, first: &Map<String, Value>) -> Option<&'static str> {
        ["scenario", "turn_id", "component", "event"]
            .iter()
            .all(|k| first.contains_key(*k))
            .then_some(
                "its first line has the lab's `scenario`, `turn_id`, `component` and `event`",
            )
    }

    fn reader(&self, read: &Reading) -> Result<Box<dyn Judging>, InputError> {
        turn_only(read)?;
        judging(LabReader::default(), read.profile)
    }

    /// A lab line names its scenario.
    fn session_of(&self, line: &Value, _key: Option<&str>) -> Option<String> {
        line.get("scenario")?.as_str().map(str::to_owned)
    }

    /// Its component tells the app what happened (`component event`).
    fn said(&self, v: &Value) -> (Party, Party, String) {
        let component = str_at(v, "/component").unwrap_or("?");
        let event = str_at(v, "/event").unwrap_or("?");
        let from = match component {
            "client" | "vad" => Party::User,
            "speaker" => Party::Player,
            "model" | "retriever" | "tts" | "tool" | "planner" | "reconciler" | "adapter" => {
                Party::Tools
            }
            _ => Party::App,
        };
        (from, Party::App, format!("{component} {event}"))
    }
}
