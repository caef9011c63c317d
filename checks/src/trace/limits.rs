//! A limit on everything a trace can make the checker hold (TigerBeetle's habit): a line's
//! length, an id's length, the sessions open at once, the outputs a session holds unshown. Each
//! is an input error of its own, with the line, so a hostile or broken log cannot make `check`
//! hold more than it says here. (The model bounds the rest of a session: turns, children,
//! stored events, buffered frames; those are refusals of the model, `turnfence_model::turn`.)

use super::InputError;

/// The longest line read, in bytes (its newline not counted).
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// The longest id (turn, child, session, request id, token, …), in bytes. Free text — a delta's
/// `text`, a rendered text, a meta line's story — is bounded by the line alone.
pub const MAX_ID_BYTES: usize = 256;

/// The most sessions open at once.
pub const MAX_OPEN_SESSIONS: usize = 1 << 16;

/// The most outputs one session holds pending: produced by the machine (for an input of the trace
/// or a hidden step the checker supplied) and not yet shown by the trace. A log that never shows
/// an output kind leaves each such output pending until the session ends, so a session may hold
/// up to this many; beyond it, the trace is refused rather than held.
pub const MAX_PENDING_OUTPUTS: usize = 1 << 16;

/// The latest time a log may state, in ms: 2^53, below which a JSON number (an `f64`) holds every
/// whole number exactly (some 285 000 years). A stack's time past it is an input error at its
/// line, not a clock stuck at the end of time that makes every later line go backwards.
pub const MAX_TIME_MS: f64 = 9_007_199_254_740_992.0;

/// A time a stack's log states under `field` (`what` it is, in units of `unit_ms` ms: a
/// `t_ms` 1, epoch seconds 1 000): missing, not a number, negative, or past [`MAX_TIME_MS`] is
/// an input error at `line` saying which.
pub fn stated_time(
    value: Option<f64>,
    unit_ms: f64,
    line: usize,
    field: &str,
    what: &str,
) -> Result<f64, InputError> {
    let v = value.ok_or_else(|| InputError::at(line, format!("missing `{field}`: {what}")))?;
    if !v.is_finite() || v < 0.0 {
        return Err(InputError::at(
            line,
            format!("`{field}` is {v}: {what}, a number 0 or more"),
        ));
    }
    if v * unit_ms > MAX_TIME_MS {
        return Err(InputError::at(
            line,
            format!("`{field}` is {v}: {what}, past the latest time a log may state (2^53 ms)"),
        ));
    }
    Ok(v)
}

/// Keys whose strings are free text rather than ids.
const FREE_TEXT: [&str; 5] = ["text", "story", "source", "error", "message"];

/// A line longer than [`MAX_LINE_BYTES`].
pub fn line_too_long(line: usize, bytes: usize) -> InputError {
    InputError::at(
        line,
        format!("the line has {bytes} bytes or more, more than the limit of {MAX_LINE_BYTES}"),
    )
}

/// The first string value longer than [`MAX_ID_BYTES`] under a key that names an id, if any.
pub fn long_id(text: &str, line: usize) -> Result<(), InputError> {
    if text.len() <= MAX_ID_BYTES {
        // Too short to hold one: most lines, unread.
        return Ok(());
    }
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut key: Option<&str> = None;
    while i < bytes.len() {
        if bytes[i] != b'"' {
            i += 1;
            continue;
        }
        // A JSON string: up to the next quote not escaped.
        let start = i + 1;
        let mut j = start;
        while j < bytes.len() && bytes[j] != b'"' {
            j += if bytes[j] == b'\\' { 2 } else { 1 };
        }
        let end = j.min(bytes.len());
        let after = text[end.saturating_add(1).min(text.len())..].trim_start();
        if after.starts_with(':') {
            key = text.get(start..end);
        } else if end - start > MAX_ID_BYTES && !key.is_some_and(|k| FREE_TEXT.contains(&k)) {
            return Err(InputError::at(
                line,
                format!(
                    "field `{}`: an id of {} bytes, more than the limit of {MAX_ID_BYTES}",
                    key.unwrap_or("?"),
                    end - start
                ),
            ));
        }
        i = end + 1;
    }
    Ok(())
}

/// Opening one more session than [`MAX_OPEN_SESSIONS`].
pub fn too_many_sessions(line: usize) -> InputError {
    InputError::at(
        line,
        format!(
            "more than {MAX_OPEN_SESSIONS} sessions open at once (end some with `session_end`)"
        ),
    )
}

/// A session holding more than [`MAX_PENDING_OUTPUTS`] outputs its trace has not shown.
pub fn too_many_pending(line: usize, session: &str, pending: usize) -> InputError {
    InputError::at(
        line,
        format!(
            "session {session:?} holds {pending} outputs the trace has not shown, more than the \
             limit of {MAX_PENDING_OUTPUTS} (show them, or end the session with `session_end`)"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_longer_than_the_limit_is_named_free_text_is_not() {
        let long = "x".repeat(MAX_ID_BYTES + 1);
        let line = format!(r#"{{"at":0,"input":"model_done","turn":"{long}"}}"#);
        let e = long_id(&line, 7).unwrap_err();
        assert_eq!(e.line, 7);
        assert!(
            e.message.starts_with("field `turn`: an id of 257 bytes"),
            "{}",
            e.message
        );
        let line = format!(
            r#"{{"at":0,"input":"delta","turn":"t","generation":1,"seq":1,"text":"{long}"}}"#
        );
        assert!(long_id(&line, 1).is_ok());
        let exact = "y".repeat(MAX_ID_BYTES);
        assert!(long_id(&format!(r#"{{"turn":"{exact}"}}"#), 1).is_ok());
        // Only strings are ids: a long stretch between two (spaces, here) is none; a string of
        // escaped backslashes and quotes is one string, as long as all of it.
        let gap = " ".repeat(MAX_ID_BYTES + 1);
        let line = format!(r#"{{"at":0,"input":{gap}"model_done","turn":"t"}}"#);
        assert!(long_id(&line, 1).is_ok(), "{:?}", long_id(&line, 1));
        let quoted = r#"\\\""#.repeat(MAX_ID_BYTES / 4 + 1);
        let line = format!(r#"{{"at":0,"input":"model_done","turn":"{quoted}"}}"#);
        let e = long_id(&line, 1).unwrap_err();
        assert!(
            e.message.starts_with("field `turn`: an id of 260 bytes"),
            "{}",
            e.message
        );
    }
}

#[cfg(test)]
mod time_tests {
    use super::{stated_time, MAX_TIME_MS};

    #[test]
    fn a_stated_time_is_a_number_from_0_to_the_latest_a_log_may_state() {
        let t = |v: Option<f64>, unit: f64| stated_time(v, unit, 7, "t_ms", "the clock");
        assert_eq!(t(Some(0.0), 1.0), Ok(0.0));
        assert_eq!(t(Some(MAX_TIME_MS), 1.0), Ok(MAX_TIME_MS));
        assert_eq!(
            t(Some(MAX_TIME_MS / 1000.0), 1000.0),
            Ok(MAX_TIME_MS / 1000.0)
        );
        let message = |r: Result<f64, super::InputError>| {
            let e = r.unwrap_err();
            assert_eq!(e.line, 7);
            e.message
        };
        assert!(message(t(None, 1.0)).starts_with("missing `t_ms`"));
        for wrong in [-1.0, f64::NAN, f64::INFINITY] {
            assert!(
                message(t(Some(wrong), 1.0)).contains("a number 0 or more"),
                "{wrong}"
            );
        }
        assert!(message(t(Some(MAX_TIME_MS + 2.0), 1.0)).contains("past the latest time"));
        assert!(message(t(Some(MAX_TIME_MS / 1000.0 + 1.0), 1000.0)).contains("past the latest"));
    }
}
