//! What the conformance engine needs of a machine ([`Conform`]), and what a stated fact is judged
//! against: the session's effective steps so far ([`History`]).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use turnfence_model::said::Said;
use turnfence_model::turn::Profile;
use turnfence_model::{Machine, Millis, Timed};

/// An input as a canonical line holds it: its kind's fields beside its time `at`. Every
/// [`Timed`] input is one; the one pass reads the kind straight from the line.
pub trait LineInput {
    type Kind: DeserializeOwned;

    fn at(at: Millis, kind: Self::Kind) -> Self;
}

impl<K: DeserializeOwned> LineInput for Timed<K> {
    type Kind = K;

    fn at(at: Millis, kind: K) -> Timed<K> {
        Timed::new(at, kind)
    }
}

/// What the conformance engine needs of a machine beyond the [`Machine`] trait: which inputs
/// carry no fields, what an output is about, the hidden steps a log may leave out, and the
/// refusals that are evidence of a broken invariant. A machine, its inputs, outputs, monitor and
/// facts can be sent to another thread: a long trace is read on one while it is judged on another.
pub trait Conform: Machine<Input: Send, Output: Send, Monitor: Send> + Send + 'static {
    /// A fact a log states beside its events (a count, a remaining time, a position) that the
    /// machine can predict: judged where it is stated. A machine whose logs state none uses
    /// [`std::convert::Infallible`].
    type Fact: Clone + std::fmt::Debug + PartialEq + Send;

    /// The machine a session starts as, following `profile` (a trace's meta line, or
    /// `--profile`). A machine with one set of rules has the lab's only: `None` for any other.
    fn for_profile(profile: Profile) -> Option<Self> {
        profile.is_lab().then(Self::default)
    }

    /// An input's kind as the canonical reader's one pass reads it from a line's entries after
    /// its tag (the tag first as a key, as the kind's own internally tagged serde form reads it,
    /// or as the variant's name to an externally tagged form). By default the kind's own form,
    /// which buffers the object before it reads it; a machine may give a form that reads the
    /// line straight (the turn machine does, with mirrors of its enums).
    fn input_kind_from_line<'de, D: Deserializer<'de>>(
        line: D,
    ) -> Result<<Self::Input as LineInput>::Kind, D::Error>
    where
        Self::Input: LineInput,
    {
        Deserialize::deserialize(line)
    }

    /// An output as the one pass reads it, as [`Conform::input_kind_from_line`] an input's kind.
    fn output_from_line<'de, D: Deserializer<'de>>(line: D) -> Result<Self::Output, D::Error> {
        Deserialize::deserialize(line)
    }

    /// An input kind without fields (its line may carry no other keys).
    fn is_bare(input: &Self::Input) -> bool;
    /// What an output is about (a turn, a worker, a root): matching never crosses subjects.
    fn subject(output: &Self::Output) -> Option<&str>;
    fn input_subject(input: &Self::Input) -> Option<&str>;

    /// Hidden inputs that make a refused input acceptable.
    fn explain_input(&self, _: &Self::Input, _: &Self::Misuse) -> Vec<Self::Input> {
        Vec::new()
    }

    /// Hidden inputs that would make the machine produce an observed output.
    fn explain_output(&self, _: &Self::Output, _: Millis) -> Vec<Self::Input> {
        Vec::new()
    }

    /// A refusal that is evidence of a broken invariant: the invariant and why.
    fn refusal_cause(
        &self,
        _: &[&Self::Output],
        _: &Self::Misuse,
    ) -> Option<(Self::Invariant, Said)> {
        None
    }

    /// A stated fact, judged at `at` (the stating line's time) against the machine as it stands
    /// and what happened so far: `None`
    /// if it holds, else the invariant it breaks (or none: it only contradicts the model), the
    /// ids, and why.
    fn judge_fact(&self, _: &Self::Fact, _: Millis, _: &History<'_, Self>) -> Option<Judged<Self>> {
        None
    }

    /// What the machine did instead of an unexpected output, as a clause.
    fn counterpart(_: &[&Self::Output], _: &Self::Output) -> String {
        String::new()
    }

    /// When a session ends: each subject the trace leaves unfinished (neither the machine nor
    /// the trace ended it, `shown` being every output of the effective trace), and a sentence
    /// saying what it still waits for.
    fn left_open(&self, _shown: &[&Self::Output]) -> Vec<(String, Said)> {
        Vec::new()
    }
}

/// A step a stack may take that its log has no line for (the app's own call, a pause before
/// playout, a session's end), declared by its dialect with where the stack's code takes it.
/// Before conformance reports an output the machine did not give, or an input it refused, it
/// looks for a short sequence of such steps, each one the machine allows, after which the
/// machine gives that output or takes that input (`SessionCheck`'s search: bounded, in the
/// order the steps are declared). Only what no such sequence explains is a finding.
pub struct Unlogged<M: Conform> {
    /// What the stack did, in its words.
    pub what: &'static str,
    /// Where the stack's code takes the step (its file and function).
    pub source: &'static str,
    /// The step as the machine's inputs, taken at the given time on the machine as it stands:
    /// one list per way the stack may take it now (none: it cannot).
    pub inputs: fn(&M, Millis) -> Vec<Vec<M::Input>>,
}

/// A stated fact that does not hold: the invariant it breaks, if one, the ids, and why.
pub type Judged<M> = (Option<<M as Machine>::Invariant>, Vec<String>, Said);

/// What happened in a session so far, as a stated fact is judged against it: each step's input
/// and outputs, oldest first.
pub struct History<'a, M: Machine> {
    pub(super) steps: &'a [EffStep<M>],
}

impl<'a, M: Machine> History<'a, M> {
    /// Each step's input and its outputs, oldest first.
    pub fn steps(
        &self,
    ) -> impl DoubleEndedIterator<
        Item = (
            &'a M::Input,
            impl DoubleEndedIterator<Item = &'a M::Output> + 'a,
        ),
    > + 'a {
        self.steps
            .iter()
            .map(|s| (&s.input, s.outputs.iter().map(|o| &o.output)))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Seen {
    /// The machine produced it; the trace does not show it.
    Implicit,
    /// The trace shows it, as the machine produced it.
    Observed,
    /// The trace shows something else in its place, or something the machine did not produce.
    Deviant,
}

#[derive(Clone, Debug)]
pub(super) struct EffOutput<O> {
    pub(super) output: O,
    /// The line that showed it, and when (the trace's time there).
    pub(super) line: Option<(usize, Millis)>,
    pub(super) seen: Seen,
}

#[derive(Clone, Debug)]
pub(super) struct EffStep<M: Machine> {
    pub(super) input: M::Input,
    pub(super) line: usize,
    pub(super) outputs: Vec<EffOutput<M::Output>>,
}

impl<M: Machine> EffStep<M> {
    /// The line a violation found at the step's end is at: its first output the trace showed
    /// otherwise than the machine (what broke the rule), else the step's own.
    pub(super) fn end_line(&self) -> usize {
        self.outputs
            .iter()
            .find(|o| o.seen == Seen::Deviant)
            .and_then(|o| o.line)
            .map_or(self.line, |(l, _)| l)
    }
}
