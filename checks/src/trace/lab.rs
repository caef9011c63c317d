//! The lab dialect: lines of `t_ms`, `scenario`, `turn_id`, `component`, `event`, `detail`, as
//! the seed lab and the gate's `events.jsonl` write them.
//!
//! Each scenario is a session; the lab writes scenarios one after another, so a session ends when
//! the next scenario begins. A scenario is held back until it is complete (it is small), because a
//! few of its lines are only understood with the rest: a `budget allocated` amends the accept
//! before it, and store events logged without their text take theirs from the final render.
//!
//! Every `(component, event)` pair and every detail key is known; anything else is an input error.
//! The vocabulary, line by line, is the table in [`translate`].

use serde_json::{Map, Value};
use turnfence_model::turn::{
    Budget, ChildKind, DeferReason, DropReason, FailCode, Input, InputKind, Mode, NotStartedReason,
    Output, RefuseReason, StopAnswer, Terminal,
};
use turnfence_model::Millis;

use super::canonical::parse_object;
use super::conform::Observed;
use super::turn_spec::{kind_from_name, TurnSpec};
use super::{InputError, Reader};

type Event = super::Event<TurnSpec>;
type Sessions = super::Sessions<TurnSpec>;

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
    scenario: Option<String>,
    held: Vec<(usize, LabLine)>,
    meta_seen: bool,
    /// Per-turn: the request id of its last stop (the lab's answers do not repeat it).
    last_stop: Vec<(String, String)>,
    hidden: usize,
}

/// A record: a line, or the end of a scenario.
pub enum Record {
    Meta(Value),
    Line(LabLine),
    End(String),
}

const TOP: [&str; 6] = [
    "t_ms",
    "scenario",
    "turn_id",
    "component",
    "event",
    "detail",
];

fn parse(text: &str, line: usize) -> Result<Result<LabLine, Value>, InputError> {
    let mut o = parse_object(text, line)?;
    if line == 1 && o.contains_key("meta") && o.len() == 1 {
        return Ok(Err(o.remove("meta").unwrap_or(Value::Null)));
    }
    if let Some(k) = o.keys().find(|k| !TOP.contains(&k.as_str())) {
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

impl Reader<TurnSpec> for LabReader {
    type Record = Record;

    fn read(&mut self, text: &str, line: usize) -> Result<Vec<(usize, Record)>, InputError> {
        let parsed = match parse(text, line)? {
            Err(meta) => {
                self.meta_seen = true;
                return Ok(vec![(line, Record::Meta(meta))]);
            }
            Ok(p) => p,
        };
        let mut out = Vec::new();
        if self.scenario.as_deref() != Some(parsed.scenario.as_str()) {
            out = self.flush()?;
            self.scenario = Some(parsed.scenario.clone());
        }
        self.held.push((line, parsed));
        Ok(out)
    }

    fn flush(&mut self) -> Result<Vec<(usize, Record)>, InputError> {
        let mut held = std::mem::take(&mut self.held);
        let Some(scenario) = self.scenario.take() else {
            return Ok(Vec::new());
        };
        fold_budgets(&mut held);
        infer_texts(&mut held);
        let last = held.last().map_or(0, |(l, _)| *l);
        let mut out: Vec<(usize, Record)> = held
            .into_iter()
            .map(|(l, x)| (l, Record::Line(x)))
            .collect();
        out.push((last, Record::End(scenario)));
        Ok(out)
    }

    fn events(
        &mut self,
        record: Record,
        line: usize,
        sessions: &Sessions,
    ) -> Result<Vec<Event>, InputError> {
        match record {
            Record::Meta(v) => Ok(vec![Event::Meta(v)]),
            Record::End(session) => Ok(vec![Event::End { session }]),
            Record::Line(l) => self.translate(&l, line, sessions),
        }
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

/// Reads a detail map, refusing keys the event does not know.
struct Detail<'a> {
    map: &'a Map<String, Value>,
    line: usize,
}

impl Detail<'_> {
    fn only(&self, known: &[&str]) -> Result<(), InputError> {
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

    fn u64(&self, k: &str) -> Result<Option<u64>, InputError> {
        match self.map.get(k) {
            None => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| {
                InputError::at(
                    self.line,
                    format!("detail `{k}` must be a non-negative integer"),
                )
            }),
        }
    }

    fn need_u64(&self, k: &str) -> Result<u64, InputError> {
        self.u64(k)?
            .ok_or_else(|| InputError::at(self.line, format!("missing detail field `{k}`")))
    }

    fn str(&self, k: &str) -> Result<Option<String>, InputError> {
        match self.map.get(k) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(InputError::at(
                self.line,
                format!("detail `{k}` must be a string"),
            )),
        }
    }

    fn need_str(&self, k: &str) -> Result<String, InputError> {
        self.str(k)?
            .ok_or_else(|| InputError::at(self.line, format!("missing detail field `{k}`")))
    }

    fn bool(&self, k: &str) -> Result<Option<bool>, InputError> {
        match self.map.get(k) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(InputError::at(
                self.line,
                format!("detail `{k}` must be true or false"),
            )),
        }
    }
}

/// What one lab line says, as events.
struct Out {
    session: String,
    at: Millis,
    events: Vec<Event>,
}

impl Out {
    fn input(&mut self, kind: InputKind) {
        self.events.push(Event::Input {
            session: self.session.clone(),
            input: Input::new(self.at, kind),
        });
    }

    fn output(&mut self, output: Output, wildcards: &'static [&'static str]) {
        self.events.push(Event::Output {
            session: self.session.clone(),
            at: self.at,
            observed: Observed { output, wildcards },
        });
    }
}

impl LabReader {
    fn stop_request(&self, turn: &str) -> String {
        self.last_stop
            .iter()
            .rev()
            .find(|(t, _)| t == turn)
            .map_or_else(String::new, |(_, r)| r.clone())
    }

    /// The lab vocabulary. `(component, event)` → inputs and observed outputs.
    fn translate(
        &mut self,
        l: &LabLine,
        line: usize,
        sessions: &Sessions,
    ) -> Result<Vec<Event>, InputError> {
        let d = Detail {
            map: &l.detail,
            line,
        };
        let view = View::new(sessions, &l.scenario);
        let mut o = Out {
            session: l.scenario.clone(),
            at: l.t_ms,
            events: Vec::new(),
        };
        // The turn a line is about: its turn_id, unless a generation names another turn.
        let by_generation = |g: Option<u64>| g.and_then(|g| view.turn_of(g));
        let turn = l.turn_id.clone();
        match (l.component.as_str(), l.event.as_str()) {
            ("turn", "accepted") => {
                d.only(&[
                    "deadline_ms",
                    "generation",
                    "mode",
                    "resume_ttl_s",
                    "budget",
                ])?;
                let mode = match d.str("mode")?.as_deref() {
                    None | Some("text") => Mode::Text,
                    Some("audio" | "realtime_audio") => Mode::Audio,
                    Some(m) => return Err(InputError::at(line, format!("unknown mode {m:?}"))),
                };
                let budget = match l.detail.get("budget") {
                    None => None,
                    Some(b) => Some(
                        serde_json::from_value::<Budget>(b.clone())
                            .map_err(|e| InputError::at(line, format!("detail `budget`: {e}")))?,
                    ),
                };
                let generation = match d.u64("generation")? {
                    Some(g) => g,
                    None => view.next_generation(),
                };
                o.input(InputKind::Accept {
                    turn,
                    generation,
                    mode,
                    deadline_ms: d.u64("deadline_ms")?,
                    budget,
                });
            }
            ("budget", "allocated") => {
                d.only(&["retrieval_ms", "model_ms", "reserve_ms"])?;
                // Folded into the accept before it (see `View::budget_after`); time passes.
                o.input(InputKind::Tick);
            }
            ("budget", "nearly_exhausted") | ("adapter", "response.cancel") | ("clock", "tick") => {
                d.only(&["remaining_ms", "target_generation"])?;
                o.input(InputKind::Tick);
            }
            ("retriever" | "model" | "tool" | "tts", "started")
            | ("cancel-tree", "child.spawned") => {
                d.only(&["parent", "child", "kind", "tool", "cancellable", "need_ms"])?;
                let (child, kind) = self.spawned(l, &d)?;
                o.input(InputKind::Spawn {
                    turn,
                    child,
                    kind,
                    need_ms: d.u64("need_ms")?,
                });
            }
            ("model", "response.started") => {
                d.only(&["stream", "remaining_ms"])?;
                match view.child_of(&turn, &ChildKind::Model, true) {
                    Some(_) => o.input(InputKind::Tick),
                    None => o.input(InputKind::Spawn {
                        turn,
                        child: "model".into(),
                        kind: ChildKind::Model,
                        need_ms: None,
                    }),
                }
            }
            (c @ ("retriever" | "model" | "tool" | "tts"), "completed") => {
                d.only(&["documents", "elapsed_ms", "child", "output_tokens"])?;
                let child = self.child(&view, &turn, c, &d)?;
                o.input(InputKind::ChildCompleted { turn, child });
            }
            (c @ ("retriever" | "model" | "tool" | "tts"), "checkpoint")
            | (c @ "tool", "cancel.observed") => {
                d.only(&["phase", "checkpoint", "child", "temporary_outputs"])?;
                let child = self.child(&view, &turn, c, &d)?;
                let phase = match d.str("phase")? {
                    Some(p) => p,
                    None => d.need_str("checkpoint")?,
                };
                let temporary_outputs = match d.u64("temporary_outputs")? {
                    Some(n) => n as u32,
                    None if l.detail.get("child").is_none() && phase.contains("temporary") => 1,
                    None => 0,
                };
                o.input(InputKind::Checkpoint {
                    turn,
                    child,
                    phase,
                    temporary_outputs,
                });
            }
            (c @ ("retriever" | "model" | "tool" | "tts"), "cancelled") => {
                d.only(&["checkpoint", "reason", "child", "committed_side_effects"])?;
                let child = self.child(&view, &turn, c, &d)?;
                let (checkpoint, wild): (String, &'static [&'static str]) =
                    match d.str("checkpoint")? {
                        Some(cp) => (cp, &[]),
                        None => (d.str("reason")?.unwrap_or_default(), &["checkpoint"]),
                    };
                o.output(
                    Output::ChildCancelled {
                        turn,
                        child,
                        checkpoint,
                    },
                    wild,
                );
            }
            ("model", "response.delta" | "response.audio.delta") => {
                d.only(&["seq", "text", "delivered", "generation", "frames"])?;
                let generation = d.u64("generation")?;
                let turn = by_generation(generation).unwrap_or(turn);
                let generation = generation
                    .or_else(|| view.generation_of(&turn))
                    .unwrap_or(0);
                let seq = d.need_u64("seq")?;
                let audio = l.event == "response.audio.delta";
                let frames = d.u64("frames")?.map_or(u32::from(audio), |f| f as u32);
                o.input(InputKind::Delta {
                    turn: turn.clone(),
                    generation,
                    seq,
                    text: d.str("text")?,
                    frames,
                });
                match d.bool("delivered")? {
                    Some(true) => o.output(
                        Output::Delivered {
                            turn,
                            generation,
                            seq,
                        },
                        &[],
                    ),
                    Some(false) => o.output(
                        Output::LateDropped {
                            turn,
                            generation,
                            seq,
                            reason: DropReason::CancelRequested,
                        },
                        &["reason"],
                    ),
                    None => {}
                }
            }
            ("model", "response.completed") => {
                d.only(&["output_tokens"])?;
                o.input(InputKind::ModelDone { turn });
            }
            ("delivery-gate", "delivered") => {
                d.only(&["generation", "seq"])?;
                let generation = d.need_u64("generation")?;
                let turn = by_generation(Some(generation)).unwrap_or(turn);
                o.output(
                    Output::Delivered {
                        turn,
                        generation,
                        seq: d.need_u64("seq")?,
                    },
                    &[],
                );
            }
            ("delivery-gate", "late.delta.dropped" | "late.audio.dropped") => {
                d.only(&["generation", "seq", "reason"])?;
                let generation = d.need_u64("generation")?;
                let turn = by_generation(Some(generation)).unwrap_or(turn);
                let (reason, wild): (DropReason, &'static [&'static str]) = match d.str("reason")? {
                    Some(r) => (from_name(&r, line)?, &[]),
                    None => (DropReason::CancelRequested, &["reason"]),
                };
                o.output(
                    Output::LateDropped {
                        turn,
                        generation,
                        seq: d.need_u64("seq")?,
                        reason,
                    },
                    wild,
                );
            }
            ("speaker", "frame.consumed") => {
                d.only(&[])?;
                o.input(InputKind::FramePlayed);
            }
            ("tts", "frame.played") => {
                d.only(&["seq", "generation"])?;
                let generation = d.u64("generation")?;
                let turn = by_generation(generation).unwrap_or(turn);
                let generation = generation
                    .or_else(|| view.generation_of(&turn))
                    .unwrap_or(0);
                if d.u64("generation")?.is_none() {
                    // The lab logs the speaker's consumption and the play as one line.
                    o.input(InputKind::FramePlayed);
                }
                o.output(
                    Output::Played {
                        turn,
                        generation,
                        seq: d.need_u64("seq")?,
                    },
                    &[],
                );
            }
            ("tts", "output_audio.clear" | "buffer.cleared") => {
                d.only(&["buffered_frames", "queued_frames"])?;
                o.output(Output::PlaybackCleared { turn, frames: 0 }, &["frames"]);
            }
            ("client", "turn.cancel") => {
                d.only(&["request_id", "reason", "attempt"])?;
                let request_id = d.need_str("request_id")?;
                self.last_stop.push((turn.clone(), request_id.clone()));
                o.input(InputKind::Stop { turn, request_id });
            }
            (
                "turn",
                "cancel.requested" | "cancel.already_requested" | "cancel.already_terminal",
            ) => {
                d.only(&[
                    "request_id",
                    "generation",
                    "response_delivery",
                    "transition_count",
                    "state",
                ])?;
                let request_id = d
                    .str("request_id")?
                    .unwrap_or_else(|| self.stop_request(&turn));
                let answer = match l.event.as_str() {
                    "cancel.requested" => StopAnswer::Requested,
                    "cancel.already_requested" => StopAnswer::AlreadyRequested,
                    _ => StopAnswer::AlreadyTerminal {
                        state: terminal_from_label(&d.need_str("state")?, line)?,
                    },
                };
                o.output(
                    Output::StopAnswered {
                        turn,
                        request_id,
                        answer,
                    },
                    &[],
                );
            }
            (
                "turn",
                "cancelled"
                | "completed"
                | "failed"
                | "reconcile_required"
                | "old_generation.cancelled",
            ) => {
                d.only(&[
                    "terminal_events",
                    "propagation_ms",
                    "cancel_effects",
                    "active_generation",
                    "terminal_seq",
                    "code",
                    "generation",
                ])?;
                let generation = d.u64("active_generation")?.or(d.u64("generation")?);
                let turn = by_generation(generation).unwrap_or(turn);
                let state = match l.event.as_str() {
                    "completed" => Terminal::Completed,
                    "failed" => match d.need_str("code")?.as_str() {
                        "DEADLINE_EXCEEDED" => Terminal::Failed {
                            code: FailCode::DeadlineExceeded,
                        },
                        c => {
                            return Err(InputError::at(line, format!("unknown failure code {c:?}")))
                        }
                    },
                    "reconcile_required" => Terminal::ReconcileRequired,
                    _ => Terminal::Cancelled,
                };
                o.output(Output::Terminal { turn, state }, &[]);
            }
            ("turn", "barge_in.accepted") => {
                d.only(&["new_generation", "fenced_generation"])?;
                let generation = match d.u64("fenced_generation")? {
                    Some(g) => g,
                    None => d.need_u64("new_generation")?.saturating_sub(1),
                };
                let turn = by_generation(Some(generation)).unwrap_or(turn);
                o.output(Output::GenerationFenced { turn, generation }, &[]);
            }
            ("turn", "created_from_barge_in") => {
                d.only(&["new_turn"])?;
                let mode = view.mode_of(&turn).unwrap_or(Mode::Audio);
                o.input(InputKind::Accept {
                    turn: d.need_str("new_turn")?,
                    generation: view.next_generation(),
                    mode,
                    deadline_ms: None,
                    budget: None,
                });
            }
            ("turn", "accept.refused") => {
                d.only(&["reason"])?;
                o.output(
                    Output::TurnRefused {
                        turn,
                        reason: RefuseReason::ActiveTurnExists,
                    },
                    &["reason"],
                );
            }
            ("cancel-tree", "cancel.propagated") => {
                d.only(&["child"])?;
                o.output(
                    Output::ChildCancelRequested {
                        turn,
                        child: d.need_str("child")?,
                    },
                    &[],
                );
            }
            ("deadline", "exceeded") => {
                d.only(&["source"])?;
                o.input(InputKind::Tick);
                o.output(Output::DeadlineExceeded { turn }, &[]);
            }
            ("planner", "tool.not_started") => {
                d.only(&["reason", "child", "tool"])?;
                let child = match d.str("child")? {
                    Some(c) => c,
                    None => {
                        self.hidden += 1;
                        format!(
                            "{}-{}",
                            d.str("tool")?.unwrap_or_else(|| "planned-tool".into()),
                            self.hidden
                        )
                    }
                };
                let reason = match d.need_str("reason")?.as_str() {
                    "no_budget" => NotStartedReason::NoBudget,
                    "turn_cancelled" => NotStartedReason::TurnCancelled,
                    r => return Err(InputError::at(line, format!("unknown reason {r:?}"))),
                };
                o.output(
                    Output::ToolNotStarted {
                        turn,
                        child,
                        reason,
                    },
                    &[],
                );
            }
            ("tool", "temporary_output.removed") => {
                d.only(&["synthetic_files", "child"])?;
                let child = self.child(&view, &turn, "tool", &d)?;
                o.output(
                    Output::TemporaryOutputRemoved {
                        turn,
                        child,
                        count: d.need_u64("synthetic_files")? as u32,
                    },
                    &[],
                );
            }
            ("tool", "commit.sent") => {
                d.only(&["idempotency_key", "child"])?;
                let child = self.child(&view, &turn, "tool", &d)?;
                o.input(InputKind::CommitSent {
                    turn,
                    child,
                    idempotency_key: d.need_str("idempotency_key")?,
                });
            }
            ("tool", ev @ ("commit.acknowledged" | "commit.failed")) => {
                d.only(&["committed_side_effects", "child"])?;
                let child = self.child(&view, &turn, "tool", &d)?;
                match ev {
                    "commit.acknowledged" => o.input(InputKind::CommitAcked { turn, child }),
                    _ => o.input(InputKind::CommitFailed { turn, child }),
                }
            }
            ("tool", "cancel.deferred") => {
                d.only(&["reason", "child"])?;
                let child = self.child(&view, &turn, "tool", &d)?;
                match d.need_str("reason")?.as_str() {
                    "commit_in_flight" => o.output(
                        Output::CancelDeferred {
                            turn,
                            child,
                            reason: DeferReason::CommitInFlight,
                        },
                        &[],
                    ),
                    r => return Err(InputError::at(line, format!("unknown reason {r:?}"))),
                }
            }
            ("reconciler", "status.enqueued") => {
                d.only(&["key", "child"])?;
                let child = self.child(&view, &turn, "tool", &d)?;
                o.output(
                    Output::ReconcileEnqueued {
                        turn,
                        child,
                        idempotency_key: d.need_str("key")?,
                    },
                    &[],
                );
            }
            ("stream-store", "event.persisted") => {
                d.only(&["seq", "text", "delivered", "terminal"])?;
                let terminal = d.bool("terminal")?.unwrap_or(false);
                let text = d.str("text")?;
                o.output(
                    Output::Persisted {
                        turn,
                        seq: d.need_u64("seq")?,
                        text,
                        terminal,
                    },
                    &[],
                );
            }
            ("stream-store", "replay") => {
                d.only(&["seq_range"])?;
                let range = d.need_str("seq_range")?;
                let (from, to) = range
                    .split_once("..")
                    .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
                    .ok_or_else(|| {
                        InputError::at(line, format!("seq_range {range:?} is not FROM..TO"))
                    })?;
                o.output(Output::Replayed { from, to }, &[]);
            }
            ("stream-store", "resume.refused") => {
                d.only(&["after_seq", "reason"])?;
                let reason = from_name(&d.need_str("reason")?, line)?;
                o.output(
                    Output::ResumeRefused {
                        after_seq: d.need_u64("after_seq")?,
                        reason,
                    },
                    &[],
                );
            }
            ("client", "event.acked") => {
                d.only(&["seq"])?;
                let seq = d.need_u64("seq")?;
                // The lab acks without logging the receipt: the client took the events in first.
                for s in view.received() + 1..=seq {
                    o.input(InputKind::ClientReceive { seq: s });
                }
                o.input(InputKind::ClientAck { seq });
            }
            ("client", "event.received") => {
                d.only(&["seq"])?;
                o.input(InputKind::ClientReceive {
                    seq: d.need_u64("seq")?,
                });
            }
            ("client", "duplicate.ignored") => {
                d.only(&["seq"])?;
                o.output(
                    Output::DuplicateIgnored {
                        seq: d.need_u64("seq")?,
                    },
                    &[],
                );
            }
            ("client", "render.completed") => {
                d.only(&["text"])?;
                o.output(
                    Output::Rendered {
                        turn,
                        text: d.need_str("text")?,
                    },
                    &[],
                );
            }
            ("transport", "disconnected") => {
                d.only(&["last_acked_seq"])?;
                o.input(InputKind::Disconnect);
            }
            ("transport", "resume") => {
                d.only(&["after_seq", "token"])?;
                o.input(InputKind::Resume {
                    after_seq: d.need_u64("after_seq")?,
                });
            }
            ("vad", "input_audio.speech_started") => {
                d.only(&["confidence"])?;
                let confidence = l
                    .detail
                    .get("confidence")
                    .and_then(Value::as_f64)
                    .ok_or_else(|| InputError::at(line, "missing detail field `confidence`"))?;
                o.input(InputKind::SpeechStarted { confidence });
            }
            (c, e) => {
                return Err(InputError::at(
                    line,
                    format!("unknown lab event: component {c:?}, event {e:?}"),
                ))
            }
        }
        Ok(o.events)
    }

    /// The child a spawn line names, and its kind.
    fn spawned(&mut self, l: &LabLine, d: &Detail) -> Result<(String, ChildKind), InputError> {
        if let Some(tool) = d.str("tool")? {
            let cancellable = d.bool("cancellable")?.unwrap_or(true);
            let child = d.str("child")?.unwrap_or_else(|| tool.clone());
            return Ok((
                child,
                ChildKind::Tool {
                    name: tool,
                    cancellable,
                },
            ));
        }
        let child = match d.str("child")? {
            Some(c) => c,
            None => match l.component.as_str() {
                "retriever" => "retrieval".to_owned(),
                c => c.to_owned(),
            },
        };
        let kind = match d.str("kind")?.as_deref() {
            Some("retrieval") => ChildKind::Retrieval,
            Some("model") => ChildKind::Model,
            Some("tts") => ChildKind::Tts,
            Some(k) => return Err(InputError::at(d.line, format!("unknown child kind {k:?}"))),
            None => kind_from_name(&child),
        };
        Ok((child, kind))
    }

    /// The child a component's line is about: named in the detail, else the turn's child of the
    /// component's kind (the latest one still running, else the latest), else its usual name.
    fn child(
        &self,
        view: &View,
        turn: &str,
        component: &str,
        d: &Detail,
    ) -> Result<String, InputError> {
        if let Some(c) = d.str("child")? {
            return Ok(c);
        }
        let kind = match component {
            "retriever" => ChildKind::Retrieval,
            "model" => ChildKind::Model,
            "tts" => ChildKind::Tts,
            _ => ChildKind::Tool {
                name: String::new(),
                cancellable: true,
            },
        };
        Ok(view
            .child_of(turn, &kind, true)
            .or_else(|| view.child_of(turn, &kind, false))
            .unwrap_or_else(|| match component {
                "retriever" => "retrieval".into(),
                c => c.into(),
            }))
    }
}

fn from_name<T: serde::de::DeserializeOwned>(name: &str, line: usize) -> Result<T, InputError> {
    serde_json::from_value(Value::String(name.to_owned()))
        .map_err(|_| InputError::at(line, format!("unknown reason {name:?}")))
}

fn terminal_from_label(label: &str, line: usize) -> Result<Terminal, InputError> {
    Ok(match label {
        "COMPLETED" => Terminal::Completed,
        "CANCELLED" => Terminal::Cancelled,
        "DEADLINE_EXCEEDED" => Terminal::Failed {
            code: FailCode::DeadlineExceeded,
        },
        "RECONCILE_REQUIRED" => Terminal::ReconcileRequired,
        s => return Err(InputError::at(line, format!("unknown state {s:?}"))),
    })
}

/// A read-only look at a session's model state, for resolving what a lab line leaves out.
struct View<'a> {
    session: Option<&'a turnfence_model::turn::state::Session>,
}

impl<'a> View<'a> {
    fn new(sessions: &'a Sessions, name: &str) -> View<'a> {
        View {
            session: sessions.peek(name).map(|s| s.machine().session()),
        }
    }

    fn turn_of(&self, generation: u64) -> Option<String> {
        self.session?
            .turns
            .iter()
            .rev()
            .find(|t| t.generation == generation)
            .map(|t| t.id.clone())
    }

    fn generation_of(&self, turn: &str) -> Option<u64> {
        self.session?.turn(turn).map(|t| t.generation)
    }

    fn mode_of(&self, turn: &str) -> Option<Mode> {
        self.session?.turn(turn).map(|t| t.mode)
    }

    fn next_generation(&self) -> u64 {
        let Some(s) = self.session else { return 1 };
        match (s.max_generation, s.active_generation) {
            (Some(max), Some(active)) if active > max => active,
            (Some(max), _) => max.saturating_add(1),
            _ => 1,
        }
    }

    fn child_of(&self, turn: &str, kind: &ChildKind, running: bool) -> Option<String> {
        let t = self.session?.turn(turn)?;
        t.children
            .iter()
            .rev()
            .find(|c| {
                let same = match (kind, &c.kind) {
                    (ChildKind::Tool { .. }, ChildKind::Tool { .. }) => true,
                    (a, b) => a == b,
                };
                same && (!running || c.state.is_pending())
            })
            .map(|c| c.id.clone())
    }

    fn received(&self) -> u64 {
        self.session.map_or(0, |s| s.client.received)
    }
}
