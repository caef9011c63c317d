//! The lab dialect: lines of `t_ms`, `scenario`, `turn_id`, `component`, `event`, `detail`, as
//! the seed lab and the gate's `events.jsonl` write them.
//!
//! Each scenario is a session; the lab writes scenarios one after another, so a session ends when
//! the next scenario begins. A scenario is held back until it is complete (it is small), because a
//! few of its lines are only understood with the rest: a `budget allocated` amends the accept
//! before it, and store events logged without their text take theirs from the final render.
//!
//! Every `(component, event)` pair and every detail key is known; anything else is an input error.
//! The vocabulary, line by line, is the table in `handler`; each handler lives with its
//! component: `turn`, `time`, `children`, `model`, `playback`, `tools`, `client`, `store`.
//!
//! This is `turnfence check`'s lab dialect: it implements [`Reader`] of `crate::trace`, which
//! names it in `trace::check_dialect`.

mod children;
mod client;
mod context;
mod detail;
mod model;
mod playback;
mod store;
mod time;
mod tools;
mod turn;

use serde_json::{Map, Value};
use turnfence_model::Millis;

use super::FIELDS;
use crate::trace::canonical::parse_object;
use crate::trace::{InputError, MakeEvents, ReadLines, Reader};
use context::{Line, Memory, Out, View};
use detail::Detail;
use turnfence_model::turn::TurnMachine;

type Event = crate::trace::Event<TurnMachine>;
type Sessions = crate::trace::Sessions<TurnMachine>;

/// One lab line, parsed.
#[derive(Clone, Debug)]
pub struct LabLine {
    pub t_ms: Millis,
    pub scenario: String,
    pub turn_id: String,
    pub component: String,
    pub event: String,
    pub detail: Map<String, Value>,
}

/// The lab dialect's reader.
#[derive(Default)]
pub struct LabReader {
    lines: LabLines,
    events: LabEvents,
}

/// The lab's lines, each scenario held back until it is complete.
#[derive(Default)]
pub struct LabLines {
    scenario: Option<String>,
    held: Vec<(usize, LabLine)>,
}

/// The lab's lines made into events, with what the lab's earlier lines told.
#[derive(Default)]
pub struct LabEvents {
    memory: Memory,
}

/// A record: a line, or the end of a scenario.
pub enum Record {
    Meta(Value),
    Line(LabLine),
    End(String),
}

fn parse(text: &str, line: usize) -> Result<Result<LabLine, Value>, InputError> {
    let mut o = parse_object(text, line)?;
    // A meta line wherever it stands: the checker refuses one past the first line, in every
    // dialect alike ("a meta line may only be the first line").
    if o.contains_key("meta") && o.len() == 1 {
        return Ok(Err(o.remove("meta").unwrap_or(Value::Null)));
    }
    if let Some(k) = o.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(InputError::at(line, format!("unknown field `{k}`")));
    }
    let string = |o: &Map<String, Value>, k: &str| -> Result<String, InputError> {
        match o.get(k) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(InputError::at(line, format!("`{k}` must be a string"))),
            None => Err(InputError::at(line, format!("missing field `{k}`"))),
        }
    };
    let t_ms = match o.get("t_ms") {
        Some(v) => v
            .as_u64()
            .ok_or_else(|| InputError::at(line, "`t_ms` must be a non-negative integer"))?,
        None => return Err(InputError::at(line, "missing field `t_ms`")),
    };
    let detail = match o.remove("detail") {
        Some(Value::Object(d)) => d,
        Some(_) => return Err(InputError::at(line, "`detail` must be an object")),
        None => return Err(InputError::at(line, "missing field `detail`")),
    };
    Ok(Ok(LabLine {
        t_ms,
        scenario: string(&o, "scenario")?,
        turn_id: string(&o, "turn_id")?,
        component: string(&o, "component")?,
        event: string(&o, "event")?,
        detail,
    }))
}

impl Reader<TurnMachine> for LabReader {
    type Record = Record;
    type Lines = LabLines;
    type Events = LabEvents;

    fn halves(&mut self) -> (&mut LabLines, &mut LabEvents) {
        (&mut self.lines, &mut self.events)
    }
}

impl ReadLines<Record> for LabLines {
    fn read(
        &mut self,
        text: &str,
        line: usize,
        out: &mut Vec<(usize, Record)>,
    ) -> Result<(), InputError> {
        let parsed = match parse(text, line)? {
            Err(meta) => {
                out.push((line, Record::Meta(meta)));
                return Ok(());
            }
            Ok(p) => p,
        };
        if self.scenario.as_deref() != Some(parsed.scenario.as_str()) {
            self.flush(out)?;
            self.scenario = Some(parsed.scenario.clone());
        }
        self.held.push((line, parsed));
        Ok(())
    }

    fn flush(&mut self, out: &mut Vec<(usize, Record)>) -> Result<(), InputError> {
        let mut held = std::mem::take(&mut self.held);
        let Some(scenario) = self.scenario.take() else {
            return Ok(());
        };
        fold_budgets(&mut held);
        infer_texts(&mut held);
        let last = held.last().map_or(0, |(l, _)| *l);
        out.extend(held.into_iter().map(|(l, x)| (l, Record::Line(x))));
        out.push((last, Record::End(scenario)));
        Ok(())
    }

    fn held_from(&self) -> Option<usize> {
        self.held.first().map(|(line, _)| *line)
    }
}

impl MakeEvents<TurnMachine, Record> for LabEvents {
    fn events(
        &mut self,
        record: Record,
        line: usize,
        sessions: &Sessions,
        out: &mut Vec<Event>,
    ) -> Result<(), InputError> {
        match record {
            Record::Meta(v) => out.push(Event::Meta(v)),
            Record::End(session) => out.push(Event::End { session }),
            Record::Line(l) => out.extend(self.translate(&l, line, sessions)?),
        }
        Ok(())
    }
}

/// A `budget allocated` line amends the accept before it: the split is part of the turn.
fn fold_budgets(lines: &mut [(usize, LabLine)]) {
    for i in 0..lines.len() {
        if (lines[i].1.component.as_str(), lines[i].1.event.as_str()) != ("budget", "allocated") {
            continue;
        }
        let budget = Value::Object(lines[i].1.detail.clone());
        let turn = lines[i].1.turn_id.clone();
        if let Some((_, accept)) = lines[..i]
            .iter_mut()
            .rev()
            .find(|(_, l)| l.event == "accepted" && l.component == "turn" && l.turn_id == turn)
        {
            accept.detail.entry("budget").or_insert(budget);
        }
    }
}

/// Store events the lab logs without their text (`delivered=false`) take the part of the turn's
/// final render the logged texts do not account for, in seq order.
fn infer_texts(lines: &mut [(usize, LabLine)]) {
    let Some(rendered) = lines
        .iter()
        .find(|(_, l)| l.event == "render.completed")
        .and_then(|(_, l)| {
            l.detail
                .get("text")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
    else {
        return;
    };
    let persisted: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, (_, l))| l.event == "event.persisted" && l.detail.get("terminal").is_none())
        .map(|(i, _)| i)
        .collect();
    let text = |i: usize, lines: &[(usize, LabLine)]| {
        lines[i]
            .1
            .detail
            .get("text")
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let mut pos = 0;
    for (k, &i) in persisted.iter().enumerate() {
        match text(i, lines) {
            Some(t) if rendered[pos..].starts_with(&t) => pos += t.len(),
            Some(_) => return,
            None => {
                let next_known = persisted[k + 1..].iter().find_map(|&j| text(j, lines));
                let end = match next_known {
                    Some(t) => rendered[pos..].find(&t).map_or(rendered.len(), |x| pos + x),
                    None => rendered.len(),
                };
                lines[i]
                    .1
                    .detail
                    .insert("text".into(), Value::String(rendered[pos..end].to_owned()));
                lines[i]
                    .1
                    .detail
                    .insert("inferred".into(), Value::Bool(true));
                pos = end;
            }
        }
    }
}

/// A handler of one `(component, event)`: the line's inputs and observed outputs, into `Out`.
type Handler = fn(&Line, &mut Out, &mut Memory) -> Result<(), InputError>;

/// The lab vocabulary: the handler of each `(component, event)`, or `None` for a pair the lab
/// does not have.
fn handler(component: &str, event: &str) -> Option<Handler> {
    Some(match (component, event) {
        // The turn.
        // `accept.requested` is an accept the system refused (the gate's word for it; the seed
        // lab logs only accepts that succeed, as `accepted`).
        ("turn", "accepted" | "accept.requested") => turn::accepted,
        ("turn", "accept.refused") => turn::refused,
        ("turn", "cancel.requested" | "cancel.already_requested" | "cancel.already_terminal") => {
            turn::stop_answered
        }
        ("turn", "barge_in.accepted") => turn::barge_in,
        ("turn", "created_from_barge_in") => turn::created_from_barge_in,
        (
            "turn",
            "cancelled"
            | "completed"
            | "failed"
            | "reconcile_required"
            | "old_generation.cancelled",
        ) => turn::terminal,
        // Time passing.
        ("budget", "allocated") => time::budget_allocated,
        ("budget", "nearly_exhausted") | ("adapter", "response.cancel") | ("clock", "tick") => {
            time::passes
        }
        ("deadline", "exceeded") => time::deadline_exceeded,
        // The turn's children.
        ("retriever" | "model" | "tool" | "tts", "started")
        | ("cancel-tree", "child.spawned" | "child.spawn_requested") => children::spawn,
        ("retriever" | "model" | "tool" | "tts", "completed") => children::completed,
        ("retriever" | "model" | "tool" | "tts", "checkpoint") | ("tool", "cancel.observed") => {
            children::checkpoint
        }
        ("retriever" | "model" | "tool" | "tts", "cancelled") => children::cancelled,
        ("retriever" | "model" | "tool" | "tts", "report.ignored") => children::report_ignored,
        ("cancel-tree", "cancel.propagated") => children::cancel_propagated,
        ("planner", "tool.not_started") => children::not_started,
        // The model's stream and the delivery gate.
        ("model", "response.started") => model::response_started,
        ("model", "response.delta" | "response.audio.delta") => model::delta,
        ("model", "response.completed") => model::response_completed,
        ("delivery-gate", "delivered") => model::delivered,
        ("delivery-gate", "late.delta.dropped" | "late.audio.dropped") => model::dropped,
        // Audio.
        ("speaker", "frame.consumed") => playback::frame_consumed,
        ("tts", "frame.played") => playback::frame_played,
        ("tts", "output_audio.clear" | "buffer.cleared") => playback::cleared,
        ("tts", "output_audio.truncated") => playback::truncated,
        ("vad", "input_audio.speech_started") => playback::speech_started,
        // Tools and their commits.
        ("tool", "temporary_output.removed") => tools::temporary_removed,
        ("tool", "commit.sent") | ("reconciler", "status.enqueued") => tools::commit_keyed,
        ("tool", "commit.acknowledged" | "commit.failed") => tools::commit_ended,
        ("tool", "cancel.deferred") => tools::cancel_deferred,
        // The client and its connection.
        ("client", "turn.cancel") => client::stop,
        ("client", "event.acked") => client::acked,
        ("client", "event.received") => client::received,
        ("client", "duplicate.ignored") => client::duplicate_ignored,
        ("client", "render.completed") => client::rendered,
        ("transport", "disconnected") => client::disconnected,
        ("transport", "resume") => client::resume,
        // The stream store.
        ("stream-store", "event.persisted") => store::persisted,
        ("stream-store", "replay") => store::replay,
        ("stream-store", "resume.refused") => store::resume_refused,
        _ => return None,
    })
}

impl LabEvents {
    /// One lab line as inputs and observed outputs, by its `(component, event)`'s handler.
    fn translate(
        &mut self,
        l: &LabLine,
        line: usize,
        sessions: &Sessions,
    ) -> Result<Vec<Event>, InputError> {
        let (c, e) = (l.component.as_str(), l.event.as_str());
        let Some(handle) = handler(c, e) else {
            return Err(InputError::at(
                line,
                format!("unknown lab event: component {c:?}, event {e:?}"),
            ));
        };
        let x = Line {
            l,
            line,
            d: Detail {
                map: &l.detail,
                line,
            },
            view: View::new(sessions, &l.scenario),
        };
        let mut o = Out {
            session: l.scenario.clone(),
            at: l.t_ms,
            events: Vec::new(),
        };
        handle(&x, &mut o, &mut self.memory)?;
        Ok(o.events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(turn: &str, component: &str, event: &str, detail: Value) -> (usize, LabLine) {
        let Value::Object(detail) = detail else {
            unreachable!("a detail is an object")
        };
        let l = LabLine {
            t_ms: 0,
            scenario: "s".into(),
            turn_id: turn.into(),
            component: component.into(),
            event: event.into(),
            detail,
        };
        (0, l)
    }

    /// A `budget allocated` line amends its own turn's accept: not a later turn's accept in
    /// between, nor another line of its turn.
    #[test]
    fn a_budget_amends_its_own_turns_accept() {
        let budget = serde_json::json!({"retrieval_ms": 25, "model_ms": 55});
        let mut lines = vec![
            line(
                "a",
                "turn",
                "accepted",
                serde_json::json!({"deadline_ms": 90}),
            ),
            line("a", "turn", "progress", serde_json::json!({})),
            line(
                "b",
                "turn",
                "accepted",
                serde_json::json!({"deadline_ms": 90}),
            ),
            line("a", "budget", "allocated", budget.clone()),
        ];
        fold_budgets(&mut lines);
        let budgets: Vec<Option<&Value>> =
            lines.iter().map(|(_, l)| l.detail.get("budget")).collect();
        assert_eq!(budgets, [Some(&budget), None, None, None]);
    }
}
