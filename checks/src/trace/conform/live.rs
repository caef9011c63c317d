//! A session judged as its lines come (`check --follow`, [`crate::live::Monitor`]): the
//! invariants run over the effective trace as far as it is settled, so a finding is given at the
//! line that decides it, not at the session's end.
//!
//! The monitor that judges a session at its end ([`SessionCheck::finish`]) walks the effective
//! trace step by step: a step's input, each of its outputs, then the step's end. Here the same
//! walk is made as the trace grows, and stops where what comes next may still change:
//!
//! - a step's input and each output already in it are judged as soon as they are there: an output
//!   the trace shows later is added after them (at the end of the last step, or as a step of its
//!   own), never before;
//! - a step's end is judged once the step is closed: a later step follows it, or the session's
//!   clock has passed its time (an output shown at a later time is a step of its own);
//! - a conformance finding (an output the model does not produce, a refused input) is given once
//!   every step whose invariants could fold it under theirs (at its line or before) is judged.
//!
//! Two things the end changes are out of the walk's sight: an output of the machine the trace
//! contradicts later (replaced in place — the walk starts again, giving nothing twice), and what
//! the end drops (outputs a complete log never showed, ones superseded by the trace's own) or adds
//! (what was left open, the invariants judged at the end). [`SessionCheck::finish`] stays the
//! verdict; the live monitor gives at the end what the walk did not, and withdraws, saying so, what
//! the walk gave that the end does not hold.

use std::collections::HashMap;
use std::mem::Discriminant;

use serde_json::Value;
use turnfence_model::{Millis, Monitor};

use super::findings::attach_derived;
use super::{
    superseded, value_of, Conform, EffOutput, EffStep, Finding, FindingKind, Seen, SessionCheck,
    Shown,
};

/// How far the walk has gone.
pub(in crate::trace) struct Walk<M: Conform> {
    monitor: M::Monitor,
    /// The step being judged, whether its input is judged, and how many of its outputs.
    step: usize,
    entered: bool,
    outputs: usize,
    /// Invariant findings found at an output the trace has not shown yet (its place: step and
    /// index; the finding's `since` not yet held to its line), given once it is shown, at its
    /// line.
    found: Vec<(Finding, Option<(usize, usize)>)>,
    /// What was given, so that a walk started again gives nothing twice.
    pub(in crate::trace) given: Vec<Finding>,
    /// The conformance findings ([`SessionCheck`]'s) already given or folded.
    conformance: usize,
    /// An output already judged was replaced: the walk starts again.
    pub(in crate::trace) stale: bool,
    /// Whether each kind of output is one the log records completely (found once per kind).
    complete: HashMap<Discriminant<M::Output>, bool>,
    /// The trace's own outputs the walk passed, by kind: its subject and value.
    shown: HashMap<Discriminant<M::Output>, Vec<Shown>>,
}

impl<M: Conform> Walk<M> {
    pub(in crate::trace) fn new(monitor: M::Monitor) -> Walk<M> {
        Walk {
            monitor,
            step: 0,
            entered: false,
            outputs: 0,
            found: Vec::new(),
            given: Vec::new(),
            conformance: 0,
            stale: false,
            complete: HashMap::new(),
            shown: HashMap::new(),
        }
    }

    /// Whether the output at `place` (step, index) was judged already.
    pub(in crate::trace) fn judged(&self, place: (usize, usize)) -> bool {
        place.0 < self.step || place.0 == self.step && place.1 < self.outputs
    }
}

impl<M: Conform> SessionCheck<M> {
    /// What the walk gave so far (none: the session is not judged as it comes).
    pub fn given(&self) -> &[Finding] {
        self.walk.as_ref().map_or(&[], |w| &w.given)
    }

    /// The findings decided since the last call: the invariants judged over the effective trace as
    /// far as it is settled, and the conformance findings none of them could still explain. Each
    /// is given once. A finding `keep` refuses is not given (a rule the log left not judged).
    pub fn decided(&mut self, keep: impl Fn(&Finding) -> bool) -> Vec<Finding> {
        let Some(mut walk) = self.walk.take() else {
            return Vec::new();
        };
        if walk.stale {
            let given = std::mem::take(&mut walk.given);
            walk = Walk::new(self.monitor.clone());
            walk.given = given;
        }
        self.walk_on(&mut walk);
        // A finding at an output the trace has not shown yet waits for its line; the rest stand.
        let mut now = Vec::new();
        for (mut f, place) in std::mem::take(&mut walk.found) {
            match place.map(|(s, o)| &self.steps[s].outputs[o]) {
                Some(o) if o.seen == Seen::Implicit => walk.found.push((f, place)),
                Some(o) => {
                    if let Some((line, at)) = o.line {
                        placed(&mut f, line, at);
                    }
                    now.push(f);
                }
                None => now.push(f),
            }
        }
        // Every invariant finding at a line before `horizon` is known: the step not closed yet,
        // and every later one, judge at their own lines or later.
        let horizon = self
            .steps
            .get(walk.step)
            .map_or(self.last_line + 1, |s| s.line);
        let waiting = walk.found.iter().map(|(f, _)| f.line).min();
        let horizon = waiting.map_or(horizon, |w| w.min(horizon));
        let known = &self.findings[walk.conformance..];
        let ready = known.iter().take_while(|f| f.line < horizon).count();
        let conformance: Vec<Finding> = known[..ready].to_vec();
        walk.conformance += ready;
        if now.is_empty() && conformance.is_empty() {
            // Most lines decide nothing: nothing to fold, nothing to give.
            self.walk = Some(walk);
            return Vec::new();
        }
        let mut earlier = walk.given.clone();
        earlier.extend(now);
        let mut out = Vec::new();
        for f in attach_derived(conformance, earlier) {
            if keep(&f) && !walk.given.iter().any(|g| same(g, &f)) {
                walk.given.push(f.clone());
                out.push(f);
            }
        }
        self.walk = Some(walk);
        out
    }

    /// The walk taken as far as the effective trace is settled; what it finds pushed onto `found`.
    fn walk_on(&self, walk: &mut Walk<M>) {
        let closed_before = |step: &EffStep<M>, index: usize| {
            index + 1 < self.steps.len() || M::at(&step.input) < self.last_at
        };
        while let Some(step) = self.steps.get(walk.step) {
            if !walk.entered {
                walk.entered = true;
                walk.monitor.input(&step.input);
                self.violations(walk, step.line, None, None);
            }
            while let Some(o) = step.outputs.get(walk.outputs) {
                if !self.settled(walk, o) {
                    return;
                }
                let place = (o.seen == Seen::Implicit).then_some((walk.step, walk.outputs));
                walk.outputs += 1;
                walk.monitor.output(&o.output);
                let (line, at) = o.line.map_or((step.line, None), |(l, at)| (l, Some(at)));
                self.violations(walk, line, at, place);
            }
            if !closed_before(step, walk.step) {
                return;
            }
            walk.monitor.end_step();
            self.violations(walk, step.end_line(), None, None);
            walk.step += 1;
            walk.entered = false;
            walk.outputs = 0;
        }
    }

    /// Whether the end keeps `o` as it is now. The trace's own outputs and those it showed stay.
    /// One of the machine's it has not shown stays unless it is of a kind the log records
    /// completely (the end drops it, missing) or the trace showed its own version earlier (the end
    /// drops it, superseded): until the trace shows it, the walk waits there.
    fn settled(&self, walk: &mut Walk<M>, o: &EffOutput<M::Output>) -> bool {
        let key = std::mem::discriminant(&o.output);
        match o.seen {
            Seen::Observed => true,
            Seen::Deviant => {
                let subject = M::subject(&o.output).map(str::to_owned);
                let shown = walk.shown.entry(key).or_default();
                shown.push((subject, value_of(&o.output)));
                true
            }
            Seen::Implicit => {
                let complete = &self.complete;
                let missing = !complete.is_empty()
                    && *walk.complete.entry(key).or_insert_with(|| {
                        let value = value_of(&o.output);
                        let kind = value.get("output").and_then(Value::as_str);
                        complete.iter().any(|c| Some(c.as_str()) == kind)
                    });
                let superseded = walk
                    .shown
                    .get(&key)
                    .is_some_and(|earlier| superseded::<M>(earlier, &o.output));
                !missing && !superseded
            }
        }
    }

    /// The monitor's new violations as findings at `line` (and `at`, else the violation's own),
    /// at the output at `place` if it is one the trace has not shown yet.
    fn violations(
        &self,
        walk: &mut Walk<M>,
        line: usize,
        at: Option<Millis>,
        place: Option<(usize, usize)>,
    ) {
        for v in walk.monitor.take_violations() {
            let at = at.unwrap_or(v.at);
            let mut f = Finding {
                line,
                session: self.session.clone(),
                at,
                kind: FindingKind::Invariant,
                invariant: Some(v.name()),
                since: v.since.and_then(|s| self.steps.get(s)).map(|s| s.line),
                ids: v.ids,
                message: v.message.to_string(),
                said: v.message,
                derived: Vec::new(),
            };
            if place.is_none() {
                placed(&mut f, line, at);
            }
            if !walk.given.iter().any(|g| same(g, &f)) {
                walk.found.push((f, place));
            }
        }
    }
}

/// `f` at `line` and `at`: the line that broke the rule, and its time; the earlier line its story
/// starts at kept only if it is earlier (as the end places a violation).
fn placed(f: &mut Finding, line: usize, at: Millis) {
    f.since = f.since.filter(|s| *s < line);
    (f.line, f.at) = (line, at);
}

/// The same finding, whatever has been folded under it since.
pub(crate) fn same(a: &Finding, b: &Finding) -> bool {
    a.line == b.line
        && a.session == b.session
        && a.at == b.at
        && a.kind == b.kind
        && a.invariant == b.invariant
        && a.ids == b.ids
        && a.message == b.message
        && a.since == b.since
}

#[cfg(test)]
mod tests {
    use super::Walk;
    use turnfence_model::turn::TurnMachine;
    use turnfence_model::Machine;

    /// The walk has judged exactly the steps before its own and, of its own, the outputs it has
    /// counted: a replaced output there makes it start again, one past it does not.
    #[test]
    fn the_walk_has_judged_what_lies_before_it_and_nothing_after() {
        let machine: TurnMachine = Default::default();
        let mut walk = Walk::<TurnMachine>::new(machine.monitor());
        assert!(!walk.judged((0, 0)));
        (walk.step, walk.outputs) = (2, 1);
        for judged in [(0, 5), (1, 0), (2, 0)] {
            assert!(walk.judged(judged), "{judged:?}");
        }
        for ahead in [(2, 1), (2, 2), (3, 0)] {
            assert!(!walk.judged(ahead), "{ahead:?}");
        }
    }
}
