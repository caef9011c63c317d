//! A real stack's options as a meta line (or the stack's own report) states them, in the stack's
//! names and units: the values every dialect reads the same way.

use serde_json::Value;
use turnfence_model::Millis;

/// An option that is true or false.
pub fn flag(key: &str, v: &Value) -> Result<bool, String> {
    v.as_bool()
        .ok_or_else(|| format!("option `{key}` is true or false, not {v}"))
}

/// An option in seconds, as milliseconds; `null` is none.
pub fn seconds(key: &str, v: &Value) -> Result<Option<Millis>, String> {
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => match n.as_f64() {
            Some(s) if (0.0..1e9).contains(&s) => Ok(Some((s * 1000.0).round() as Millis)),
            _ => Err(format!("option `{key}` is a number of seconds, not {v}")),
        },
        _ => Err(format!(
            "option `{key}` is a number of seconds or null, not {v}"
        )),
    }
}
