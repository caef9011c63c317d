//! Input errors in the schema's words, not Rust's: serde says "invalid type: string \"one\",
//! expected u64"; a user reads "field `generation`: expected a non-negative integer, got
//! \"one\"". The field is the key whose value ends at the error's column; the allowed values are
//! the schema's names.

/// The serde error `raw` (its position already cut off) about `text`, at `column`, said in the
/// schema's terms.
pub fn in_schema_words(raw: &str, text: &str, column: Option<usize>) -> String {
    if !text.trim_start().starts_with('{') {
        return format!(
            "a trace line is a JSON object ({{…}}); this line is {}",
            json_kind(text.trim_start())
        );
    }
    let said = reword(raw, text, column);
    // The value that came, where serde names it: the field is the key it is the value of.
    let field = match token_of(raw) {
        Some(token) => field_of_value(text, &token),
        None => column.and_then(|c| field_before(text, c)),
    };
    match field {
        Some(field) if !raw.starts_with("missing field") && !raw.starts_with("unknown field") => {
            format!("field `{field}`: {said}")
        }
        _ => said,
    }
}

/// What kind of JSON value a line holds, for a line that is not an object.
fn json_kind(text: &str) -> &'static str {
    match text.chars().next() {
        Some('[') => "a list",
        Some('"') => "a string",
        Some('t' | 'f') => "true or false",
        Some('n') => "null",
        _ => "a number",
    }
}

/// The value serde says came (`"one"`, `5`, `"txt"`), as it stands in the line.
fn token_of(raw: &str) -> Option<String> {
    if let Some(rest) = raw.strip_prefix("unknown variant `") {
        return rest.split_once('`').map(|(v, _)| format!("\"{v}\""));
    }
    let rest = raw
        .strip_prefix("invalid type: ")
        .or_else(|| raw.strip_prefix("invalid value: "))?;
    let (got, _) = rest.split_once(", expected ")?;
    if let Some(s) = got.strip_prefix("string ") {
        return Some(s.to_owned());
    }
    for prefix in ["integer `", "floating point `", "boolean `"] {
        if let Some(v) = got.strip_prefix(prefix) {
            return Some(v.trim_end_matches('`').to_owned());
        }
    }
    None
}

/// The key of the one place `token` stands as a value in the line (none if it stands in two).
fn field_of_value<'a>(text: &'a str, token: &str) -> Option<&'a str> {
    let mut keys = text.match_indices(token).filter_map(|(i, _)| {
        let before = text[..i].trim_end().strip_suffix(':')?.trim_end();
        let after = text[i + token.len()..].trim_start();
        if !(after.starts_with(',') || after.starts_with('}')) {
            return None;
        }
        let key_end = before.strip_suffix('"')?;
        let key_start = key_end.rfind('"')? + 1;
        Some(&text[key_start..key_end.len()])
    });
    let first = keys.next()?;
    keys.next().is_none().then_some(first)
}

/// The key whose value ends at `column` (1-based): the last `"key":` that starts before it. The
/// line is read as JSON strings and the rest: a string runs to its closing quote, past escaped
/// ones (`\"`, `\\`), so a quote or colon within a value is never taken for a key's; a colon
/// outside any string makes the string just before it a key.
fn field_before(text: &str, column: usize) -> Option<&str> {
    let upto = text.get(..column.min(text.len()))?;
    let (mut found, mut last_string) = (None, None);
    // Within a string: where it started, and whether the byte before was an escaping backslash.
    let (mut within, mut escaped) = (None, false);
    for (i, b) in upto.bytes().enumerate() {
        match (within, b) {
            (Some(_), _) if escaped => escaped = false,
            (Some(_), b'\\') => escaped = true,
            (Some(start), b'"') => {
                last_string = Some(start..i);
                within = None;
            }
            (Some(_), _) => {}
            (None, b'"') => within = Some(i + 1),
            (None, b':') => found = last_string.take().and_then(|r| upto.get(r)),
            (None, _) => {}
        }
    }
    found
}

/// The bare value just before `column`, as the line wrote it.
fn value_before(text: &str, column: usize) -> &str {
    let upto = text.get(..column.min(text.len())).unwrap_or(text);
    let start = upto.rfind(':').map_or(0, |i| i + 1);
    upto[start..].trim().trim_end_matches([',', '}'])
}

/// serde's sentence in the schema's terms.
fn reword(raw: &str, text: &str, column: Option<usize>) -> String {
    if raw.starts_with("invalid type: unit variant, expected struct variant")
        || raw.starts_with("invalid type: unit variant, expected newtype variant")
    {
        let got = column.map_or("this value", |c| value_before(text, c));
        return format!(
            "{got} takes fields: write it as an object, {{{got}: {{…}}}} (the schema in \
             schema/canonical-trace.schema.json lists them)"
        );
    }
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = raw.strip_prefix(prefix) {
            if let Some((got, expected)) = rest.split_once(", expected ") {
                return format!(
                    "expected {}, got {}",
                    expected_words(expected),
                    got_words(got)
                );
            }
        }
    }
    if let Some(rest) = raw.strip_prefix("unknown variant ") {
        if let Some((got, expected)) = rest.split_once(", expected ") {
            return format!("unknown value {got}; expected {expected}");
        }
    }
    raw.to_owned()
}

/// What serde expected, in the schema's words.
fn expected_words(expected: &str) -> String {
    let words = match expected {
        "u8" | "u16" | "u32" | "u64" | "usize" => "a non-negative integer",
        "i8" | "i16" | "i32" | "i64" | "isize" => "an integer",
        "f32" | "f64" => "a number",
        "a boolean" | "bool" => "true or false",
        "a string" | "string" => "a string",
        "a sequence" => "a list",
        "struct variant" | "map" => "an object",
        "unit variant" => "a name",
        other if other.starts_with("struct ") => "an object",
        other => return other.to_owned(),
    };
    words.to_owned()
}

/// What came, in the schema's words.
fn got_words(got: &str) -> String {
    if let Some(s) = got.strip_prefix("string ") {
        return s.to_owned();
    }
    for prefix in ["integer ", "floating point ", "boolean "] {
        if let Some(v) = got.strip_prefix(prefix) {
            return v.trim_matches('`').to_owned();
        }
    }
    match got {
        "map" => "an object".to_owned(),
        "sequence" => "a list".to_owned(),
        "unit variant" => "a bare name".to_owned(),
        "null" => "null".to_owned(),
        other => other.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error worded for `line`, serde's column just past `value` (its first occurrence).
    fn worded_after(error: &str, line: &str, value: &str) -> String {
        let column = line.find(value).unwrap() + value.len();
        in_schema_words(error, line, Some(column))
    }

    #[test]
    fn names_the_field_and_the_allowed_values() {
        assert_eq!(
            worded_after(
                "invalid type: string \"one\", expected u64",
                r#"{"at":0,"input":"accept","turn":"t1","generation":"one","mode":"text"}"#,
                "\"one\""
            ),
            "field `generation`: expected a non-negative integer, got \"one\""
        );
        assert_eq!(
            worded_after(
                "invalid type: unit variant, expected struct variant",
                r#"{"at":1,"input":"spawn","turn":"t1","child":"c","kind":"tool"}"#,
                "\"tool\""
            ),
            "field `kind`: \"tool\" takes fields: write it as an object, {\"tool\": {…}} (the \
             schema in schema/canonical-trace.schema.json lists them)"
        );
        assert_eq!(
            in_schema_words(
                "invalid length 2, expected struct Head with 4 elements",
                "[1,2]",
                Some(5)
            ),
            "a trace line is a JSON object ({…}); this line is a list"
        );
    }

    /// A struct serde names by its Rust type is an object to the user: the type's name is ours.
    #[test]
    fn a_struct_expected_is_an_object_and_the_unknown_is_kept() {
        let worded = worded_after(
            "invalid type: integer `5`, expected struct Budget",
            r#"{"at":0,"input":"accept","turn":"t1","generation":1,"mode":"text","budget":5}"#,
            "5}",
        );
        assert!(worded.contains("expected an object"), "{worded}");
        assert!(!worded.contains("Budget"), "{worded}");
        // What the schema has no word for is said as serde says it.
        assert_eq!(
            reword("invalid type: integer `5`, expected enum Kind", "{}", None),
            "expected enum Kind, got 5"
        );
    }

    /// The field of an error serde gives no value for is the key before the error's column,
    /// read past strings that hold quotes and colons of their own.
    #[test]
    fn the_field_before_the_column_is_read_past_quotes_within_strings() {
        let null = "invalid type: null, expected u64";
        for line in [
            r#"{"at":1,"session":"x\":","input":"client_receive","seq":null}"#,
            r#"{"at":1,"session":":a","input":"client_receive","seq":null}"#,
            r#"{"at":1,"session":"\\","input":"client_receive","seq":null}"#,
            r#"{"at":1, "session" : "a\"b\":c" , "input":"client_receive", "seq" :null}"#,
        ] {
            assert_eq!(
                worded_after(null, line, "null"),
                "field `seq`: expected a non-negative integer, got null",
                "{line}"
            );
        }
        // No key before the column: no field named.
        assert_eq!(field_before(r#"{"a\":1"#, 3), None);
    }

    #[test]
    fn a_line_that_is_no_object_is_told_what_it_is() {
        for (line, kind) in [
            ("[1, 2]", "a list"),
            ("\"accept\"", "a string"),
            ("true", "true or false"),
            (" false", "true or false"),
            ("null", "null"),
            ("42", "a number"),
            ("-1.5", "a number"),
        ] {
            assert_eq!(
                in_schema_words("invalid type", line, Some(1)),
                format!("a trace line is a JSON object ({{…}}); this line is {kind}"),
                "{line}"
            );
        }
    }
}
