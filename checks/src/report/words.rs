//! A line of a trace in the stack's own words: who said what to whom (the event's own type or
//! name, as the log wrote it) and which session it belongs to, as far as the line says. Reports
//! draw a finding's story with it, and a baseline's fingerprint hashes it.

use serde_json::Value;

use crate::trace::Dialect;

/// A party a line's event passes between: the participants of a story's diagram, declared in
/// this order (only those its lines name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Party {
    User,
    /// The system under check: the app (canonical, lab, openai-realtime).
    App,
    /// A LiveKit `AgentSession`.
    Agent,
    /// The OpenAI Realtime server.
    Server,
    Llm,
    Tts,
    /// The turn's children: model streams, retrievals, tools.
    Tools,
    Player,
}

impl Party {
    /// Its id in a Mermaid diagram.
    pub fn id(self) -> &'static str {
        match self {
            Party::User => "User",
            Party::App => "App",
            Party::Agent => "Agent",
            Party::Server => "Server",
            Party::Llm => "LLM",
            Party::Tts => "TTS",
            Party::Tools => "Tools",
            Party::Player => "Player",
        }
    }

    /// Its name as a reader sees it.
    pub fn label(self) -> &'static str {
        match self {
            Party::User => "user",
            Party::App => "app",
            Party::Agent => "agent session",
            Party::Server => "server",
            Party::Llm => "LLM",
            Party::Tts => "TTS",
            Party::Tools => "tools and children",
            Party::Player => "player",
        }
    }
}

/// One line of a trace as the stack said it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Said {
    pub from: Party,
    pub to: Party,
    /// The event's own name as the line writes it (`response.cancel`, `agent_state_changed
    /// speaking`, `delivered`, `model response.started`).
    pub words: String,
    /// The session the line names, where it names one.
    pub session: Option<String>,
}

/// The line `text` of a trace read in `dialect`, whose session is named by the field
/// `session_key` (livekit-agents; the other dialects have their own). A line that is not a JSON
/// object is said as `(not JSON)`.
pub fn said(dialect: Dialect, session_key: Option<&str>, text: &str) -> Said {
    let text = text.trim_start_matches('\u{feff}').trim_end();
    let Ok(Value::Object(v)) = serde_json::from_str::<Value>(text) else {
        return Said {
            from: home(dialect),
            to: home(dialect),
            words: "(not JSON)".to_owned(),
            session: None,
        };
    };
    let v = Value::Object(v);
    let (from, to, words) = if v.get("meta").is_some() {
        (home(dialect), home(dialect), "meta".to_owned())
    } else {
        match dialect {
            Dialect::Canonical => canonical(&v),
            Dialect::Lab => lab(&v),
            Dialect::OpenaiRealtime => realtime(&v),
            Dialect::LivekitAgents => livekit(&v),
            Dialect::Pipecat => pipecat(&v),
        }
    };
    let key = match dialect {
        Dialect::Canonical => "session",
        Dialect::Lab => "scenario",
        Dialect::OpenaiRealtime => "session",
        Dialect::LivekitAgents => session_key.unwrap_or("session"),
        Dialect::Pipecat => "session",
    };
    let session = match v.get(key) {
        Some(Value::String(s)) => Some(s.clone()),
        // A canonical line without a session is in the default one.
        None if dialect == Dialect::Canonical && v.get("meta").is_none() => Some("main".into()),
        _ => None,
    };
    Said {
        from,
        to,
        words,
        session,
    }
}

/// The party a dialect's system under check is.
fn home(dialect: Dialect) -> Party {
    match dialect {
        Dialect::LivekitAgents => Party::Agent,
        _ => Party::App,
    }
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// A canonical line: an input from whoever gives it to the app, an output from the app to whom it
/// is for, by its name; the fence machine's and anything else, the app's own step.
fn canonical(v: &Value) -> (Party, Party, String) {
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

/// A lab line: its component tells the app what happened (`component event`).
fn lab(v: &Value) -> (Party, Party, String) {
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

/// An OpenAI Realtime line: a client event from the app (the user's audio from the user, a
/// function's output from the tool) to the server, a server event to the app, the app's player
/// facts between the app and its player.
fn realtime(v: &Value) -> (Party, Party, String) {
    let event = v.get("event").unwrap_or(v);
    let kind = str_at(event, "/type").unwrap_or("?");
    let (from, to) = match str_at(v, "/dir").unwrap_or("client") {
        "server" => (Party::Server, Party::App),
        "app" if kind == "playback.played" => (Party::Player, Party::App),
        "app" if kind.starts_with("playback.") => (Party::App, Party::Player),
        "app" => (Party::App, Party::App),
        _ if kind == "input_audio_buffer.append" => (Party::User, Party::Server),
        _ if str_at(event, "/item/type") == Some("function_call_output") => {
            (Party::Tools, Party::Server)
        }
        _ => (Party::App, Party::Server),
    };
    (from, to, kind.to_owned())
}

/// A LiveKit Agents line: the user's events to the agent session, the LLM's, TTS's and tools'
/// reports to it, its own state changes to itself; a session report line is its own.
/// A Pipecat observer's line: the frame by its class name, between the parties it passes (the
/// pipeline is the app; a played audio chunk is the loudspeaker's, one synthesized the TTS's).
fn pipecat(v: &Value) -> (Party, Party, String) {
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

fn livekit(v: &Value) -> (Party, Party, String) {
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
        "function_tools_executed" | "tool_execution_updated" => (Party::Tools, Party::Agent, None),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_dialect_says_a_line_in_its_stacks_words() {
        let s = said(
            Dialect::OpenaiRealtime,
            None,
            r#"{"t_ms":1,"dir":"client","event":{"type":"response.cancel"}}"#,
        );
        assert_eq!(
            (s.from, s.to, s.words.as_str()),
            (Party::App, Party::Server, "response.cancel")
        );
        let s = said(
            Dialect::LivekitAgents,
            Some("room"),
            r#"{"type":"agent_state_changed","new_state":"speaking","room":"r1"}"#,
        );
        assert_eq!(s.words, "agent_state_changed speaking");
        assert_eq!(s.session.as_deref(), Some("r1"));
        let s = said(
            Dialect::Canonical,
            None,
            r#"{"at":0,"input":"stop","turn":"t"}"#,
        );
        assert_eq!(
            (s.from, s.to, s.session.as_deref()),
            (Party::User, Party::App, Some("main"))
        );
        let s = said(
            Dialect::Lab,
            None,
            r#"{"t_ms":0,"scenario":"s","component":"model","event":"response.started"}"#,
        );
        assert_eq!(
            (s.from, s.words.as_str()),
            (Party::Tools, "model response.started")
        );
        assert_eq!(said(Dialect::Lab, None, "[1,").words, "(not JSON)");
    }

    /// Whatever a line holds, it is said (a line `check` refused is never read again, but a
    /// trace can change between the two readings).
    #[test]
    fn any_line_is_said_without_panicking() {
        let lines = [
            "",
            "\u{feff}{}",
            "{}",
            r#"{"meta":1}"#,
            r#"{"input":5,"output":[1]}"#,
            r#"{"fact":[1],"session":3}"#,
            r#"{"fact":{}}"#,
            r#"{"dir":"app","event":[]}"#,
            r#"{"dir":7,"event":{"type":null,"item":{"type":1}}}"#,
            r#"{"type":"metrics_collected","metrics":{"type":3}}"#,
            r#"{"type":"conversation_item_added","item":{"role":7,"type":"function_call"}}"#,
            r#"{"type":"user_state_changed"}"#,
            r#"{"component":{},"event":1,"scenario":null}"#,
            "{\"type\":\"a;b#c<d>\"}",
        ];
        for dialect in [
            Dialect::Canonical,
            Dialect::Lab,
            Dialect::OpenaiRealtime,
            Dialect::LivekitAgents,
        ] {
            for line in lines {
                let s = said(dialect, Some("room"), line);
                assert!(!s.words.is_empty(), "{dialect:?} {line:?}");
            }
        }
    }
}
