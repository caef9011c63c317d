//! A log's strings borrowed from its line where JSON lets them be: serde borrows a `Cow<str>`
//! field only when the field is a `Cow` itself, and copies one inside an `Option` every time —
//! for a log of audio deltas, each delta's base64 (a hundred milliseconds of audio is 6 kB of
//! text) copied once more than it is read.

use std::borrow::Cow;

use serde::de::{Deserialize, Deserializer, Error, Visitor};

/// An optional string field (`#[serde(borrow, deserialize_with = "borrowed::text")]`): borrowed
/// from the line, or owned where the JSON string holds an escape.
pub(crate) fn text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    Option::<Text<'de>>::deserialize(d).map(|t| t.map(|t| t.0))
}

/// A string, borrowed where it can be.
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text<'de>, D::Error> {
        d.deserialize_str(TextVisitor)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: Error>(self, s: &'de str) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Borrowed(s)))
    }

    fn visit_str<E: Error>(self, s: &str) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Owned(s.to_owned())))
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use serde::Deserialize;

    #[derive(Deserialize)]
    struct Line<'a> {
        #[serde(default, borrow, deserialize_with = "super::text")]
        delta: Option<Cow<'a, str>>,
    }

    fn delta(json: &str) -> Option<Cow<'_, str>> {
        serde_json::from_str::<Line>(json).unwrap().delta
    }

    #[test]
    fn a_plain_string_is_borrowed_an_escaped_one_owned_and_null_or_absent_is_none() {
        assert!(matches!(
            delta(r#"{"delta":"QUJD"}"#),
            Some(Cow::Borrowed("QUJD"))
        ));
        assert!(matches!(delta(r#"{"delta":"a\nb"}"#), Some(Cow::Owned(s)) if s == "a\nb"));
        assert!(delta(r#"{"delta":null}"#).is_none());
        assert!(delta("{}").is_none());
        let e = serde_json::from_str::<Line>(r#"{"delta":5}"#)
            .err()
            .unwrap();
        assert!(e.to_string().contains("expected a string"), "{e}");
    }
}
