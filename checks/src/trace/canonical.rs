//! The canonical trace form: one JSON object per line.
//!
//! ```json
//! {"meta":{"expect":"accepted"}}
//! {"at":0,"session":"s1","input":"accept","turn":"t1","generation":1,"mode":"text","deadline_ms":500}
//! {"at":61,"session":"s1","input":"delta","turn":"t1","generation":1,"seq":1,"text":"Hi"}
//! {"at":61,"session":"s1","output":"delivered","turn":"t1","generation":1,"seq":1}
//! {"at":90,"session":"s1","session_end":true}
//! ```
//!
//! An input line is the model's `Input` (tag `input`), an output line its `Output` (tag `output`)
//! with `at`; `session` is optional (default `main`). Every field of the variant is required
//! unless the schema marks it optional; an unknown field is an input error.

use serde_json::{Map, Value};
use turnfence_model::turn::{Input, Output, Step};
use turnfence_model::Millis;

use super::conform::Observed;
use super::{Event, InputError, Reader, Sessions};

/// The session a line without `session` belongs to.
pub const DEFAULT_SESSION: &str = "main";

/// Fields a variant may leave out (serde defaults), by tag.
fn optional_fields(tag: &str) -> &'static [&'static str] {
    match tag {
        "accept" => &["mode", "deadline_ms", "budget"],
        "spawn" => &["need_ms"],
        "checkpoint" => &["temporary_outputs"],
        "delta" => &["text", "frames"],
        "persisted" => &["text", "terminal"],
        _ => &[],
    }
}

/// Parses one line of JSON, with the column of a syntax error.
pub fn parse_object(text: &str, line: usize) -> Result<Map<String, Value>, InputError> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(InputError::at(line, "expected a JSON object")),
        Err(e) => Err(InputError {
            line,
            column: Some(e.column()),
            message: format!("malformed JSON: {e}"),
        }),
    }
}

/// Deserializes a tagged object strictly: every key must be a field of its variant.
fn strict<T: serde::Serialize + serde::de::DeserializeOwned>(
    object: Map<String, Value>,
    tag_key: &str,
    line: usize,
) -> Result<T, InputError> {
    let tag = object
        .get(tag_key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let keys: Vec<String> = object.keys().cloned().collect();
    let parsed: T = serde_json::from_value(Value::Object(object)).map_err(|e| {
        let message = e.to_string();
        let message = if message.starts_with("unknown variant") {
            format!("unknown {tag_key} {tag:?}: {message}")
        } else {
            format!("{tag_key} {tag:?}: {message}")
        };
        InputError::at(line, message)
    })?;
    let known = serde_json::to_value(&parsed).unwrap_or(Value::Null);
    for key in keys {
        let listed = known.get(&key).is_some() || optional_fields(&tag).contains(&key.as_str());
        if !listed {
            return Err(InputError::at(
                line,
                format!("{tag_key} {tag:?}: unknown field `{key}`"),
            ));
        }
    }
    Ok(parsed)
}

fn take_session(object: &mut Map<String, Value>, line: usize) -> Result<String, InputError> {
    match object.remove("session") {
        None => Ok(DEFAULT_SESSION.to_owned()),
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        Some(_) => Err(InputError::at(line, "`session` must be a non-empty string")),
    }
}

fn take_at(object: &mut Map<String, Value>, line: usize) -> Result<Millis, InputError> {
    match object.remove("at") {
        Some(v) => v.as_u64().ok_or_else(|| {
            InputError::at(line, "`at` must be a non-negative integer (virtual ms)")
        }),
        None => Err(InputError::at(line, "missing field `at`")),
    }
}

/// One canonical line as events.
pub fn read_line(text: &str, line: usize) -> Result<Event, InputError> {
    let mut object = parse_object(text, line)?;
    if let Some(meta) = object.remove("meta") {
        if !object.is_empty() {
            return Err(InputError::at(line, "a meta line holds `meta` only"));
        }
        return Ok(Event::Meta(meta));
    }
    let session = take_session(&mut object, line)?;
    if object.contains_key("input") {
        let at = object.get("at").cloned();
        let input: Input = strict(object, "input", line)?;
        if at.as_ref().and_then(Value::as_u64).is_none() {
            return Err(InputError::at(
                line,
                "`at` must be a non-negative integer (virtual ms)",
            ));
        }
        return Ok(Event::Input { session, input });
    }
    if object.contains_key("output") {
        let at = take_at(&mut object, line)?;
        let output: Output = strict(object, "output", line)?;
        return Ok(Event::Output {
            session,
            at,
            observed: Observed::exact(output),
        });
    }
    if let Some(end) = object.remove("session_end") {
        object.remove("at");
        if end != Value::Bool(true) || !object.is_empty() {
            return Err(InputError::at(
                line,
                "a session end is {\"session\": …, \"session_end\": true}",
            ));
        }
        return Ok(Event::End { session });
    }
    Err(InputError::at(
        line,
        "expected an `input`, an `output`, a `meta` or a `session_end` line",
    ))
}

/// The canonical dialect's reader.
pub struct CanonicalReader;

impl Reader for CanonicalReader {
    type Record = Event;

    fn read(&mut self, text: &str, line: usize) -> Result<Vec<(usize, Event)>, InputError> {
        read_line(text, line).map(|e| vec![(line, e)])
    }

    fn events(&mut self, record: Event, _: usize, _: &Sessions) -> Result<Vec<Event>, InputError> {
        Ok(vec![record])
    }
}

/// Writes a recorded run as canonical lines (inputs, then the outputs each caused).
pub fn write(session: &str, steps: &[Step]) -> String {
    let mut out = String::new();
    for step in steps {
        out.push_str(&line_of(session, step.input.at, &step.input));
        for output in &step.outputs {
            out.push_str(&line_of(session, step.input.at, output));
        }
    }
    let end = serde_json::json!({ "session": session, "session_end": true });
    out.push_str(&end.to_string());
    out.push('\n');
    out
}

fn line_of(session: &str, at: Millis, item: &impl serde::Serialize) -> String {
    let mut object = Map::new();
    object.insert("at".into(), at.into());
    object.insert("session".into(), session.into());
    if let Ok(Value::Object(fields)) = serde_json::to_value(item) {
        for (k, v) in fields {
            object.entry(k).or_insert(v);
        }
    }
    Value::Object(object).to_string() + "\n"
}
