//! Conformance of one session: replays a trace's inputs through the turn machine and holds each
//! observed output against the model's, then runs the invariants over what happened.
//!
//! What happened is the *effective* trace: the inputs (including the few hidden ones the model
//! can explain, see [`SessionCheck::explain`]), the model's own outputs where the trace does not
//! show them, and the trace's observed outputs where it does — including every output the model
//! did not produce and every one it contradicts. The invariants judge that.

use std::collections::{HashMap, VecDeque};
use std::mem::Discriminant;

use serde_json::Value;
use turnfence_model::turn::{
    ChildKind, Input, InputKind, Invariant, Misuse, Monitor, NotStartedReason, Output, Step,
    Terminal, TurnMachine,
};
use turnfence_model::Millis;

use super::{Finding, FindingKind};

/// An output the trace observed. `wildcards` names fields the log does not record: they match
/// any value.
#[derive(Clone, Debug, PartialEq)]
pub struct Observed {
    pub output: Output,
    pub wildcards: &'static [&'static str],
}

impl Observed {
    pub fn exact(output: Output) -> Observed {
        Observed {
            output,
            wildcards: &[],
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    /// The model produced it; the trace does not show it.
    Implicit,
    /// The trace shows it, as the model produced it.
    Observed,
    /// The trace shows something else in its place, or something the model did not produce.
    Deviant,
}

#[derive(Clone, Debug)]
struct EffOutput {
    output: Output,
    line: Option<usize>,
    seen: Seen,
}

impl EffOutput {
    fn value(&self) -> Value {
        value_of(&self.output)
    }
}

fn value_of(output: &Output) -> Value {
    serde_json::to_value(output).unwrap_or(Value::Null)
}

#[derive(Clone, Debug)]
struct EffStep {
    input: Input,
    line: usize,
    outputs: Vec<EffOutput>,
}

/// The key under which the model's outputs wait to be observed: their kind.
type Key = Discriminant<Output>;

fn key_of(output: &Output) -> Key {
    std::mem::discriminant(output)
}

/// Fields that say *which* output this is, as opposed to *what* it says.
const IDENTITY: [&str; 4] = ["seq", "child", "request_id", "idempotency_key"];

fn matches(pattern: &Value, actual: &Value, wildcards: &[&str]) -> bool {
    match (pattern, actual) {
        (Value::Object(p), Value::Object(a)) => p
            .iter()
            .all(|(k, v)| wildcards.contains(&k.as_str()) || a.get(k).is_some_and(|av| v == av)),
        _ => pattern == actual,
    }
}

fn same_identity(pattern: &Value, actual: &Value) -> bool {
    IDENTITY
        .iter()
        .all(|k| match (pattern.get(k), actual.get(k)) {
            (Some(p), Some(a)) => p == a,
            _ => true,
        })
}

/// The conformance state of one session.
pub struct SessionCheck {
    pub session: String,
    machine: TurnMachine,
    steps: Vec<EffStep>,
    pending: HashMap<Key, VecDeque<(usize, usize)>>,
    findings: Vec<Finding>,
    /// Output kinds the log records completely: one the model produced that the trace does not
    /// show is missing, not merely unlogged.
    complete: Vec<String>,
    /// The latest `at` the trace showed for this session.
    last_at: Millis,
}

impl SessionCheck {
    pub fn new(session: &str, complete: &[String]) -> SessionCheck {
        SessionCheck {
            session: session.to_owned(),
            machine: TurnMachine::new(),
            steps: Vec::new(),
            pending: HashMap::new(),
            findings: Vec::new(),
            complete: complete.to_vec(),
            last_at: 0,
        }
    }

    /// The trace's clock moves to `at`; going backwards is an input error.
    pub fn advance(&mut self, at: Millis, line: usize) -> Result<(), super::InputError> {
        if at < self.last_at {
            return Err(super::InputError::at(
                line,
                format!(
                    "time went backwards: at {at} after {} in session {:?}",
                    self.last_at, self.session
                ),
            ));
        }
        self.last_at = at;
        Ok(())
    }

    pub fn now(&self) -> Millis {
        self.machine.session().now
    }

    /// The machine as it stands: dialects read it to resolve ids the log leaves out.
    pub fn machine(&self) -> &TurnMachine {
        &self.machine
    }

    fn drain(&mut self) -> Vec<Output> {
        std::iter::from_fn(|| self.machine.poll_output()).collect()
    }

    fn push_step(&mut self, input: Input, line: usize, outputs: Vec<Output>) {
        let index = self.steps.len();
        let outputs: Vec<EffOutput> = outputs
            .into_iter()
            .enumerate()
            .map(|(i, output)| {
                self.pending
                    .entry(key_of(&output))
                    .or_default()
                    .push_back((index, i));
                EffOutput {
                    output,
                    line: None,
                    seen: Seen::Implicit,
                }
            })
            .collect();
        self.steps.push(EffStep {
            input,
            line,
            outputs,
        });
    }

    /// Applies an input, recording what time passing caused as a step of its own.
    fn apply(&mut self, input: &Input, line: usize) -> Result<(), Misuse> {
        self.machine.advance_to(input.at)?;
        let ticked = self.drain();
        if !ticked.is_empty() {
            self.push_step(Input::new(input.at, InputKind::Tick), line, ticked);
        }
        let result = self.machine.handle(input);
        let outputs = self.drain();
        result?;
        self.push_step(input.clone(), line, outputs);
        Ok(())
    }

    /// An input from the trace. A refused input is a finding, unless a hidden step the model can
    /// explain makes it acceptable.
    pub fn input(&mut self, input: &Input, line: usize) {
        let misuse = match self.apply(input, line) {
            Ok(()) => return,
            Err(m) => m,
        };
        let hidden = self.explain_input(input, &misuse);
        if !hidden.is_empty()
            && hidden.iter().all(|h| self.apply(h, line).is_ok())
            && self.apply(input, line).is_ok()
        {
            return;
        }
        let (kind, invariant, message) = match self.refusal_cause(&misuse) {
            Some((invariant, why)) => (FindingKind::Invariant, Some(invariant), why),
            None => (
                FindingKind::RefusedInput,
                None,
                format!("the model refuses this input: {misuse}"),
            ),
        };
        self.findings.push(Finding {
            line,
            kind,
            invariant,
            ids: input.turn().map(|t| vec![t.to_owned()]).unwrap_or_default(),
            message,
        });
    }

    /// Some refusals are evidence of a broken invariant: work from something the model never
    /// let start.
    fn refusal_cause(&self, misuse: &Misuse) -> Option<(Invariant, String)> {
        match misuse {
            Misuse::UnknownTurn { turn } if self.was_refused(turn) => Some((
                Invariant::SingleRunningTurn,
                format!("turn {turn} runs although it was accepted while another turn was running"),
            )),
            Misuse::ChildNotInState { turn, child, .. } => {
                let reason =
                    self.steps
                        .iter()
                        .flat_map(|s| &s.outputs)
                        .find_map(|o| match &o.output {
                            Output::ToolNotStarted {
                                turn: t,
                                child: c,
                                reason,
                            } if t == turn && c == child => Some(*reason),
                            _ => None,
                        })?;
                Some(match reason {
                    NotStartedReason::NoBudget => (
                        Invariant::DeadlineRespected,
                        format!("child {child} runs although it had less time left than it needs"),
                    ),
                    NotStartedReason::TurnCancelled => (
                        Invariant::CancelTreeDrained,
                        format!("child {child} runs although it was spawned after the cancel"),
                    ),
                })
            }
            _ => None,
        }
    }

    fn was_refused(&self, turn: &str) -> bool {
        self.steps
            .iter()
            .flat_map(|s| &s.outputs)
            .any(|o| matches!(&o.output, Output::TurnRefused { turn: t, .. } if t == turn))
    }

    /// Hidden inputs that make a refused input acceptable.
    fn explain_input(&mut self, input: &Input, misuse: &Misuse) -> Vec<Input> {
        let at = input.at;
        match (misuse, &input.kind) {
            // A child the log first mentions when it reports on it: its start went unlogged.
            (
                Misuse::UnknownChild { turn, child },
                InputKind::ChildCompleted { .. } | InputKind::Checkpoint { .. },
            ) => {
                let kind = kind_from_name(child);
                vec![Input::new(
                    at,
                    InputKind::Spawn {
                        turn: turn.clone(),
                        child: child.clone(),
                        kind,
                        need_ms: None,
                    },
                )]
            }
            // The client received events the log does not show before this one.
            (Misuse::ReceiveGap { got, .. }, InputKind::ClientReceive { .. }) => {
                let from = self.machine.session().client.received + 1;
                (from..*got)
                    .map(|seq| Input::new(at, InputKind::ClientReceive { seq }))
                    .collect()
            }
            _ => Vec::new(),
        }
    }

    /// Finds a pending model output the observation matches, and marks it observed.
    fn take_match(&mut self, observed: &Observed, line: usize) -> bool {
        let Some(queue) = self.pending.get_mut(&key_of(&observed.output)) else {
            return false;
        };
        let steps = &self.steps;
        let pattern = (!observed.wildcards.is_empty()).then(|| value_of(&observed.output));
        let found = queue.iter().position(|&(s, o)| {
            let actual = &steps[s].outputs[o].output;
            match &pattern {
                None => *actual == observed.output,
                Some(p) => {
                    actual.turn() == observed.output.turn()
                        && matches(p, &value_of(actual), observed.wildcards)
                }
            }
        });
        let Some(pos) = found else { return false };
        let Some((s, o)) = queue.remove(pos) else {
            return false;
        };
        let out = &mut self.steps[s].outputs[o];
        out.line = Some(line);
        out.seen = Seen::Observed;
        true
    }

    /// An output the trace observed at `at`.
    pub fn output(&mut self, observed: &Observed, at: Millis, line: usize) {
        if self.take_match(observed, line) {
            return;
        }
        // Steps the log does not show, that the model can explain.
        for hidden in self.explain_output(&observed.output, at) {
            if self.apply(&hidden, line).is_err() {
                break;
            }
            if self.take_match(observed, line) {
                return;
            }
        }
        self.deviation(observed, value_of(&observed.output), line);
    }

    /// The observation matches nothing the model did: either it contradicts a model output of
    /// the same kind and identity, or the model does not produce it at all.
    fn deviation(&mut self, observed: &Observed, value: Value, line: usize) {
        let key = key_of(&observed.output);
        let steps = &self.steps;
        let rival = self.pending.get(&key).and_then(|q| {
            q.iter().position(|&(s, o)| {
                let actual = &steps[s].outputs[o].output;
                actual.turn() == observed.output.turn() && same_identity(&value, &value_of(actual))
            })
        });
        let turn_ids = observed
            .output
            .turn()
            .map(|t| vec![t.to_owned()])
            .unwrap_or_default();
        let (kind, message) = if let Some(pos) = rival {
            let (s, o) = self
                .pending
                .get_mut(&key)
                .and_then(|q| q.remove(pos))
                .unwrap_or((0, 0));
            let model = self.steps[s].outputs[o].value();
            let concrete = fill(&observed.output, observed.wildcards, &model);
            let out = &mut self.steps[s].outputs[o];
            out.output = concrete;
            out.line = Some(line);
            out.seen = Seen::Deviant;
            (
                FindingKind::ContradictedOutput,
                format!(
                    "the trace shows {} where the model gives {}",
                    compact(&value, observed.wildcards),
                    compact(&model, &[])
                ),
            )
        } else {
            let model_did = self.model_counterpart(&observed.output);
            let step = self.steps.len().saturating_sub(1);
            if let Some(s) = self.steps.get_mut(step) {
                s.outputs.push(EffOutput {
                    output: observed.output.clone(),
                    line: Some(line),
                    seen: Seen::Deviant,
                });
            }
            (
                FindingKind::UnexpectedOutput,
                format!(
                    "the model does not produce {}{model_did}",
                    compact(&value, observed.wildcards)
                ),
            )
        };
        self.findings.push(Finding {
            line,
            kind,
            invariant: None,
            ids: turn_ids,
            message,
        });
    }

    /// What the model did instead, for the explanation of an unexpected output.
    fn model_counterpart(&self, output: &Output) -> String {
        let Output::Delivered { turn, seq, .. } = output else {
            return String::new();
        };
        for step in self.steps.iter().rev() {
            for o in &step.outputs {
                if let Output::LateDropped {
                    turn: t,
                    seq: s,
                    reason,
                    ..
                } = &o.output
                {
                    if t == turn && s == seq {
                        return format!("; its delivery gate dropped seq {seq} ({reason:?})");
                    }
                }
            }
        }
        String::new()
    }

    /// Hidden inputs that would make the model produce an observed output the log shows without
    /// its cause. The complete list is in ARCHITECTURE.md.
    fn explain_output(&mut self, output: &Output, at: Millis) -> Vec<Input> {
        let s = self.machine.session();
        let kind = |k: InputKind| Input::new(at, k);
        match output {
            // A child stopped at a checkpoint the log names only in the stop.
            Output::ChildCancelled {
                turn,
                child,
                checkpoint,
            } => {
                let running = s
                    .turn(turn)
                    .and_then(|t| t.child(child))
                    .is_some_and(|c| c.state.is_pending());
                if running {
                    vec![kind(InputKind::Checkpoint {
                        turn: turn.clone(),
                        child: child.clone(),
                        phase: checkpoint.clone(),
                        temporary_outputs: 0,
                    })]
                } else {
                    Vec::new()
                }
            }
            // A turn completed: its model finished and its audio played out, unlogged. (Never for
            // a cancelled turn: that would hide a child still running.)
            Output::Terminal {
                turn,
                state: Terminal::Completed,
            } => {
                let Some(t) = s.turn(turn) else {
                    return Vec::new();
                };
                let mut hidden = Vec::new();
                if !t.model_done {
                    hidden.push(kind(InputKind::ModelDone { turn: turn.clone() }));
                }
                if let Some(last) = s.playback.iter().rposition(|f| f.turn == *turn) {
                    hidden.extend((0..=last).map(|_| kind(InputKind::FramePlayed)));
                }
                hidden
            }
            // A delta the log shows only at the gate or in the store.
            Output::LateDropped {
                turn,
                generation,
                seq,
                ..
            } => vec![kind(InputKind::Delta {
                turn: turn.clone(),
                generation: *generation,
                seq: *seq,
                text: None,
                frames: 0,
            })],
            Output::Persisted {
                turn,
                text,
                terminal: false,
                ..
            } => {
                let Some(t) = s.turn(turn) else {
                    return Vec::new();
                };
                vec![kind(InputKind::Delta {
                    turn: turn.clone(),
                    generation: t.generation,
                    seq: t.last_delivered_seq + 1,
                    text: text.clone(),
                    frames: 0,
                })]
            }
            // A tool the planner refused: its request went unlogged.
            Output::ToolNotStarted { turn, child, .. }
                if s.turn(turn).is_some_and(|t| t.child(child).is_none()) =>
            {
                vec![kind(InputKind::Spawn {
                    turn: turn.clone(),
                    child: child.clone(),
                    kind: kind_from_name(child),
                    need_ms: None,
                })]
            }
            // The client took in events the log does not show.
            Output::DuplicateIgnored { seq } => {
                let received = s.client.received;
                let mut hidden: Vec<Input> = (received + 1..=*seq)
                    .map(|seq| kind(InputKind::ClientReceive { seq }))
                    .collect();
                hidden.push(kind(InputKind::ClientReceive { seq: *seq }));
                hidden
            }
            Output::Rendered { turn, .. } => {
                let end = s
                    .store
                    .iter()
                    .position(|e| e.turn == *turn && e.terminal)
                    .map_or(0, |i| i as u64 + 1);
                (s.client.received + 1..=end)
                    .map(|seq| kind(InputKind::ClientReceive { seq }))
                    .collect()
            }
            _ => Vec::new(),
        }
    }

    /// The session is over: the invariants judge the effective trace.
    pub fn finish(mut self) -> Vec<Finding> {
        self.drop_missing();
        self.drop_superseded();
        let mut monitor = Monitor::new();
        for step in &self.steps {
            monitor.input(&step.input);
            for o in &step.outputs {
                monitor.output(&o.output);
            }
            monitor.end_step();
        }
        monitor.finish();
        for v in monitor.take_violations() {
            let step = self
                .steps
                .get(v.step.min(self.steps.len().saturating_sub(1)));
            let line = step.map_or(0, |s| {
                s.outputs
                    .iter()
                    .find(|o| o.seen == Seen::Deviant)
                    .and_then(|o| o.line)
                    .unwrap_or(s.line)
            });
            self.findings.push(Finding {
                line,
                kind: FindingKind::Invariant,
                invariant: Some(v.invariant),
                ids: v.ids,
                message: v.message,
            });
        }
        self.findings
    }

    /// Outputs of a kind the log records completely that the trace never showed: findings, and
    /// gone from the effective trace (the system did not do them).
    fn drop_missing(&mut self) {
        if self.complete.is_empty() {
            return;
        }
        let mut missing = Vec::new();
        for step in &mut self.steps {
            let line = step.line;
            let complete = &self.complete;
            step.outputs.retain(|o| {
                if o.seen != Seen::Implicit {
                    return true;
                }
                let value = o.value();
                let kind = value
                    .get("output")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let gone = complete.iter().any(|c| c == kind);
                if gone {
                    missing.push((
                        line,
                        o.output.turn().map(str::to_owned),
                        compact(&value, &[]),
                    ));
                }
                !gone
            });
        }
        for (line, turn, what) in missing {
            self.findings.push(Finding {
                line,
                kind: FindingKind::MissingOutput,
                invariant: None,
                ids: turn.into_iter().collect(),
                message: format!(
                    "the model gives {what} here; the trace, complete for its kind, never shows it"
                ),
            });
        }
    }

    /// A model output the trace did not show, of which the trace showed its own version earlier
    /// (a terminal state claimed too soon, say), did not happen a second time: the system already
    /// did it its way.
    fn drop_superseded(&mut self) {
        let mut shown: Vec<(Key, Option<String>, Value)> = Vec::new();
        for step in &mut self.steps {
            step.outputs.retain(|o| {
                if o.seen == Seen::Deviant {
                    shown.push((
                        key_of(&o.output),
                        o.output.turn().map(str::to_owned),
                        o.value(),
                    ));
                    return true;
                }
                if o.seen != Seen::Implicit || shown.is_empty() {
                    return true;
                }
                let superseded = shown.iter().any(|(k, t, d)| {
                    *k == key_of(&o.output)
                        && t.as_deref() == o.output.turn()
                        && same_identity(d, &o.value())
                });
                !superseded
            });
        }
    }

    /// The effective trace, for reports.
    pub fn steps(&self) -> Vec<Step> {
        self.steps
            .iter()
            .map(|s| Step {
                input: s.input.clone(),
                outputs: s.outputs.iter().map(|o| o.output.clone()).collect(),
            })
            .collect()
    }
}

/// The observed output with its wildcard fields taken from the model's.
fn fill(observed: &Output, wildcards: &[&str], model: &Value) -> Output {
    let mut value = serde_json::to_value(observed).unwrap_or(Value::Null);
    if let (Value::Object(v), Value::Object(m)) = (&mut value, model) {
        for w in wildcards {
            if let Some(mv) = m.get(*w) {
                v.insert((*w).to_owned(), mv.clone());
            }
        }
    }
    serde_json::from_value(value).unwrap_or_else(|_| observed.clone())
}

/// An output as a short `kind{field=value,…}` for messages, wildcards left out.
pub fn compact(value: &Value, wildcards: &[&str]) -> String {
    let Value::Object(m) = value else {
        return value.to_string();
    };
    let kind = m.get("output").and_then(Value::as_str).unwrap_or("?");
    let fields: Vec<String> = m
        .iter()
        .filter(|(k, _)| *k != "output" && !wildcards.contains(&k.as_str()))
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect();
    format!("{kind}{{{}}}", fields.join(","))
}

/// A child's kind from its name, as logs name children.
pub fn kind_from_name(name: &str) -> ChildKind {
    if name.contains("retriev") {
        ChildKind::Retrieval
    } else if name.contains("tts") {
        ChildKind::Tts
    } else if name.contains("model") {
        ChildKind::Model
    } else {
        ChildKind::Tool {
            name: name.to_owned(),
            cancellable: true,
        }
    }
}

/// Used by the invariant mapping of findings in reports.
pub fn invariant_name(i: Option<Invariant>) -> &'static str {
    i.map_or("conformance", Invariant::name)
}
