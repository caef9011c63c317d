//! OpenAI Realtime API client and server events, with the app's player events: the registry's
//! entry for them.

use serde_json::{Map, Value};
use turnfence_model::turn::Profile;

use super::RealtimeReader;
use crate::dialect::str_at;
use crate::trace::{judging, turn_only, DialectEntry, InputError, Judging, Party, Reading};

/// The `openai-realtime` dialect.
pub struct Entry;

impl DialectEntry for Entry {
    fn name(&self) -> &'static str {
        "openai-realtime"
    }

    fn about(&self) -> &'static str {
        "OpenAI Realtime API client and server events, with the app's playback events"
    }

    fn recognise(&self, first: &Map<String, Value>) -> Option<&'static str> {
        fn text<'a>(o: &'a Map<String, Value>, k: &str) -> Option<&'a str> {
            o.get(k).and_then(Value::as_str)
        }
        let enveloped = text(first, "dir")
            .filter(|d| ["client", "server", "app"].contains(d))
            .and_then(|_| first.get("event")?.as_object())
            .and_then(|e| text(e, "type"));
        if enveloped.is_some_and(realtime_type) {
            return Some("its first line is a Realtime event in a `dir`/`event` envelope");
        }
        text(first, "type")
            .filter(|kind| realtime_type(kind) && kind.contains('.'))
            .map(|_| "its first line's `type` is a Realtime event's")
    }

    fn profile(&self) -> Option<Profile> {
        Some(Profile::OpenaiRealtime)
    }

    fn reader(&self, read: &Reading) -> Result<Box<dyn Judging>, InputError> {
        turn_only(read)?;
        judging(RealtimeReader::default(), read.profile)
    }

    /// A client event from the app (the user's audio from the user, a function's output from the
    /// tool) to the server, a server event to the app, the app's player facts between the app
    /// and its player.
    fn said(&self, v: &Value) -> (Party, Party, String) {
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

#[cfg(test)]
mod tests {
    use crate::trace::Party;

    /// Every way a line of this stack is said: who passes it to whom, in the stack's words; and
    /// the first lines it writes recognised as its own among every dialect the registry has.
    #[test]
    fn every_line_is_said_between_the_parties_it_passes_and_its_first_known() {
        use Party::*;
        let cases: &[(&str, Party, Party, &str)] = &[
            (
                r#"{"t_ms":1,"dir":"client","event":{"type":"response.cancel"}}"#,
                App,
                Server,
                "response.cancel",
            ),
            (
                r#"{"dir":"server","event":{"type":"response.done"}}"#,
                Server,
                App,
                "response.done",
            ),
            (
                r#"{"dir":"app","event":{"type":"playback.played"}}"#,
                Player,
                App,
                "playback.played",
            ),
            (
                r#"{"dir":"app","event":{"type":"playback.cleared"}}"#,
                App,
                Player,
                "playback.cleared",
            ),
            (
                r#"{"dir":"app","event":{"type":"session.closed"}}"#,
                App,
                App,
                "session.closed",
            ),
            (
                r#"{"dir":"client","event":{"type":"input_audio_buffer.append"}}"#,
                User,
                Server,
                "input_audio_buffer.append",
            ),
            (
                r#"{"dir":"client","event":{"type":"conversation.item.create","item":{"type":"function_call_output"}}}"#,
                Tools,
                Server,
                "conversation.item.create",
            ),
            (
                r#"{"type":"response.create"}"#,
                App,
                Server,
                "response.create",
            ),
        ];
        crate::dialect::assert_said_and_recognised(
            &super::Entry,
            cases,
            &[
                r#"{"t_ms":0,"dir":"client","event":{"type":"session.update"}}"#,
                r#"{"t_ms":0,"type":"response.created","response":{}}"#,
                r#"{"t_ms":0,"dir":"server","event":{"type":"error","error":{}}}"#,
            ],
        );
    }
}
