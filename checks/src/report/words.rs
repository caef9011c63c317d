//! A line of a trace in the stack's own words: who said what to whom (the event's own type or
//! name, as the log wrote it) and which session it belongs to, as far as the line says. Reports
//! draw a finding's story with it, and a baseline's fingerprint hashes it.

use serde_json::Value;

use crate::trace::Dialect;
pub use crate::trace::Party;

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
/// `session_key` (where its dialect reads one; the others have their own). A line that is not a JSON
/// object is said as `(not JSON)`.
pub fn said(dialect: Dialect, session_key: Option<&str>, text: &str) -> Said {
    let text = text.trim_start_matches('\u{feff}').trim_end();
    let Ok(Value::Object(v)) = serde_json::from_str::<Value>(text) else {
        return Said {
            from: dialect.entry().home(),
            to: dialect.entry().home(),
            words: "(not JSON)".to_owned(),
            session: None,
        };
    };
    let v = Value::Object(v);
    let entry = dialect.entry();
    let (from, to, words) = if v.get("meta").is_some() {
        (entry.home(), entry.home(), "meta".to_owned())
    } else {
        entry.said(&v)
    };
    let session = match v.get("meta") {
        Some(_) => None,
        None => entry.session_of(&v, session_key),
    };
    Said {
        from,
        to,
        words,
        session,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(name: &str) -> Dialect {
        crate::dialect::by_name(name).unwrap()
    }

    #[test]
    fn each_dialect_says_a_line_in_its_stacks_words() {
        let s = said(
            d("openai-realtime"),
            None,
            r#"{"t_ms":1,"dir":"client","event":{"type":"response.cancel"}}"#,
        );
        assert_eq!(
            (s.from, s.to, s.words.as_str()),
            (Party::App, Party::Server, "response.cancel")
        );
        let s = said(
            d("livekit-agents"),
            Some("room"),
            r#"{"type":"agent_state_changed","new_state":"speaking","room":"r1"}"#,
        );
        assert_eq!(s.words, "agent_state_changed speaking");
        assert_eq!(s.session.as_deref(), Some("r1"));
        let s = said(
            d("canonical"),
            None,
            r#"{"at":0,"input":"stop","turn":"t"}"#,
        );
        assert_eq!(
            (s.from, s.to, s.session.as_deref()),
            (Party::User, Party::App, Some("main"))
        );
        let s = said(
            d("lab"),
            None,
            r#"{"t_ms":0,"scenario":"s","component":"model","event":"response.started"}"#,
        );
        assert_eq!(
            (s.from, s.words.as_str()),
            (Party::Tools, "model response.started")
        );
        assert_eq!(said(d("lab"), None, "[1,").words, "(not JSON)");
        // Who passed it: a LiveKit TTS's metrics come from the TTS; a Pipecat audio chunk played
        // goes from the pipeline to the loudspeaker, one synthesized comes from the TTS.
        let s = said(
            d("livekit-agents"),
            None,
            r#"{"type":"metrics_collected","metrics":{"type":"tts_metrics"}}"#,
        );
        assert_eq!((s.from, s.to), (Party::Tts, Party::Agent));
        let chunk = |played: bool| {
            let line = format!(r#"{{"t_ms":1,"frame":"TTSAudioRawFrame","played":{played}}}"#);
            let s = said(d("pipecat"), None, &line);
            (s.from, s.to, s.words)
        };
        assert_eq!(
            chunk(true),
            (
                Party::App,
                Party::Player,
                "TTSAudioRawFrame played".to_owned()
            )
        );
        assert_eq!(
            chunk(false),
            (
                Party::Tts,
                Party::App,
                "TTSAudioRawFrame synthesized".to_owned()
            )
        );
    }

    /// Every way each stack's line is said: who passes it to whom, in the stack's words.
    #[test]
    fn every_stack_line_is_said_between_the_parties_it_passes() {
        use Party::*;
        let cases: &[(&str, &str, Party, Party, &str)] = &[
            (
                "livekit-agents",
                r#"{"type":"user_state_changed","new_state":"speaking"}"#,
                User,
                Agent,
                "user_state_changed speaking",
            ),
            (
                "livekit-agents",
                r#"{"type":"user_input_transcribed","transcript":"hi"}"#,
                User,
                Agent,
                "user_input_transcribed",
            ),
            (
                "livekit-agents",
                r#"{"type":"agent_state_changed","new_state":"thinking"}"#,
                Agent,
                Agent,
                "agent_state_changed thinking",
            ),
            (
                "livekit-agents",
                r#"{"type":"metrics_collected","metrics":{"type":"llm_metrics"}}"#,
                Llm,
                Agent,
                "metrics_collected llm_metrics",
            ),
            (
                "livekit-agents",
                r#"{"type":"metrics_collected","metrics":{"type":"eou_metrics"}}"#,
                Agent,
                Agent,
                "metrics_collected eou_metrics",
            ),
            (
                "livekit-agents",
                r#"{"type":"function_tools_executed"}"#,
                Tools,
                Agent,
                "function_tools_executed",
            ),
            (
                "livekit-agents",
                r#"{"type":"tool_execution_updated"}"#,
                Tools,
                Agent,
                "tool_execution_updated",
            ),
            (
                "livekit-agents",
                r#"{"type":"conversation_item_added","item":{"role":"user"}}"#,
                User,
                Agent,
                "conversation_item_added user",
            ),
            (
                "livekit-agents",
                r#"{"type":"conversation_item_added","item":{"role":"assistant"}}"#,
                Agent,
                User,
                "conversation_item_added assistant",
            ),
            (
                "livekit-agents",
                r#"{"type":"conversation_item_added","item":{"type":"function_call"}}"#,
                Agent,
                Tools,
                "conversation_item_added function_call",
            ),
            (
                "livekit-agents",
                r#"{"type":"conversation_item_added","item":{"type":"function_call_output"}}"#,
                Tools,
                Agent,
                "conversation_item_added function_call_output",
            ),
            (
                "livekit-agents",
                r#"{"type":"conversation_item_added","item":{"type":"agent_handoff"}}"#,
                Agent,
                Agent,
                "conversation_item_added agent_handoff",
            ),
            (
                "livekit-agents",
                r#"{"type":"close"}"#,
                Agent,
                Agent,
                "close",
            ),
            (
                "livekit-agents",
                r#"{"events":[]}"#,
                Agent,
                Agent,
                "session report",
            ),
            ("livekit-agents", r#"{"x":1}"#, Agent, Agent, "(unknown)"),
            (
                "pipecat",
                r#"{"frame":"BotStartedSpeakingFrame"}"#,
                Player,
                App,
                "BotStartedSpeakingFrame",
            ),
            (
                "pipecat",
                r#"{"frame":"BotStoppedSpeakingFrame"}"#,
                Player,
                App,
                "BotStoppedSpeakingFrame",
            ),
            (
                "pipecat",
                r#"{"frame":"TTSStartedFrame"}"#,
                Tts,
                App,
                "TTSStartedFrame",
            ),
            (
                "pipecat",
                r#"{"frame":"LLMFullResponseEndFrame"}"#,
                Llm,
                App,
                "LLMFullResponseEndFrame",
            ),
            (
                "pipecat",
                r#"{"frame":"FunctionCallResultFrame"}"#,
                Tools,
                App,
                "FunctionCallResultFrame",
            ),
            (
                "pipecat",
                r#"{"frame":"UserStartedSpeakingFrame"}"#,
                User,
                App,
                "UserStartedSpeakingFrame",
            ),
            (
                "pipecat",
                r#"{"frame":"VADUserStoppedSpeakingFrame"}"#,
                User,
                App,
                "VADUserStoppedSpeakingFrame",
            ),
            (
                "pipecat",
                r#"{"frame":"StartInterruptionFrame"}"#,
                User,
                App,
                "StartInterruptionFrame",
            ),
            (
                "pipecat",
                r#"{"frame":"TranscriptionFrame"}"#,
                User,
                App,
                "TranscriptionFrame",
            ),
            ("pipecat", r#"{"frame":"EndFrame"}"#, App, App, "EndFrame"),
            ("pipecat", r#"{"t_ms":0}"#, App, App, "(unknown)"),
            (
                "openai-realtime",
                r#"{"dir":"server","event":{"type":"response.done"}}"#,
                Server,
                App,
                "response.done",
            ),
            (
                "openai-realtime",
                r#"{"dir":"app","event":{"type":"playback.played"}}"#,
                Player,
                App,
                "playback.played",
            ),
            (
                "openai-realtime",
                r#"{"dir":"app","event":{"type":"playback.cleared"}}"#,
                App,
                Player,
                "playback.cleared",
            ),
            (
                "openai-realtime",
                r#"{"dir":"app","event":{"type":"session.closed"}}"#,
                App,
                App,
                "session.closed",
            ),
            (
                "openai-realtime",
                r#"{"dir":"client","event":{"type":"input_audio_buffer.append"}}"#,
                User,
                Server,
                "input_audio_buffer.append",
            ),
            (
                "openai-realtime",
                r#"{"dir":"client","event":{"type":"conversation.item.create","item":{"type":"function_call_output"}}}"#,
                Tools,
                Server,
                "conversation.item.create",
            ),
            (
                "openai-realtime",
                r#"{"type":"response.create"}"#,
                App,
                Server,
                "response.create",
            ),
        ];
        for (dialect, line, from, to, words) in cases {
            let s = said(d(dialect), None, line);
            assert_eq!(
                (s.from, s.to, s.words.as_str()),
                (*from, *to, *words),
                "{dialect}: {line}"
            );
        }
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
        for dialect in crate::dialect::DIALECTS.iter().map(|e| Dialect(*e)) {
            for line in lines {
                let s = said(dialect, Some("room"), line);
                assert!(!s.words.is_empty(), "{dialect:?} {line:?}");
            }
        }
    }
}
