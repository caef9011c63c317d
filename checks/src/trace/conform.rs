//! Conformance of one session, for any machine that is [`Conform`]: replays a trace's inputs
//! through the machine and holds each observed output against the machine's, then runs the
//! invariants over what happened.
//!
//! What happened is the *effective* trace: the inputs (including the hidden ones the machine can
//! explain), the machine's own outputs where the trace does not show them, and the trace's
//! observed outputs where it does — including every output the machine did not produce and every
//! one it contradicts. The invariants judge that.

use std::collections::VecDeque;
use std::mem::Discriminant;

use serde::Serialize;
use serde_json::Value;
use turnfence_model::said::{Noun, Part, Said};
use turnfence_model::{Invariant, Millis};

use super::{limits, Finding, FindingKind, InputError};

mod contract;
mod end;
mod findings;
mod live;
mod unlogged;

pub use contract::{Conform, History, Judged, LineInput, Unlogged};
use contract::{EffOutput, EffStep, Seen};
pub(crate) use live::same;
use live::Walk;

/// An output the trace observed. `wildcards` names fields the log does not record: they match
/// any value.
#[derive(Clone, Debug, PartialEq)]
pub struct Observed<O> {
    pub output: O,
    pub wildcards: &'static [&'static str],
}

impl<O> Observed<O> {
    pub fn exact(output: O) -> Observed<O> {
        Observed {
            output,
            wildcards: &[],
        }
    }
}

fn value_of(output: &impl Serialize) -> Value {
    serde_json::to_value(output).unwrap_or(Value::Null)
}

/// How far back an unexpected output's explanation is looked for.
const RECENT_OUTPUTS: usize = 256;

/// Fields that say *which* output this is, as opposed to *what* it says.
const IDENTITY: [&str; 6] = [
    "seq",
    "child",
    "request_id",
    "idempotency_key",
    "req",
    "task",
];

fn matches(pattern: &Value, actual: &Value, wildcards: &[&str]) -> bool {
    match (pattern, actual) {
        (Value::Object(p), Value::Object(a)) => p
            .iter()
            .all(|(k, v)| wildcards.contains(&k.as_str()) || a.get(k).is_some_and(|av| v == av)),
        _ => pattern == actual,
    }
}

/// The observed output as JSON where it has wildcards (matched field by field), else none
/// (matched whole).
fn pattern_of<O: Serialize>(observed: &Observed<O>) -> Option<Value> {
    (!observed.wildcards.is_empty()).then(|| value_of(&observed.output))
}

/// Whether the machine's `actual` output is the one `observed` shows (`pattern`: the observed
/// output as JSON, where it has wildcards).
fn fits<M: Conform>(
    observed: &Observed<M::Output>,
    pattern: Option<&Value>,
    actual: &M::Output,
) -> bool {
    match pattern {
        None => *actual == observed.output,
        Some(p) => {
            M::subject(actual) == M::subject(&observed.output)
                && matches(p, &value_of(actual), observed.wildcards)
        }
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

/// An output the trace showed its own way: its subject and value.
type Shown = (Option<String>, Value);

/// Whether the trace showed its own version of `output` in `earlier` (the outputs of its kind it
/// showed before): the same subject and identity. The end drops the machine's unshown one then
/// (`drop_superseded`), and the live walk waits at it until the trace shows it.
fn superseded<M: Conform>(earlier: &[Shown], output: &M::Output) -> bool {
    let value = value_of(output);
    let subject = M::subject(output);
    earlier
        .iter()
        .any(|(t, d)| t.as_deref() == subject && same_identity(d, &value))
}

/// The machine's outputs a session's trace has not shown yet, by kind, each as its step and its
/// place there, oldest first. A session's outputs are of a few kinds: they are a short list
/// searched in order, not hashed, and their count is kept as they come and go.
struct Pending<O> {
    kinds: Vec<(Discriminant<O>, Places)>,
    len: usize,
}

/// Outputs as their steps and their places there, oldest first.
type Places = VecDeque<(usize, usize)>;

impl<O> Default for Pending<O> {
    fn default() -> Pending<O> {
        Pending {
            kinds: Vec::new(),
            len: 0,
        }
    }
}

impl<O> Pending<O> {
    /// The outputs of one kind not shown yet, oldest first.
    fn get(&self, key: &Discriminant<O>) -> Option<&Places> {
        self.kinds.iter().find(|(k, _)| k == key).map(|(_, q)| q)
    }

    /// `output`, at `place` (its step and its place there), is not shown yet.
    fn push(&mut self, output: &O, place: (usize, usize)) {
        let key = std::mem::discriminant(output);
        match self.kinds.iter_mut().find(|(k, _)| *k == key) {
            Some((_, queue)) => queue.push_back(place),
            None => self.kinds.push((key, VecDeque::from([place]))),
        }
        self.len += 1;
    }

    /// The `pos`th output of a kind not shown yet is shown: its place, taken out.
    fn remove(&mut self, key: &Discriminant<O>, pos: usize) -> Option<(usize, usize)> {
        let (_, queue) = self.kinds.iter_mut().find(|(k, _)| k == key)?;
        let place = queue.remove(pos)?;
        self.len -= 1;
        Some(place)
    }
}

/// The conformance state of one session.
pub struct SessionCheck<M: Conform> {
    pub session: String,
    machine: M,
    /// A fresh monitor of the machine the session started as: what judges its effective trace.
    pub(super) monitor: M::Monitor,
    steps: Vec<EffStep<M>>,
    pending: Pending<M::Output>,
    findings: Vec<Finding>,
    /// Output kinds the log records completely: one the machine produced that the trace does not
    /// show is missing, not merely unlogged.
    complete: Vec<String>,
    /// The latest `at` the trace showed for this session, and the line that showed it.
    last_at: Millis,
    last_line: usize,
    /// The capture is partial (meta line): a session may end with its turns unfinished.
    partial: bool,
    /// The inputs the checker supplied that the trace does not show (explained hidden steps),
    /// each as JSON, when kept.
    hidden_kept: Option<Vec<String>>,
    /// The walk of a session judged as its lines come ([`SessionCheck::decided`]), if it is.
    walk: Option<Walk<M>>,
    /// The steps its stack may take without a line, as its dialect declares them.
    unlogged: &'static [Unlogged<M>],
}

impl<M: Conform> SessionCheck<M> {
    /// A session's check; `keep_hidden` keeps each hidden step supplied (as JSON), not only
    /// their count.
    pub fn new(
        session: &str,
        machine: M,
        complete: &[String],
        partial: bool,
        keep_hidden: bool,
    ) -> SessionCheck<M> {
        SessionCheck {
            session: session.to_owned(),
            monitor: machine.monitor(),
            machine,
            steps: Vec::new(),
            pending: Pending::default(),
            findings: Vec::new(),
            complete: complete.to_vec(),
            last_at: 0,
            last_line: 0,
            partial,
            hidden_kept: keep_hidden.then(Vec::new),
            walk: None,
            unlogged: &[],
        }
    }

    /// The session's stack may take `steps` without a line of its log.
    pub fn with_unlogged(mut self, steps: &'static [Unlogged<M>]) -> SessionCheck<M> {
        self.unlogged = steps;
        self
    }

    /// The session is judged as its lines come: [`SessionCheck::decided`] gives what each decides.
    pub fn judged_as_it_comes(mut self) -> SessionCheck<M> {
        self.walk = Some(Walk::new(self.monitor.clone()));
        self
    }

    /// The trace's clock moves to `at`; going backwards is an input error.
    pub fn advance(&mut self, at: Millis, line: usize) -> Result<(), InputError> {
        if at < self.last_at {
            return Err(InputError::at(
                line,
                format!(
                    "time went backwards: at {at} after {} in session {:?}",
                    self.last_at, self.session
                ),
            ));
        }
        self.last_at = at;
        self.last_line = line;
        Ok(())
    }

    /// The machine as it stands: dialects read it to resolve ids the log leaves out.
    pub fn machine(&self) -> &M {
        &self.machine
    }

    fn drain(&mut self) -> Vec<M::Output> {
        turnfence_model::drain(&mut self.machine)
    }

    fn push_step(&mut self, input: M::Input, line: usize, outputs: Vec<M::Output>) {
        let index = self.steps.len();
        let outputs = outputs
            .into_iter()
            .enumerate()
            .map(|(i, output)| {
                self.pending.push(&output, (index, i));
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

    /// Applies an input, recording what time passing caused as a step of its own. A refused
    /// input comes back with the refusal.
    fn apply(&mut self, input: M::Input, line: usize) -> Result<(), (M::Misuse, M::Input)> {
        let at = M::at(&input);
        if let Err(misuse) = self.machine.advance_to(at) {
            return Err((misuse, input));
        }
        let ticked = self.drain();
        // A tick is time passing: what it caused is its own step, not a step before it.
        let mut outputs = Vec::new();
        if M::is_tick(&input) {
            outputs = ticked;
        } else if !ticked.is_empty() {
            self.push_step(M::tick(at), line, ticked);
        }
        let result = self.machine.handle(&input);
        outputs.extend(self.drain());
        if let Err(misuse) = result {
            return Err((misuse, input));
        }
        self.push_step(input, line, outputs);
        Ok(())
    }

    /// The session's last outputs, oldest first: where an explanation of a deviation is looked
    /// for (bounded, so a trace of many deviations is not judged in quadratic time).
    fn recent_outputs(&self) -> Vec<&M::Output> {
        let mut recent: Vec<&M::Output> = self
            .steps
            .iter()
            .rev()
            .flat_map(|s| s.outputs.iter().rev().map(|o| &o.output))
            .take(RECENT_OUTPUTS)
            .collect();
        recent.reverse();
        recent
    }

    fn all_outputs(&self) -> Vec<&M::Output> {
        self.steps
            .iter()
            .flat_map(|s| s.outputs.iter().map(|o| &o.output))
            .collect()
    }

    /// An input from the trace. A refused input is a finding, unless a hidden step the machine
    /// can explain makes it acceptable.
    pub fn input(&mut self, input: M::Input, line: usize) {
        let (misuse, input) = match self.apply(input, line) {
            Ok(()) => return,
            Err(refused) => refused,
        };
        let hidden = self.machine.explain_input(&input, &misuse);
        for h in &hidden {
            self.supplied(h);
        }
        if !hidden.is_empty()
            && hidden.iter().all(|h| self.apply(h.clone(), line).is_ok())
            && self.apply(input.clone(), line).is_ok()
        {
            return;
        }
        // Steps the stack took without a line, after which the machine takes the input.
        let accepts = |m: &M, _: &[M::Output]| {
            let mut m = m.clone();
            m.advance_to(M::at(&input)).is_ok() && m.handle(&input).is_ok()
        };
        if let Some(path) = self.search(M::at(&input), accepts) {
            if self.take_unlogged(path, line) && self.apply(input.clone(), line).is_ok() {
                return;
            }
        }
        let cause = self.machine.refusal_cause(&self.all_outputs(), &misuse);
        let (kind, invariant, message) = match cause {
            Some((invariant, why)) => (FindingKind::Invariant, Some(invariant.name()), why),
            None => (
                FindingKind::RefusedInput,
                None,
                format!("the model refuses this input: {misuse}").into(),
            ),
        };
        let ids = M::input_subject(&input)
            .map(|t| vec![t.to_owned()])
            .unwrap_or_default();
        self.found(line, self.last_at, kind, invariant, ids, message);
    }

    /// Finds a pending machine output the observation matches, and marks it observed.
    fn take_match(&mut self, observed: &Observed<M::Output>, line: usize) -> bool {
        let key = std::mem::discriminant(&observed.output);
        let Some(queue) = self.pending.get(&key) else {
            return false;
        };
        let steps = &self.steps;
        let pattern = pattern_of(observed);
        let found = queue
            .iter()
            .position(|&(s, o)| fits::<M>(observed, pattern.as_ref(), &steps[s].outputs[o].output));
        let Some(pos) = found else { return false };
        let Some((s, o)) = self.pending.remove(&key, pos) else {
            return false;
        };
        let out = &mut self.steps[s].outputs[o];
        out.line = Some((line, self.last_at));
        out.seen = Seen::Observed;
        true
    }

    /// A fact the trace states at `line`, judged now.
    pub fn fact(&mut self, fact: &M::Fact, line: usize) {
        let history = History { steps: &self.steps };
        let Some((invariant, ids, message)) = self.machine.judge_fact(fact, self.last_at, &history)
        else {
            return;
        };
        let (kind, invariant) = match invariant {
            Some(i) => (FindingKind::Invariant, Some(i.name())),
            None => (FindingKind::ContradictedFact, None),
        };
        self.found(line, self.last_at, kind, invariant, ids, message);
    }

    /// An output the trace observed at `at`.
    pub fn output(&mut self, observed: &Observed<M::Output>, at: Millis, line: usize) {
        if self.take_match(observed, line) {
            return;
        }
        // Steps the log does not show, that the machine can explain.
        for hidden in self.machine.explain_output(&observed.output, at) {
            self.supplied(&hidden);
            if self.apply(hidden, line).is_err() {
                break;
            }
            if self.take_match(observed, line) {
                return;
            }
        }
        // Steps the stack took without a line, after which the machine gives it.
        let pattern = pattern_of(observed);
        let gives = |_: &M, outputs: &[M::Output]| {
            outputs
                .iter()
                .any(|o| fits::<M>(observed, pattern.as_ref(), o))
        };
        if let Some(path) = self.search(at, gives) {
            if self.take_unlogged(path, line) && self.take_match(observed, line) {
                return;
            }
        }
        self.deviation(observed, line);
    }

    /// The observation matches nothing the machine did: either it contradicts a machine output of
    /// the same kind and identity, or the machine does not produce it at all.
    fn deviation(&mut self, observed: &Observed<M::Output>, line: usize) {
        let value = value_of(&observed.output);
        let key = std::mem::discriminant(&observed.output);
        let steps = &self.steps;
        let subject = M::subject(&observed.output);
        let rival = self.pending.get(&key).and_then(|q| {
            q.iter().position(|&(s, o)| {
                let actual = &steps[s].outputs[o].output;
                M::subject(actual) == subject && same_identity(&value, &value_of(actual))
            })
        });
        let ids = subject.map(|t| vec![t.to_owned()]).unwrap_or_default();
        let taken = rival.and_then(|pos| self.pending.remove(&key, pos));
        let (kind, message) = if let Some((s, o)) = taken {
            if let Some(walk) = &mut self.walk {
                // An output the walk judged is replaced: it starts again.
                walk.stale |= walk.judged((s, o));
            }
            let model = value_of(&self.steps[s].outputs[o].output);
            let concrete = fill::<M>(&observed.output, observed.wildcards, &model);
            let out = &mut self.steps[s].outputs[o];
            out.output = concrete;
            out.line = Some((line, self.last_at));
            out.seen = Seen::Deviant;
            let mut said = vec![Part::from("the trace shows ")];
            said.extend(compact_parts(&value, observed.wildcards));
            said.push(" where the model gives ".into());
            said.extend(compact_parts(&model, &[]));
            (FindingKind::ContradictedOutput, Said::of(said))
        } else {
            let instead = M::counterpart(&self.recent_outputs(), &observed.output);
            let deviant = EffOutput {
                output: observed.output.clone(),
                line: Some((line, self.last_at)),
                seen: Seen::Deviant,
            };
            // It happened with the last step, or, shown later than that step's time, after it:
            // time passing is its step (the monitor then judges it once that step is over).
            match self.steps.last_mut() {
                Some(s) if M::at(&s.input) >= self.last_at => s.outputs.push(deviant),
                _ => self.steps.push(EffStep {
                    input: M::tick(self.last_at),
                    line,
                    outputs: vec![deviant],
                }),
            }
            let mut said = vec![Part::from("the model does not produce ")];
            said.extend(compact_parts(&value, observed.wildcards));
            said.push(instead.into());
            (FindingKind::UnexpectedOutput, Said::of(said))
        };
        self.found(line, self.last_at, kind, None, ids, message);
    }

    fn found(
        &mut self,
        line: usize,
        at: Millis,
        kind: FindingKind,
        invariant: Option<&'static str>,
        ids: Vec<String>,
        said: Said,
    ) {
        self.findings.push(Finding {
            line,
            session: self.session.clone(),
            at,
            kind,
            invariant,
            ids,
            message: said.to_string(),
            said,
            since: None,
            derived: Vec::new(),
        });
    }

    /// A hidden input is supplied: kept, if asked.
    fn supplied(&mut self, input: &M::Input) {
        if let Some(kept) = &mut self.hidden_kept {
            kept.push(value_of(input).to_string());
        }
    }

    /// How many outputs the machine produced that the trace has not shown yet, of every kind.
    pub fn pending_outputs(&self) -> usize {
        self.pending.len
    }

    /// Holding more outputs unshown than [`limits::MAX_PENDING_OUTPUTS`] is an input error at
    /// `line`, the line that made it hold them.
    pub fn held(&self, line: usize) -> Result<(), InputError> {
        let pending = self.pending_outputs();
        if pending > limits::MAX_PENDING_OUTPUTS {
            return Err(limits::too_many_pending(line, &self.session, pending));
        }
        Ok(())
    }

    /// The hidden inputs supplied, as JSON, in order (when kept; else none).
    pub fn hidden_kept(&self) -> &[String] {
        self.hidden_kept.as_deref().unwrap_or_default()
    }

    /// The effective trace as it stands: one line per step, its input and outputs as JSON, the
    /// session's name first.
    pub fn effective(&self) -> Vec<String> {
        self.steps
            .iter()
            .map(|s| {
                let outputs: Vec<Value> = s.outputs.iter().map(|o| value_of(&o.output)).collect();
                format!(
                    "{} {} {}",
                    self.session,
                    value_of(&s.input),
                    Value::Array(outputs)
                )
            })
            .collect()
    }
}

/// The observed output with its wildcard fields taken from the machine's.
fn fill<M: Conform>(observed: &M::Output, wildcards: &[&str], model: &Value) -> M::Output {
    let mut value = value_of(observed);
    if let (Value::Object(v), Value::Object(m)) = (&mut value, model) {
        for w in wildcards {
            if let Some(mv) = m.get(*w) {
                v.insert((*w).to_owned(), mv.clone());
            }
        }
    }
    serde_json::from_value(value).unwrap_or_else(|_| observed.clone())
}

/// An output as a short `kind{field=value,…}` for messages, wildcards left out, as parts of a
/// sentence: a field naming a turn or a child is typed.
pub(super) fn compact_parts(value: &Value, wildcards: &[&str]) -> Vec<Part> {
    let Value::Object(m) = value else {
        return vec![value.to_string().into()];
    };
    let kind = m.get("output").and_then(Value::as_str).unwrap_or("?");
    let mut parts = vec![Part::Text(format!("{kind}{{"))];
    let fields = m
        .iter()
        .filter(|(k, _)| *k != "output" && !wildcards.contains(&k.as_str()));
    for (i, (k, v)) in fields.enumerate() {
        if i > 0 {
            parts.push(",".into());
        }
        let noun = match k.as_str() {
            "turn" => Some(Noun::Turn),
            "child" => Some(Noun::Child),
            _ => None,
        };
        parts.push(match (noun, v) {
            (Some(noun), Value::String(s)) => Part::Field(noun, s.clone()),
            (_, Value::String(s)) => format!("{k}={s}").into(),
            (_, other) => format!("{k}={other}").into(),
        });
    }
    parts.push("}".into());
    parts
}

#[cfg(test)]
mod tests;
