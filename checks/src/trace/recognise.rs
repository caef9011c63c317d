//! A log without a meta line, its dialect recognised from its first line by the keys each
//! stack writes — never guessed: a line no dialect's shape fits is read as canonical, and a
//! recognised one says which dialect and why, beside the verdict.

use serde_json::{Map, Value};

use super::Dialect;

/// The keys that give a canonical line its kind (a line has exactly one): a line with one is no
/// stack's.
pub(super) const CANONICAL_KINDS: [&str; 4] = ["meta", "input", "output", "session_end"];

/// The dialect a log's first line shows, and why; `None`: no stack's shape fits it (the
/// canonical form, or a line the canonical reader will refuse with its reason).
pub(super) fn recognise(first: &str) -> Option<(Dialect, &'static str)> {
    let Ok(Value::Object(line)) = serde_json::from_str::<Value>(first) else {
        return None;
    };
    if CANONICAL_KINDS.iter().any(|k| line.contains_key(*k)) {
        return None;
    }
    let text =
        |o: &Map<String, Value>, k: &str| o.get(k).and_then(Value::as_str).map(str::to_owned);
    if ["scenario", "turn_id", "component", "event"]
        .iter()
        .all(|k| line.contains_key(*k))
    {
        return Some((
            Dialect::Lab,
            "its first line has the lab's `scenario`, `turn_id`, `component` and `event`",
        ));
    }
    if text(&line, "frame").is_some_and(|f| f.ends_with("Frame")) && line.contains_key("t_ms") {
        return Some((
            Dialect::Pipecat,
            "its first line is a Pipecat frame as the observer writes it (`t_ms`, `frame`)",
        ));
    }
    let envelope = text(&line, "dir")
        .filter(|d| ["client", "server", "app"].contains(&d.as_str()))
        .and_then(|_| line.get("event")?.as_object().cloned());
    if let Some(kind) = envelope.as_ref().and_then(|e| text(e, "type")) {
        if realtime_type(&kind) {
            return Some((
                Dialect::OpenaiRealtime,
                "its first line is a Realtime event in a `dir`/`event` envelope",
            ));
        }
    }
    let kind = text(&line, "type");
    if let Some(kind) = &kind {
        if realtime_type(kind) && kind.contains('.') {
            return Some((
                Dialect::OpenaiRealtime,
                "its first line's `type` is a Realtime event's",
            ));
        }
        if line.contains_key("created_at") && is_snake_case(kind) {
            return Some((
                Dialect::LivekitAgents,
                "its first line is an event with a LiveKit `type` and `created_at`",
            ));
        }
    }
    if kind.is_none() && matches!(line.get("events"), Some(Value::Array(_))) {
        return Some((
            Dialect::LivekitAgents,
            "its first line is a session report with `events`",
        ));
    }
    None
}

/// A Realtime API event's type (GA or beta names), or the app's player events.
fn realtime_type(kind: &str) -> bool {
    const PREFIXES: [&str; 9] = [
        "session.",
        "response.",
        "input_audio_buffer.",
        "output_audio_buffer.",
        "conversation.",
        "rate_limits.",
        "transcription_session.",
        "playback.",
        "mcp_list_tools.",
    ];
    kind == "error" || PREFIXES.iter().any(|p| kind.starts_with(p))
}

/// A LiveKit event type's shape: `agent_state_changed`, `close`.
fn is_snake_case(kind: &str) -> bool {
    !kind.is_empty() && kind.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::recognise;
    use crate::trace::Dialect;

    fn dialect(first: &str) -> Option<Dialect> {
        recognise(first).map(|(d, _)| d)
    }

    #[test]
    fn each_stack_is_recognised_by_the_keys_it_writes_and_nothing_else_is() {
        let realtime = r#"{"t_ms":0,"dir":"client","event":{"type":"session.update"}}"#;
        assert_eq!(dialect(realtime), Some(Dialect::OpenaiRealtime));
        let bare = r#"{"t_ms":0,"type":"response.created","response":{}}"#;
        assert_eq!(dialect(bare), Some(Dialect::OpenaiRealtime));
        let error = r#"{"t_ms":0,"dir":"server","event":{"type":"error","error":{}}}"#;
        assert_eq!(dialect(error), Some(Dialect::OpenaiRealtime));
        let livekit = r#"{"type":"agent_state_changed","old_state":"initializing","new_state":"listening","created_at":1.5}"#;
        assert_eq!(dialect(livekit), Some(Dialect::LivekitAgents));
        let report = r#"{"job_id":"j","events":[],"options":{}}"#;
        assert_eq!(dialect(report), Some(Dialect::LivekitAgents));
        let pipecat = r#"{"t_ms":0,"frame":"StartFrame","id":1,"src":"a","dst":"b","dir":"down"}"#;
        assert_eq!(dialect(pipecat), Some(Dialect::Pipecat));
        let lab = r#"{"t_ms":0,"scenario":"s","turn_id":"t","component":"turn","event":"accepted","detail":{}}"#;
        assert_eq!(dialect(lab), Some(Dialect::Lab));
        for none in [
            r#"{"meta":{}}"#,
            r#"{"at":0,"input":"accept","turn":"t1","generation":1,"mode":"text"}"#,
            r#"{"at":0,"output":"terminal","turn":"t1","state":"cancelled"}"#,
            r#"{"session":"s","session_end":true}"#,
            r#"{"type":"Agent State","created_at":1}"#,
            r#"{"type":"agent_state_changed"}"#,
            r#"{"t_ms":0,"dir":"sideways","event":{"type":"response.created"}}"#,
            r#"{"t_ms":0,"type":"hello"}"#,
            r#"{"t_ms":0,"frame":"Start"}"#,
            r#"{"frame":"StartFrame"}"#,
            r#"{"events":[],"type":"x"}"#,
            "[1,2]",
            "not json",
        ] {
            assert_eq!(dialect(none), None, "{none}");
        }
    }
}
