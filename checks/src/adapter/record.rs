//! What an adapter's threads did and were told, in lock order, for any machine: each action an
//! input of the machine, each thing the adapter told the world an observed output of it. The
//! record is checked against the model like any trace.

use turnfence_model::Machine;

use crate::trace::conform::{Conform, Observed};
use crate::trace::{self, Event, Verdict};

/// One action of a thread and what the adapter told the world it did.
#[derive(Clone, Debug, PartialEq)]
pub struct Observation<M: Machine> {
    pub input: M::Input,
    pub told: Vec<M::Output>,
}

/// What happened, in lock order.
#[derive(Clone, Debug)]
pub struct Record<M: Machine> {
    observations: Vec<Observation<M>>,
}

impl<M: Machine> Default for Record<M> {
    fn default() -> Record<M> {
        Record {
            observations: Vec::new(),
        }
    }
}

impl<M: Conform> Record<M> {
    /// A thread acted.
    pub fn input(&mut self, input: M::Input) {
        self.observations.push(Observation {
            input,
            told: Vec::new(),
        });
    }

    /// The adapter told the world this, after the last action (outputs may be told late; the
    /// checker matches them in order). Told before any action, it follows time passing to 0.
    pub fn told(&mut self, output: M::Output) {
        if self.observations.is_empty() {
            self.input(M::tick(0));
        }
        if let Some(last) = self.observations.last_mut() {
            last.told.push(output);
        }
    }

    /// Replaces what the last action told the world (a flawed variant's own decision).
    pub fn tell_instead(&mut self, told: Vec<M::Output>) {
        if let Some(last) = self.observations.last_mut() {
            last.told = told;
        }
    }

    pub fn observations(&self) -> &[Observation<M>] {
        &self.observations
    }

    /// The record held against the model: the inputs replayed, what the adapter told held
    /// against what the model does, the invariants over what happened. Line `i` is action `i`.
    pub fn verdict(&self) -> Verdict {
        verdict::<M>(&self.observations)
    }
}

/// Observations held against the model, as [`Record::verdict`] does.
pub fn verdict<M: Conform>(observations: &[Observation<M>]) -> Verdict {
    verdict_as(observations, M::default(), &[])
}

/// Observations held against `fresh` (a machine made with the record's profile), the outputs of
/// each kind in `complete` told in full: one the model gives that the record lacks is a finding.
pub fn verdict_as<M: Conform>(
    observations: &[Observation<M>],
    fresh: M,
    complete: &[&str],
) -> Verdict {
    let mut events: Vec<(usize, Event<M>)> = Vec::new();
    for (i, o) in observations.iter().enumerate() {
        events.push((
            i + 1,
            Event::Input {
                session: "adapter".into(),
                input: o.input.clone(),
            },
        ));
        for told in &o.told {
            events.push((
                i + 1,
                Event::Output {
                    session: "adapter".into(),
                    at: M::at(&o.input),
                    observed: Observed::exact(told.clone()),
                },
            ));
        }
    }
    trace::check_events_as(events, fresh, complete)
}
