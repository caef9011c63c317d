//! The checker on mangled logs: every fixture, of every dialect, cut short, its bytes flipped,
//! deleted or spliced, or one of its values bent to an extreme (a huge or negative number, an
//! empty or non-ASCII string, a value of the wrong type, an object where a scalar was). Whatever
//! comes out, `check` never panics (debug assertions and overflow checks on, as in `cargo test`):
//! it gives a verdict, or an input error at a line of the text with a message.

use proptest::prelude::*;
use proptest::sample::select;
use serde_json::Value;
use turnfence_checks::dialect;

use crate::{fixtures, read};

/// One change to a log's text.
#[derive(Clone, Debug)]
pub(crate) enum Edit {
    /// Cut the text at this fraction of its length (a log whose writer died).
    Cut(f64),
    /// Replace the byte at this fraction with another.
    Flip(f64, u8),
    /// Delete this many bytes from this fraction on.
    Delete(f64, usize),
    /// Insert this text at this fraction.
    Insert(f64, &'static str),
    /// On the line at this fraction of the lines, the value at this fraction of its values
    /// (depth first, the line's whole object first) replaced by this one.
    Bend(f64, f64, &'static str),
}

/// Text that breaks JSON, or its encoding, where it lands.
const SPLICES: [&str; 15] = [
    "\"", "{", "}", ",", ":", "\\", "\n", "\r\n", "\u{feff}", "é", "\u{0}", "[1,", "null", "\n\n",
    "\\ud800",
];

/// Values at the edges of what a field holds, and of the wrong type.
const EXTREMES: [&str; 16] = [
    "0",
    "-1",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "1.5",
    "1e300",
    "\"\"",
    "\"é\\u0000\"",
    "null",
    "true",
    "[]",
    "{}",
    "[{\"a\":1}]",
    "{\"type\":\"response.done\"}",
    "\"x\"",
];

pub(crate) fn fraction() -> impl Strategy<Value = f64> {
    (0u32..=1000).prop_map(|n| f64::from(n) / 1000.0)
}

pub(crate) fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        fraction().prop_map(Edit::Cut),
        (fraction(), any::<u8>()).prop_map(|(at, b)| Edit::Flip(at, b)),
        (fraction(), 1usize..40).prop_map(|(at, n)| Edit::Delete(at, n)),
        (fraction(), select(&SPLICES[..])).prop_map(|(at, s)| Edit::Insert(at, s)),
        (fraction(), fraction(), select(&EXTREMES[..]))
            .prop_map(|(line, value, v)| Edit::Bend(line, value, v)),
        (fraction(), fraction(), select(&EXTREMES[..]))
            .prop_map(|(line, value, v)| Edit::Bend(line, value, v)),
    ]
}

pub(crate) fn at(fraction: f64, len: usize) -> usize {
    ((fraction * len as f64) as usize).min(len)
}

/// How many values `v` holds, `v` itself counted.
fn count(v: &Value, n: &mut usize) {
    *n += 1;
    match v {
        Value::Object(m) => m.values().for_each(|x| count(x, n)),
        Value::Array(a) => a.iter().for_each(|x| count(x, n)),
        _ => {}
    }
}

/// The `k`-th value of `v`, depth first, `v` itself first.
fn nth<'a>(v: &'a mut Value, k: &mut usize) -> Option<&'a mut Value> {
    if *k == 0 {
        return Some(v);
    }
    *k -= 1;
    match v {
        Value::Object(m) => m.values_mut().find_map(|x| nth(x, k)),
        Value::Array(a) => a.iter_mut().find_map(|x| nth(x, k)),
        _ => None,
    }
}

pub(crate) fn apply(text: &mut Vec<u8>, edit: &Edit) {
    match *edit {
        Edit::Cut(f) => text.truncate(at(f, text.len())),
        Edit::Flip(f, b) => {
            let i = at(f, text.len());
            if let Some(x) = text.get_mut(i) {
                *x = b;
            }
        }
        Edit::Delete(f, n) => {
            let from = at(f, text.len());
            text.drain(from..(from + n).min(text.len()));
        }
        Edit::Insert(f, s) => {
            let i = at(f, text.len());
            text.splice(i..i, s.bytes());
        }
        Edit::Bend(line, value, to) => bend(text, line, value, to),
    }
}

/// Stands for the value a bend replaces while the line is written out again.
const BENT: &str = "\u{1}bent\u{1}";

/// On the line at fraction `line` of `text`'s lines, the value at fraction `value` of its values
/// (depth first, the line's whole object first) replaced by `to`, as it is written: `to` need
/// not be JSON (a number out of range, nesting past any parser's limit). A line that is not JSON
/// is left as it is.
pub(crate) fn bend(text: &mut Vec<u8>, line: f64, value: f64, to: &str) {
    let mut lines: Vec<Vec<u8>> = text.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    let i = at(line, lines.len().saturating_sub(1));
    let Ok(mut v) = serde_json::from_slice::<Value>(&lines[i]) else {
        return;
    };
    let mut n = 0;
    count(&v, &mut n);
    let mut k = at(value, n.saturating_sub(1));
    if let Some(slot) = nth(&mut v, &mut k) {
        *slot = Value::String(BENT.to_owned());
    }
    let written = serde_json::to_string(&v).expect("a value serializes");
    let quoted = serde_json::to_string(BENT).expect("a string serializes");
    lines[i] = written.replacen(&quoted, to, 1).into_bytes();
    *text = lines.join(&b'\n');
}

/// What `check` must give `text` (`name`'s, mangled or kept as it broke the checker): a verdict,
/// or an input error with a message at one of its lines (line 0, the whole trace, only when it
/// has no line but blank ones, a byte-order mark before them).
pub(crate) fn check_holds(name: &str, text: &[u8]) -> Result<(), TestCaseError> {
    let lines = text.split(|&b| b == b'\n').count();
    let checked = dialect::check_input(text, &Default::default());
    if let Err(e) = checked.verdict {
        // A byte-order mark before the first line is not text.
        let blank = text
            .strip_prefix("\u{feff}".as_bytes())
            .unwrap_or(text)
            .split(|&b| b == b'\n')
            .all(|l| l.trim_ascii().is_empty());
        prop_assert!(
            (1..=lines).contains(&e.line) || (e.line == 0 && blank),
            "{name}: input error at line {} of {lines}: {}",
            e.line,
            e.message
        );
        prop_assert!(
            !e.message.is_empty(),
            "{name}: an input error without a message"
        );
    }
    Ok(())
}

#[test]
fn a_mangled_log_is_a_verdict_or_an_input_error_at_a_line_never_a_panic() {
    let logs: Vec<(String, Vec<u8>)> = fixtures("accepted")
        .into_iter()
        .chain(fixtures("rejected"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, read(&p).into_bytes())
        })
        .collect();
    let seed = crate::seed();
    let strategy = (0..logs.len(), proptest::collection::vec(edit(), 1..4));
    let result = crate::runner(seed).run(&strategy, |(which, edits)| {
        let (name, original) = &logs[which];
        let mut text = original.clone();
        for e in &edits {
            apply(&mut text, e);
        }
        check_holds(name, &text)?;
        Ok(())
    });
    if let Err(e) = result {
        panic!("reproduce: TURNFENCE_SEED={seed} cargo test -p turnfence-checks --test it mangled::\n{e}");
    }
}
