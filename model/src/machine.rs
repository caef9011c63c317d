//! The one interface every machine implements and every checker drives.
//!
//! A [`Machine`] is sans-IO, in the shape quinn-proto and str0m give their protocol state: it is
//! [`handle`](Machine::handle)d inputs (each carrying its virtual time), hands back what it did
//! through [`poll_output`](Machine::poll_output), and says through
//! [`poll_timeout`](Machine::poll_timeout) when something next happens without an input. Its
//! [`Monitor`] judges the named [`Invariant`]s over what happened — inputs and the outputs each
//! one caused, as [`Step`]s — and reports a broken one as a [`Violation`]. Conformance checking,
//! random runs, exhaustive exploration and the concurrency adapters all drive this trait and
//! nothing else of a machine (stateright's single `Model` is the example), so a new machine is
//! written once and checked every way.

use std::collections::BTreeSet;
use std::fmt::{Debug, Display};
use std::hash::{Hash, Hasher};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::said::Said;
use crate::Millis;

/// One thing that happens to a machine: its kind of input, at virtual time `at` (one JSON object,
/// the kind's fields beside `at`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Timed<K> {
    pub at: Millis,
    #[serde(flatten)]
    pub kind: K,
}

impl<K> Timed<K> {
    pub fn new(at: Millis, kind: K) -> Timed<K> {
        Timed { at, kind }
    }
}

/// A machine's kinds of input, time passing among them.
pub trait TickKind: PartialEq {
    /// Time passing, and nothing else.
    const TICK: Self;
}

/// An input at its time: what a machine needs to know of its inputs to record time passing.
pub trait Timing {
    fn at(&self) -> Millis;
    /// Time passing to `at`, as an input.
    fn tick(at: Millis) -> Self;
    /// Whether the input is only time passing.
    fn is_tick(&self) -> bool;
}

impl<K: TickKind> Timing for Timed<K> {
    fn at(&self) -> Millis {
        self.at
    }

    fn tick(at: Millis) -> Timed<K> {
        Timed::new(at, K::TICK)
    }

    fn is_tick(&self) -> bool {
        self.kind == K::TICK
    }
}

/// A pure state machine: inputs in, outputs out, time as data.
pub trait Machine: Clone + Debug + Default {
    /// One thing that happens to the system, at a virtual time.
    type Input: Clone + Debug + PartialEq + Serialize + DeserializeOwned + Timing;
    /// One thing the system does.
    type Output: Clone + Debug + PartialEq + Serialize + DeserializeOwned;
    /// A caller's mistake: the input is refused, nothing changes but the clock.
    type Misuse: Clone + Debug + Display + PartialEq;
    /// The machine's named invariants.
    type Invariant: Invariant;
    /// The monitor that judges them over what happened.
    type Monitor: Monitor<Input = Self::Input, Output = Self::Output, Invariant = Self::Invariant>;

    /// What the machine is called (`turn`, `fence`): in reports and on the command line.
    const NAME: &'static str;

    /// When an input happens.
    fn at(input: &Self::Input) -> Millis {
        input.at()
    }

    /// Time passing to `at`, as an input.
    fn tick(at: Millis) -> Self::Input {
        Self::Input::tick(at)
    }

    /// Whether an input is only time passing.
    fn is_tick(input: &Self::Input) -> bool {
        input.is_tick()
    }

    /// Moves virtual time to `at`; what falls due by then happens. [`handle`](Machine::handle)
    /// does this first; a recorder that wants what time passing caused as a step of its own
    /// calls it before.
    fn advance_to(&mut self, at: Millis) -> Result<(), Self::Misuse>;

    /// Takes one input. On `Err` it was the caller's mistake: time moved to its `at` (what fell
    /// due by then happened — time passing is nobody's mistake), nothing else changed.
    fn handle(&mut self, input: &Self::Input) -> Result<(), Self::Misuse>;

    /// The next thing the system did, oldest first.
    #[must_use]
    fn poll_output(&mut self) -> Option<Self::Output>;

    /// The next instant at which something happens (or may be judged) without an input: a
    /// deadline, a wait's end. `None` when nothing is due.
    fn poll_timeout(&self) -> Option<Millis>;

    /// Hashes the machine's state (not its unread outputs): with the monitor's
    /// [`fingerprint`](Monitor::fingerprint), one state for an explorer.
    fn fingerprint<H: Hasher>(&self, h: &mut H);

    /// Keeps the hashes of the state's [`Hashed`](crate::Hashed) parts, hashing only the ones
    /// changed since they were last kept: an explorer calls it on a state before fingerprinting
    /// it, so that a step that left most parts alone costs the hashing of the few it touched. It
    /// changes no fingerprint (a part not kept is hashed on the spot, to the same value). A
    /// machine whose state keeps no hashes has nothing to do (the default).
    fn refresh_fingerprint(&mut self) {}

    /// Makes `self` `source` again, as `clone_from` does, for a scratch copy that takes input
    /// after input: a state's [`Hashed`](crate::Hashed) parts share `source`'s values, and each
    /// keeps the value it replaces, if it was its own, for the next step that changes the part to
    /// copy into (no allocation). An explorer takes every input of every state from one scratch
    /// copy, restored before each. A copy kept (a state in a frontier) is made by `clone_from`,
    /// which keeps no such values. By default `clone_from`.
    fn restore_from(&mut self, source: &Self) {
        self.clone_from(source);
    }

    /// A fresh monitor for this machine's runs: it judges by the rules the machine was made with
    /// (a turn machine's profile). A machine with one set of rules has the default monitor.
    fn monitor(&self) -> Self::Monitor {
        Self::Monitor::default()
    }
}

/// A named invariant: an `always` property with its paired `sometimes` ([`reached`](Invariant::reached)).
pub trait Invariant:
    Copy + Debug + Eq + Ord + Hash + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// Every invariant of the machine, in a fixed order.
    const ALL: &'static [Self];

    /// The invariant's fixed name (`one_terminal_state`, `ack_identity`, …).
    fn name(self) -> &'static str;

    /// What a run must show for this invariant to have been put to the test.
    fn reached(self) -> &'static str;

    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|i| i.name() == name)
    }
}

/// One input and the outputs it caused, as recorded from a machine or read from a trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(bound(
    serialize = "I: Serialize, O: Serialize",
    deserialize = "I: DeserializeOwned, O: DeserializeOwned"
))]
pub struct Step<I, O> {
    pub input: I,
    pub outputs: Vec<O>,
}

/// A step of machine `M`.
pub type StepOf<M> = Step<<M as Machine>::Input, <M as Machine>::Output>;

/// A broken invariant: which, when, about what, and why, in one sentence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(bound(serialize = "V: Serialize", deserialize = "V: DeserializeOwned"))]
pub struct Violation<V> {
    pub invariant: V,
    /// The index of the step that broke it (0-based), or the number of steps at `finish`.
    pub step: usize,
    pub at: Millis,
    /// The ids involved, as the case needs (turn, child, seq, token, req, …).
    pub ids: Vec<String>,
    /// Why, its subjects typed: said in the model's words, or in a stack's.
    pub message: Said,
    /// The earlier step the story starts at, where one does (the stop a late delivery came
    /// after, the first of two terminal states, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<usize>,
}

impl<V: Invariant> Violation<V> {
    /// The invariant's name.
    pub fn name(&self) -> &'static str {
        self.invariant.name()
    }
}

/// What a monitor found and saw put to the test — the part every monitor shares, apart from
/// what it remembers of the run: the violations, the invariants reached, the step count, and
/// the one invariant it reports when it reports one only.
#[derive(Debug)]
pub struct Findings<V> {
    only: Option<V>,
    step: usize,
    violations: Vec<Violation<V>>,
    reached: BTreeSet<V>,
}

/// A clone in place keeps the violations' buffer, and the invariants reached where they are the
/// same already (a B-tree's clone allocates; state to state, they mostly are).
impl<V: Clone + Ord> Clone for Findings<V> {
    fn clone(&self) -> Findings<V> {
        Findings {
            only: self.only.clone(),
            step: self.step,
            violations: self.violations.clone(),
            reached: self.reached.clone(),
        }
    }

    fn clone_from(&mut self, source: &Findings<V>) {
        self.only.clone_from(&source.only);
        self.step = source.step;
        self.violations.clone_from(&source.violations);
        if self.reached != source.reached {
            self.reached.clone_from(&source.reached);
        }
    }
}

impl<V> Default for Findings<V> {
    fn default() -> Findings<V> {
        Findings {
            only: None,
            step: 0,
            violations: Vec::new(),
            reached: BTreeSet::new(),
        }
    }
}

impl<V: Invariant> Findings<V> {
    /// Findings that keep one invariant's violations only.
    pub fn only(invariant: V) -> Findings<V> {
        Findings {
            only: Some(invariant),
            ..Findings::default()
        }
    }

    /// The invariant is broken at `at` by the current step, about `ids`, for the reason given.
    pub fn violate(&mut self, invariant: V, at: Millis, ids: &[&str], message: impl Into<Said>) {
        self.violate_since(invariant, at, ids, message, None);
    }

    /// [`violate`](Findings::violate), with the earlier step the story starts at.
    pub fn violate_since(
        &mut self,
        invariant: V,
        at: Millis,
        ids: &[&str],
        message: impl Into<Said>,
        since: Option<usize>,
    ) {
        if self.only.is_some_and(|o| o != invariant) {
            return;
        }
        self.violations.push(Violation {
            invariant,
            step: self.step,
            at,
            ids: ids.iter().map(|s| (*s).to_owned()).collect(),
            message: message.into(),
            since,
        });
    }

    /// The one invariant these findings keep, if they keep one only.
    pub fn kept_only(&self) -> Option<V> {
        self.only
    }

    /// The invariant was put to the test (its `sometimes`).
    pub fn reach(&mut self, invariant: V) {
        self.reached.insert(invariant);
    }

    /// The current step is over.
    pub fn end_step(&mut self) {
        self.step += 1;
    }

    /// The current step's index (0-based).
    pub fn step(&self) -> usize {
        self.step
    }
}

/// The invariants of a machine as a monitor over what happened. It never looks inside a
/// machine — it knows the machine's alphabet, not the machine — so it judges the model, a
/// flawed model and a real system's trace alike.
///
/// Feed it [`input`](Monitor::input), then that input's outputs, then
/// [`end_step`](Monitor::end_step); call [`finish`](Monitor::finish) when the run is over.
pub trait Monitor: Clone + Debug + Default {
    /// The inputs it judges (the machine's [`Machine::Input`]).
    type Input;
    /// The outputs it judges (the machine's [`Machine::Output`]).
    type Output;
    /// The invariants it judges (the machine's [`Machine::Invariant`]).
    type Invariant: Invariant;

    /// What it found so far.
    fn findings(&self) -> &Findings<Self::Invariant>;

    fn findings_mut(&mut self) -> &mut Findings<Self::Invariant>;

    /// A monitor that reports one invariant only.
    fn only(invariant: Self::Invariant) -> Self {
        let mut monitor = Self::default();
        *monitor.findings_mut() = Findings::only(invariant);
        monitor
    }

    /// An input happened.
    fn input(&mut self, input: &Self::Input);

    /// The current input caused this output.
    fn output(&mut self, output: &Self::Output);

    /// The current input's outputs are all in.
    fn end_step(&mut self);

    /// The run is over: report what is still standing.
    fn finish(&mut self) {}

    /// Takes the violations found so far.
    fn take_violations(&mut self) -> Vec<Violation<Self::Invariant>> {
        std::mem::take(&mut self.findings_mut().violations)
    }

    /// The invariants the run put to the test so far (their `sometimes`).
    fn reached(&self) -> &BTreeSet<Self::Invariant> {
        &self.findings().reached
    }

    /// Hashes what the monitor remembers that can decide a future verdict — not its step count,
    /// its findings or its reachability. Call between steps.
    fn fingerprint<H: Hasher>(&self, h: &mut H);

    /// Keeps the hashes of the memory's [`Hashed`](crate::Hashed) parts, as
    /// [`Machine::refresh_fingerprint`] does the state's. Changes no fingerprint; nothing to do
    /// by default.
    fn refresh_fingerprint(&mut self) {}

    /// Makes `self` `source` again, for a scratch copy that observes step after step, as
    /// [`Machine::restore_from`] does a machine. By default
    /// `clone_from`.
    fn restore_from(&mut self, source: &Self) {
        self.clone_from(source);
    }

    /// Observes one whole step; returns what it found broken.
    fn observe(
        &mut self,
        step: &Step<Self::Input, Self::Output>,
    ) -> Vec<Violation<Self::Invariant>> {
        self.observe_parts(&step.input, &step.outputs)
    }

    /// [`observe`](Monitor::observe), for an input and outputs held apart.
    fn observe_parts<'a>(
        &mut self,
        input: &Self::Input,
        outputs: impl IntoIterator<Item = &'a Self::Output>,
    ) -> Vec<Violation<Self::Invariant>>
    where
        Self::Output: 'a,
    {
        self.input(input);
        for output in outputs {
            self.output(output);
        }
        self.end_step();
        self.take_violations()
    }

    /// Runs the monitor over a whole recorded run.
    fn check(
        mut self,
        steps: &[Step<Self::Input, Self::Output>],
    ) -> Vec<Violation<Self::Invariant>> {
        let mut found = Vec::new();
        for step in steps {
            found.extend(self.observe(step));
        }
        self.finish();
        found.extend(self.take_violations());
        found
    }
}

/// Every invariant of a machine over a recorded run.
pub fn check_all<M: Machine>(steps: &[StepOf<M>]) -> Vec<Violation<M::Invariant>> {
    M::default().monitor().check(steps)
}

/// The invariants a recorded run put to the test (without `finish`).
pub fn reached<M: Machine>(steps: &[StepOf<M>]) -> BTreeSet<M::Invariant> {
    let mut monitor = M::default().monitor();
    for step in steps {
        monitor.observe(step);
    }
    monitor.reached().clone()
}

/// Drains a machine's outputs.
pub fn drain<M: Machine>(machine: &mut M) -> Vec<M::Output> {
    std::iter::from_fn(|| machine.poll_output()).collect()
}

/// Takes one input, appending its step. What time passing caused (deadlines firing, waits
/// running out) is recorded as a tick step of its own before the input, so every step's outputs
/// are caused by its input alone. On a misuse nothing is appended but that tick step.
pub fn step<M: Machine>(
    machine: &mut M,
    input: &M::Input,
    steps: &mut Vec<StepOf<M>>,
) -> Result<(), M::Misuse> {
    machine.advance_to(M::at(input))?;
    let ticked = drain(machine);
    // A tick is time passing: what it caused is its own step, not a step before it.
    let mut caused = Vec::new();
    if M::is_tick(input) {
        caused = ticked;
    } else if !ticked.is_empty() {
        steps.push(Step {
            input: M::tick(M::at(input)),
            outputs: ticked,
        });
    }
    machine.handle(input)?;
    caused.extend(drain(machine));
    steps.push(Step {
        input: input.clone(),
        outputs: caused,
    });
    Ok(())
}

/// What [`run`] recorded: the steps, and the index of the refused input with its error if one
/// was refused.
pub type Ran<M> = (Vec<StepOf<M>>, Option<(usize, <M as Machine>::Misuse)>);

/// Runs inputs through a machine, recording each step. Stops at the first misuse, returning the
/// steps so far and the index of the refused input with its error.
pub fn run<M: Machine>(machine: &mut M, inputs: &[M::Input]) -> Ran<M> {
    let mut steps = Vec::with_capacity(inputs.len());
    for (i, input) in inputs.iter().enumerate() {
        if let Err(misuse) = step(machine, input, &mut steps) {
            return (steps, Some((i, misuse)));
        }
    }
    (steps, None)
}
