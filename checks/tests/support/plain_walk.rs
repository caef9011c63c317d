//! A plain breadth-first walk of a machine's bounded state space: every state copied afresh, no
//! scratch copies, no restores, no kept bookkeeping. The yardstick the explorer is held to (its
//! reached invariants and coverage) and the input of the peer bench's floor measurement.

use std::collections::{HashSet, VecDeque};

use turnfence_checks::explore::{self, Explore};
use turnfence_model::{Monitor, StepOf};

/// Every distinct state of machine `M` within the bounds (machine and monitor), in breadth-first
/// order from the start. Each transition taken — from a state, by an input, the steps it made, to
/// the successor's monitor — is handed to `each`, whether the successor is new or not.
pub fn all_states<M: Explore>(
    bounds: &M::Bounds,
    mut each: impl FnMut(&M, &M::Input, &[StepOf<M>], &M::Monitor),
) -> Vec<(M, M::Monitor)> {
    let mut all = Vec::new();
    walk::<M>(
        bounds,
        |machine, input, steps, _, memory| each(machine, input, steps, memory),
        |state| all.push(state),
    );
    all
}

/// Walks every distinct state of machine `M` within the bounds breadth-first from the start,
/// holding only the states still to expand. Each transition taken — from a state, by an input,
/// the steps it made, to the successor (machine and monitor) — is handed to `each`, whether the successor is new or not; each state, once
/// expanded, to `expanded`, in breadth-first order.
pub fn walk<M: Explore>(
    bounds: &M::Bounds,
    mut each: impl FnMut(&M, &M::Input, &[StepOf<M>], &M, &M::Monitor),
    mut expanded: impl FnMut((M, M::Monitor)),
) {
    let start = explore::start(&|| M::default().bounded(bounds));
    let mut seen = HashSet::new();
    seen.insert(explore::fingerprint(&start.0, &start.1));
    let mut waiting = VecDeque::from([start]);
    while let Some((machine, monitor)) = waiting.pop_front() {
        for input in machine.alphabet(bounds) {
            let Some((next, memory, steps, key)) = successor(&machine, &monitor, &input) else {
                continue;
            };
            each(&machine, &input, &steps, &next, &memory);
            if seen.insert(key) {
                waiting.push_back((next, memory));
            }
        }
        expanded((machine, monitor));
    }
}

/// A successor: the machine and monitor, the steps that made it, its fingerprint.
pub type Successor<M> = (
    M,
    <M as turnfence_model::Machine>::Monitor,
    Vec<StepOf<M>>,
    u64,
);

/// Where `input` leads from a state (machine and monitor), if the machine takes it: a fresh copy
/// stepped, its monitor told every step, both fingerprints refreshed; with the steps and the
/// successor's fingerprint.
pub fn successor<M: Explore>(
    machine: &M,
    monitor: &M::Monitor,
    input: &M::Input,
) -> Option<Successor<M>> {
    let (mut next, mut memory) = (machine.clone(), monitor.clone());
    let (steps, ok) = turnfence_checks::shared::take(&mut next, input);
    if !ok {
        return None;
    }
    for step in &steps {
        let _ = memory.observe(step);
    }
    next.refresh_fingerprint();
    memory.refresh_fingerprint();
    let key = explore::fingerprint(&next, &memory);
    Some((next, memory, steps, key))
}
