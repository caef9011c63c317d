//! The reader of a real stack's log: its lines held as text on the reading thread, each made into
//! events by the stack's dialect ([`StackDialect`]) where it is judged. Every stack's dialect
//! is this one reader and an implementation of the trait.

use turnfence_model::said::{ModelWords, Vocabulary};
use turnfence_model::turn::TurnMachine;

use super::{
    Conform, Event, Finding, FindingKind, InputError, MakeEvents, ReadLines, Reader, Sessions,
    Unlogged, Verdict,
};

/// A line of a real stack's log, as its dialect holds it until its events are made: the meta
/// line, or the line's text (parsed where its events are made, borrowing from it).
#[derive(Clone, Debug)]
pub enum StackRecord {
    Meta(serde_json::Value),
    Line(String),
    /// The end of the log.
    End,
}

/// The lines of a real stack's log: its first line is its meta line (given the dialect's
/// `complete`, the output kinds its logs record completely, unless it names its own) or — a log
/// without one — an event, before which the dialect's meta is put.
pub struct StackLines {
    started: bool,
    /// The last line read.
    last: usize,
    /// The dialect's `complete` ([`StackDialect::COMPLETE`]), set when the reader is split.
    complete: &'static [&'static str],
    /// The dialect's [`StackDialect::split`], set when the reader is split.
    split: Split,
}

/// A line of a stack's log as the records it holds, or `None`: it is one.
type Split = fn(&str, usize) -> Result<Option<Vec<String>>, InputError>;

impl Default for StackLines {
    fn default() -> StackLines {
        StackLines {
            started: false,
            last: 0,
            complete: &[],
            split: |_, _| Ok(None),
        }
    }
}

impl ReadLines<StackRecord> for StackLines {
    fn read(
        &mut self,
        text: &str,
        line: usize,
        out: &mut Vec<(usize, StackRecord)>,
    ) -> Result<(), InputError> {
        self.last = line;
        if !self.started {
            self.started = true;
            let v: serde_json::Value = serde_json::from_str(text)
                .map_err(|e| InputError::at(line, format!("not a JSON object: {e}")))?;
            match v {
                serde_json::Value::Object(mut o) if o.contains_key("meta") => {
                    return match o.remove("meta") {
                        Some(serde_json::Value::Object(mut meta)) if o.is_empty() => {
                            meta.entry("complete")
                                .or_insert(serde_json::json!(self.complete));
                            let meta = serde_json::Value::Object(meta);
                            out.push((line, StackRecord::Meta(meta)));
                            Ok(())
                        }
                        _ => Err(InputError::at(line, "the meta line holds one object")),
                    };
                }
                _ => {
                    let meta = serde_json::json!({ "complete": self.complete });
                    out.push((line, StackRecord::Meta(meta)));
                }
            }
        }
        match (self.split)(text, line)? {
            Some(parts) => out.extend(parts.into_iter().map(|p| (line, StackRecord::Line(p)))),
            None => out.push((line, StackRecord::Line(text.to_owned()))),
        }
        Ok(())
    }

    fn flush(&mut self, out: &mut Vec<(usize, StackRecord)>) -> Result<(), InputError> {
        out.push((self.last, StackRecord::End));
        Ok(())
    }
}

/// A real stack's dialect: what it makes of one line of its log (the meta line is [`StackLines`]'
/// work), and the output kinds its logs record completely.
pub trait StackDialect<S: Conform>: Default {
    const COMPLETE: &'static [&'static str];
    /// The steps the stack may take without a line of its log, each with its source in the
    /// stack's code: conformance looks for them before it reports ([`Unlogged`]).
    const UNLOGGED: &'static [Unlogged<S>] = &[];

    /// The meta line (the one given, or the one made for a log without one): what the dialect
    /// reads from it (a stack's version and options).
    fn meta(&mut self, _meta: &serde_json::Value) -> Result<(), InputError> {
        Ok(())
    }

    /// How the stack names the model's things: its findings are said in these words
    /// ([`Reader::tell`]).
    fn words(&self) -> &dyn Vocabulary {
        &ModelWords
    }

    /// Where a finding's story starts, and which of its ids the stack has (an interruption's
    /// story at the speech it came after, say), before it is said ([`Reader::tell`]).
    fn place(&self, _finding: &mut Finding) {}

    /// A line that holds several records (a session report and its events), as those records,
    /// each read at this line in turn (so each sees the sessions as the one before left them);
    /// `None`: the line is one record.
    fn split(_text: &str, _line: usize) -> Result<Option<Vec<String>>, InputError> {
        Ok(None)
    }

    fn line(
        &mut self,
        text: &str,
        line: usize,
        sessions: &Sessions<S>,
    ) -> Result<Vec<Event<S>>, InputError>;

    /// The end of the log, after its last line (`line`): what the dialect still held back.
    fn end(&mut self, _line: usize, _sessions: &Sessions<S>) -> Result<Vec<Event<S>>, InputError> {
        Ok(Vec::new())
    }
}

/// The reader of a real stack's log: its lines held as text, each made into events by the
/// dialect `D`.
#[derive(Default)]
pub struct StackReader<D> {
    lines: StackLines,
    events: StackEvents<D>,
}

impl<D> StackReader<D> {
    /// A reader with its dialect made already (given what the command line chose).
    pub fn new(dialect: D) -> StackReader<D> {
        StackReader {
            lines: StackLines::default(),
            events: StackEvents(dialect),
        }
    }
}

/// A real stack's lines made into events by its dialect `D`.
#[derive(Default)]
pub struct StackEvents<D>(D);

impl<S: Conform, D: StackDialect<S> + Send> Reader<S> for StackReader<D> {
    type Record = StackRecord;
    type Lines = StackLines;
    type Events = StackEvents<D>;

    fn halves(&mut self) -> (&mut StackLines, &mut StackEvents<D>) {
        self.lines.complete = D::COMPLETE;
        self.lines.split = D::split;
        (&mut self.lines, &mut self.events)
    }

    fn tell(&self, verdict: &mut Verdict) {
        let dialect = &self.events.0;
        for f in &mut verdict.findings {
            dialect.place(f);
            f.say_in(dialect.words());
        }
    }

    fn moves_stories(&self) -> bool {
        true
    }

    fn unlogged(&self) -> &'static [Unlogged<S>] {
        D::UNLOGGED
    }
}

impl<S: Conform, D: StackDialect<S>> MakeEvents<S, StackRecord> for StackEvents<D> {
    fn events(
        &mut self,
        record: StackRecord,
        line: usize,
        sessions: &Sessions<S>,
        out: &mut Vec<Event<S>>,
    ) -> Result<(), InputError> {
        match record {
            StackRecord::Meta(v) => {
                self.0.meta(&v)?;
                out.push(Event::Meta(v));
            }
            StackRecord::Line(text) => out.extend(self.0.line(&text, line, sessions)?),
            StackRecord::End => out.extend(self.0.end(line, sessions)?),
        }
        Ok(())
    }
}

/// A line of a real stack's log parsed as `T`, or an input error at its line and column naming
/// what it is not (`what`: the dialect's name for its line, "a frame").
pub fn parse_stack_line<'a, T: serde::Deserialize<'a>>(
    text: &'a str,
    line: usize,
    what: &str,
) -> Result<T, InputError> {
    serde_json::from_str(text).map_err(|e| {
        let mut err = InputError::at(line, format!("not {what}: {e}"));
        err.column = Some(e.column());
        err
    })
}

/// A turn still running where a session's log stops (its end, or a close that says nothing of
/// the turn): whether it would have ended is past what the log shows — a capture cut short, a
/// user who hung up while the model spoke — so `left_open` is not judged for it, and `needs`
/// says what would have shown its end.
pub fn running_where_the_log_stops(
    session: &str,
    machine: Option<&TurnMachine>,
    needs: impl Fn(&str) -> String,
) -> Vec<Event<TurnMachine>> {
    let Some(machine) = machine else {
        return Vec::new();
    };
    machine
        .session()
        .turns
        .iter()
        .filter(|t| !t.phase.is_terminal())
        .map(|t| Event::NotJudged {
            session: session.to_owned(),
            rule: FindingKind::LeftOpen.name(),
            ids: vec![t.id.to_string()],
            needs: needs(&t.id),
        })
        .collect()
}
