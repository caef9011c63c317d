//! An event's fields as the canonical line: each field a JSON value, dotted names nested, `_json`
//! fields parsed, `at` from the recorder's clock put first.

use std::fmt;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};

/// An event's fields, in order, as JSON values.
#[derive(Default)]
pub(super) struct Fields {
    pairs: Vec<(String, Value)>,
    /// The first field that could not be made a value.
    error: Option<String>,
}

impl Fields {
    fn put(&mut self, field: &Field, value: Value) {
        let name = field.name();
        if name == "message" {
            return;
        }
        let name = name.strip_suffix("_json").unwrap_or(name);
        self.pairs.push((name.to_owned(), value));
    }

    fn put_text(&mut self, field: &Field, text: String) {
        if !field.name().ends_with("_json") {
            return self.put(field, Value::String(text));
        }
        match serde_json::from_str(&text) {
            Ok(value) => self.put(field, value),
            Err(e) => self.fail(field, format!("not JSON text: {e}")),
        }
    }

    fn fail(&mut self, field: &Field, why: String) {
        self.error
            .get_or_insert_with(|| format!("field `{}`: {why}", field.name()));
    }

    /// The canonical line: `at`, then `session`, then the line's kind, then the other fields in
    /// the order the event gave them, dotted names nested.
    pub(super) fn line(mut self, at: u64) -> Result<String, String> {
        if let Some(error) = self.error {
            return Err(error);
        }
        let kind = ["input", "output", "session_end"];
        if !self
            .pairs
            .iter()
            .any(|(name, _)| kind.contains(&name.as_str()))
        {
            return Err("a `turnfence` event needs `input`, `output` or `session_end`".into());
        }
        let rank = |name: &str| match name.split('.').next() {
            Some("session") => 0,
            Some("input" | "output" | "session_end") => 1,
            _ => 2,
        };
        self.pairs.sort_by_key(|(name, _)| rank(name));
        let mut object = Map::new();
        object.insert("at".into(), at.into());
        for (name, value) in self.pairs {
            match name.as_str() {
                "at" => return Err("`at` is the recorder's clock; an event does not set it".into()),
                "meta" => {
                    return Err(
                        "the meta line comes from the recorder's settings, not an event".into(),
                    )
                }
                _ => insert_path(&mut object, &name, value)?,
            }
        }
        Ok(Value::Object(object).to_string())
    }
}

/// Puts `value` at a dotted path, making the objects on the way.
fn insert_path(object: &mut Map<String, Value>, path: &str, value: Value) -> Result<(), String> {
    let mut parts: Vec<&str> = path.split('.').collect();
    let last = parts.pop().unwrap_or(path);
    let mut here = object;
    for part in parts {
        let next = here
            .entry(part)
            .or_insert_with(|| Value::Object(Map::new()));
        here = match next {
            Value::Object(inner) => inner,
            _ => return Err(format!("field `{path}`: `{part}` already has a value")),
        };
    }
    if here.contains_key(last) {
        return Err(format!("field `{path}` is given twice"));
    }
    here.insert(last.to_owned(), value);
    Ok(())
}

impl Visit for Fields {
    fn record_f64(&mut self, field: &Field, value: f64) {
        match serde_json::Number::from_f64(value) {
            Some(n) => self.put(field, Value::Number(n)),
            None => self.fail(field, format!("{value} is not a JSON number")),
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, value.into());
    }

    fn record_i128(&mut self, field: &Field, value: i128) {
        match i64::try_from(value) {
            Ok(v) => self.put(field, v.into()),
            Err(_) => self.fail(field, format!("{value} is out of range")),
        }
    }

    fn record_u128(&mut self, field: &Field, value: u128) {
        match u64::try_from(value) {
            Ok(v) => self.put(field, v.into()),
            Err(_) => self.fail(field, format!("{value} is out of range")),
        }
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, value.into());
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.put_text(field, value.to_owned());
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.put_text(field, value.to_string());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put_text(field, format!("{value:?}"));
    }
}
