//! Reading a lab line's `detail`: typed fields, with an input error for a key the event does not
//! know, a field of the wrong type, or a name the model has no value for.

use serde_json::{Map, Value};

use crate::trace::InputError;

/// Reads a detail map, refusing keys the event does not know.
pub(super) struct Detail<'a> {
    pub map: &'a Map<String, Value>,
    pub line: usize,
}

impl Detail<'_> {
    pub fn only(&self, known: &[&str]) -> Result<(), InputError> {
        match self
            .map
            .keys()
            .find(|k| !known.contains(&k.as_str()) && *k != "inferred")
        {
            Some(k) => Err(InputError::at(
                self.line,
                format!("unknown detail field `{k}`"),
            )),
            None => Ok(()),
        }
    }

    /// The field `k` if present, read by `read`; `what` says what `read` accepts.
    fn typed<T>(
        &self,
        k: &str,
        what: &str,
        read: impl FnOnce(&Value) -> Option<T>,
    ) -> Result<Option<T>, InputError> {
        match self.map.get(k) {
            None => Ok(None),
            Some(v) => read(v)
                .map(Some)
                .ok_or_else(|| InputError::at(self.line, format!("detail `{k}` must be {what}"))),
        }
    }

    /// A field the event cannot do without.
    fn need<T>(&self, k: &str, value: Option<T>) -> Result<T, InputError> {
        value.ok_or_else(|| InputError::at(self.line, format!("missing detail field `{k}`")))
    }

    pub fn u64(&self, k: &str) -> Result<Option<u64>, InputError> {
        self.typed(k, "a non-negative integer", Value::as_u64)
    }

    pub fn need_u64(&self, k: &str) -> Result<u64, InputError> {
        self.need(k, self.u64(k)?)
    }

    pub fn str(&self, k: &str) -> Result<Option<String>, InputError> {
        self.typed(k, "a string", |v| v.as_str().map(str::to_owned))
    }

    pub fn need_str(&self, k: &str) -> Result<String, InputError> {
        self.need(k, self.str(k)?)
    }

    pub fn bool(&self, k: &str) -> Result<Option<bool>, InputError> {
        self.typed(k, "true or false", Value::as_bool)
    }
}

/// A value of the model's by its serde name (a reason, a drop cause).
pub(super) fn from_name<T: serde::de::DeserializeOwned>(
    name: &str,
    line: usize,
) -> Result<T, InputError> {
    serde_json::from_value(Value::String(name.to_owned()))
        .map_err(|_| InputError::at(line, format!("unknown reason {name:?}")))
}
