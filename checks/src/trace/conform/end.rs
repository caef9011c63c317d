//! A session's end (`SessionCheck::finish`): the machine's outputs the trace never showed, of a
//! kind its log records completely or already shown its own way, gone from the effective trace;
//! each subject left unfinished; then the invariants over the effective trace.

use std::collections::HashMap;
use std::mem::Discriminant;

use serde_json::Value;
use turnfence_model::said::Said;
use turnfence_model::{Millis, Monitor, Violation};

use super::findings::attach_derived;
use super::{
    compact_parts, superseded, value_of, Conform, Finding, FindingKind, Seen, SessionCheck, Shown,
};

impl<M: Conform> SessionCheck<M> {
    /// The session is over (at `end_line`, its `session_end`, or its last line at the end of
    /// the trace): what it left unfinished, then the invariants over the effective trace.
    pub fn finish(mut self, end_line: Option<usize>) -> Vec<Finding> {
        self.drop_missing();
        self.drop_superseded();
        if !self.partial {
            self.left_open(end_line.unwrap_or(self.last_line));
        }
        // Each violation at the line of what broke the rule: an output's own line (and time) when
        // it is an output that broke it, else the step's (its first deviant output's, else its
        // input's).
        let mut monitor = self.monitor.clone();
        type Placed<V> = (usize, Option<Millis>, Violation<V>);
        let mut judged: Vec<Placed<M::Invariant>> = Vec::new();
        let mut last = 0;
        for step in &self.steps {
            let step_line = step.end_line();
            last = step_line;
            monitor.input(&step.input);
            let found = monitor.take_violations();
            judged.extend(found.into_iter().map(|v| (step.line, None, v)));
            for o in &step.outputs {
                monitor.output(&o.output);
                let (line, at) = o.line.map_or((step.line, None), |(l, at)| (l, Some(at)));
                let found = monitor.take_violations();
                judged.extend(found.into_iter().map(|v| (line, at, v)));
            }
            monitor.end_step();
            let found = monitor.take_violations();
            judged.extend(found.into_iter().map(|v| (step_line, None, v)));
        }
        monitor.finish();
        judged.extend(
            monitor
                .take_violations()
                .into_iter()
                .map(|v| (last, None, v)),
        );
        let since_line = |step: usize| self.steps.get(step).map(|s| s.line);
        let judged: Vec<Finding> = judged
            .into_iter()
            .map(|(line, at, v)| Finding {
                line,
                session: self.session.clone(),
                at: at.unwrap_or(v.at),
                kind: FindingKind::Invariant,
                invariant: Some(v.name()),
                since: v.since.and_then(since_line).filter(|s| *s < line),
                ids: v.ids,
                message: v.message.to_string(),
                said: v.message,
                derived: Vec::new(),
            })
            .collect();
        self.findings = attach_derived(std::mem::take(&mut self.findings), judged);
        self.findings
    }

    /// Every subject the session leaves unfinished: a finding at its end.
    fn left_open(&mut self, line: usize) {
        let shown = self.all_outputs();
        let open = self.machine.left_open(&shown);
        for (subject, waits) in open {
            let mut message = waits;
            message.prefix("the session ended with ");
            self.found(
                line,
                self.last_at,
                FindingKind::LeftOpen,
                None,
                vec![subject],
                message,
            );
        }
    }

    /// Outputs of a kind the log records completely that the trace never showed: findings, and
    /// gone from the effective trace (the system did not do them).
    fn drop_missing(&mut self) {
        if self.complete.is_empty() {
            return;
        }
        let mut missing = Vec::new();
        // Whether each kind of output is one the log records completely: its name found once
        // per kind (a variant), not by writing out every output.
        let mut complete_kind: HashMap<Discriminant<M::Output>, bool> = HashMap::new();
        for step in &mut self.steps {
            let (line, at) = (step.line, M::at(&step.input));
            let complete = &self.complete;
            step.outputs.retain(|o| {
                if o.seen != Seen::Implicit {
                    return true;
                }
                let gone = *complete_kind
                    .entry(std::mem::discriminant(&o.output))
                    .or_insert_with(|| {
                        let value = value_of(&o.output);
                        let kind = value.get("output").and_then(Value::as_str);
                        complete.iter().any(|c| Some(c.as_str()) == kind)
                    });
                if gone {
                    let value = value_of(&o.output);
                    let subject = M::subject(&o.output).map(str::to_owned);
                    missing.push((line, at, subject, compact_parts(&value, &[])));
                }
                !gone
            });
        }
        for (line, at, subject, what) in missing {
            let mut message = Said::of(what);
            message.prefix("the model gives ");
            message.push(" here; the trace, complete for its kind, never shows it");
            self.found(
                line,
                at,
                FindingKind::MissingOutput,
                None,
                subject.into_iter().collect(),
                message,
            );
        }
    }

    /// A machine output the trace did not show, of which the trace showed its own version
    /// earlier (a terminal state claimed too soon, say), did not happen a second time: the system
    /// already did it its way.
    fn drop_superseded(&mut self) {
        let mut shown: HashMap<Discriminant<M::Output>, Vec<Shown>> = HashMap::new();
        for step in &mut self.steps {
            step.outputs.retain(|o| {
                let key = std::mem::discriminant(&o.output);
                if o.seen == Seen::Deviant {
                    let subject = M::subject(&o.output).map(str::to_owned);
                    shown
                        .entry(key)
                        .or_default()
                        .push((subject, value_of(&o.output)));
                    return true;
                }
                if o.seen != Seen::Implicit {
                    return true;
                }
                let Some(earlier) = shown.get(&key) else {
                    return true;
                };
                !superseded::<M>(earlier, &o.output)
            });
        }
    }
}
