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
