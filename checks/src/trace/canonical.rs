//! The canonical trace form: one JSON object per line.
//!
//! ```json
//! {"meta":{"dialect":"canonical"}}
//! {"at":0,"session":"s1","input":"accept","turn":"t1","generation":1,"mode":"text","deadline_ms":500}
//! {"at":61,"session":"s1","input":"delta","turn":"t1","generation":1,"seq":1,"text":"Hi"}
//! {"at":61,"session":"s1","output":"delivered","turn":"t1","generation":1,"seq":1}
//! {"at":90,"session":"s1","session_end":true}
//! ```
//!
//! An input line is the model's `Input` (tag `input`), an output line its `Output` (tag `output`)
//! with `at`; `session` is optional (default `main`). Every field of the variant is required
//! unless the schema marks it optional; an unknown field is an input error.
//!
//! A line is read in one pass first (`canonical/one_pass.rs`): the machine's type reads the
//! object straight from the line, `at` and `session` taken out as they stream past (the turn
//! machine's through externally tagged mirrors of its enums, `canonical/tagged.rs`, which buffer
//! nothing). Only a line that pass leaves — a meta line, any error, the rare line it cannot vouch
//! for — is read by the typed structs below, whose `#[serde(flatten)]` buffers the whole object
//! before the machine's type sees it; every error is theirs, worded and placed as before.

use std::marker::PhantomData;

use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use turnfence_model::fence;
use turnfence_model::turn::Step;
use turnfence_model::Millis;

use super::conform::{Conform, LineInput, Observed};
use super::{Event, InputError, MakeEvents, ReadLines, Reader, Sessions};
use kind::shown_kind;
pub use kind::DEFAULT_SESSION;

mod kind;
mod one_pass;
pub(super) mod tagged;

/// Parses one line of JSON as an object, with the column of a syntax error.
pub fn parse_object(text: &str, line: usize) -> Result<Map<String, Value>, InputError> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(InputError::at(line, "expected a JSON object")),
        Err(e) => Err(syntax(e, line, text)),
    }
}

fn syntax(e: serde_json::Error, line: usize, text: &str) -> InputError {
    // serde_json counts columns from 1 once it has read a character; only an empty text has none
    // (column 0), and no line parsed here is empty (blank lines are skipped before).
    let column = Some(e.column());
    // serde's own position is within the line; the column says it, the message need not.
    let said = e.to_string();
    let raw = match said.rfind(" at line ") {
        Some(i) => &said[..i],
        None => said.as_str(),
    };
    let message = if e.is_syntax() || e.is_eof() {
        format!("malformed JSON: {raw}")
    } else {
        super::wording::in_schema_words(raw, text, column)
    };
    InputError {
        line,
        column,
        message,
    }
}

/// Which kind of line this is: the keys that say so, everything else skipped unread.
#[derive(Deserialize)]
struct Head {
    input: Option<IgnoredAny>,
    output: Option<IgnoredAny>,
    meta: Option<IgnoredAny>,
    session_end: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(bound = "I: DeserializeOwned")]
struct InputLine<I> {
    session: Option<String>,
    #[serde(flatten)]
    input: I,
}

/// The keys a line of an input kind without fields (`tick`, …) may have.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // Read for its refusal of other keys.
struct BareInputLine {
    at: IgnoredAny,
    session: Option<IgnoredAny>,
    input: IgnoredAny,
}

#[derive(Deserialize)]
#[serde(bound = "O: DeserializeOwned")]
struct OutputLine<O> {
    at: Millis,
    session: Option<String>,
    #[serde(flatten)]
    output: O,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EndLine {
    session: Option<String>,
    session_end: bool,
    #[allow(dead_code)] // Allowed, not needed: a session end has no effect in time.
    at: Option<Millis>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MetaLine {
    meta: Value,
}

fn session(s: Option<String>, line: usize) -> Result<String, InputError> {
    match s {
        None => Ok(DEFAULT_SESSION.to_owned()),
        Some(s) if !s.is_empty() => Ok(s),
        Some(_) => Err(InputError::at(line, "`session` must be a non-empty string")),
    }
}

fn typed<'a, T: Deserialize<'a>>(text: &'a str, what: &str, line: usize) -> Result<T, InputError> {
    serde_json::from_str(text).map_err(|e| {
        let mut err = syntax(e, line, text);
        err.message = format!("{what} line: {}", err.message);
        err
    })
}

/// One canonical line as an event.
pub fn read_line<S: Conform>(text: &str, line: usize) -> Result<Event<S>, InputError>
where
    S::Input: LineInput,
{
    super::limits::long_id(text, line)?;
    match one_pass::read(text) {
        Some(event) => Ok(event),
        None => read_typed(text, line),
    }
}

/// One canonical line as the typed structs read it: every line the one pass leaves.
fn read_typed<S: Conform>(text: &str, line: usize) -> Result<Event<S>, InputError> {
    let kind = match shown_kind(text) {
        Some(kind) => kind,
        None => {
            let head: Head = serde_json::from_str(text).map_err(|e| syntax(e, line, text))?;
            (
                head.input.is_some(),
                head.output.is_some(),
                head.meta.is_some(),
                head.session_end.is_some(),
            )
        }
    };
    match kind {
        (true, false, false, false) => {
            let l: InputLine<S::Input> = typed(text, "input", line)?;
            if S::is_bare(&l.input) {
                typed::<BareInputLine>(text, "input", line)?;
            }
            Ok(Event::Input {
                session: session(l.session, line)?,
                input: l.input,
            })
        }
        (false, true, false, false) => {
            let l: OutputLine<S::Output> = typed(text, "output", line)?;
            Ok(Event::Output {
                session: session(l.session, line)?,
                at: l.at,
                observed: Observed::exact(l.output),
            })
        }
        (false, false, true, false) => Ok(Event::Meta(typed::<MetaLine>(text, "meta", line)?.meta)),
        (false, false, false, true) => {
            let l: EndLine = typed(text, "session end", line)?;
            if !l.session_end {
                return Err(InputError::at(line, "`session_end` must be true"));
            }
            Ok(Event::End {
                session: session(l.session, line)?,
            })
        }
        _ => Err(InputError::at(
            line,
            "expected exactly one of `input`, `output`, `meta`, `session_end`",
        )),
    }
}

/// The canonical dialect's reader, for a machine: each line parsed into its event where it is
/// read.
pub struct CanonicalReader<S> {
    lines: CanonicalLines<S>,
    events: Parsed,
}

impl<S> Default for CanonicalReader<S> {
    fn default() -> CanonicalReader<S> {
        CanonicalReader {
            lines: CanonicalLines(PhantomData),
            events: Parsed,
        }
    }
}

/// Canonical lines parsed into events, for a machine `S`.
pub struct CanonicalLines<S>(PhantomData<fn() -> S>);

/// Events already made where their lines were read: each passed on as it is.
pub struct Parsed;

impl<S: Conform> Reader<S> for CanonicalReader<S>
where
    S::Input: LineInput,
{
    type Record = Event<S>;
    type Lines = CanonicalLines<S>;
    type Events = Parsed;

    fn halves(&mut self) -> (&mut CanonicalLines<S>, &mut Parsed) {
        (&mut self.lines, &mut self.events)
    }
}

impl<S: Conform> ReadLines<Event<S>> for CanonicalLines<S>
where
    S::Input: LineInput,
{
    fn read(
        &mut self,
        text: &str,
        line: usize,
        out: &mut Vec<(usize, Event<S>)>,
    ) -> Result<(), InputError> {
        out.push((line, read_line(text, line)?));
        Ok(())
    }
}

impl<S: Conform> MakeEvents<S, Event<S>> for Parsed {
    fn events(
        &mut self,
        record: Event<S>,
        _: usize,
        _: &Sessions<S>,
        out: &mut Vec<Event<S>>,
    ) -> Result<(), InputError> {
        out.push(record);
        Ok(())
    }
}

/// Writes a recorded run as canonical lines (inputs, then the outputs each caused).
pub fn write(session: &str, steps: &[Step]) -> String {
    write_steps(
        session,
        steps.iter().map(|s| (s.input.at, &s.input, &s.outputs[..])),
    )
}

/// Writes a recorded fence run as canonical lines.
pub fn write_fence(session: &str, steps: &[fence::Step]) -> String {
    write_steps(
        session,
        steps.iter().map(|s| (s.input.at, &s.input, &s.outputs[..])),
    )
}

fn write_steps<'a, I: Serialize + 'a, O: Serialize + 'a>(
    session: &str,
    steps: impl Iterator<Item = (Millis, &'a I, &'a [O])>,
) -> String {
    let mut out = String::new();
    for (at, input, outputs) in steps {
        out.push_str(&line_of(session, at, input));
        for output in outputs {
            out.push_str(&line_of(session, at, output));
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
