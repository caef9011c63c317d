//! How much a partial-order reduction could leave out: for bound sets of both machines, every
//! state is walked and every pair of inputs it takes is taken in both orders. Two inputs commute
//! at a state when each is still offered after the other and both orders reach the same state
//! (machine and monitor: the same fingerprint). A sleep set leaves out a transition (state, b)
//! only where the state was reached by some input a from a state where a and b commute — b's
//! successor is then reached the other way round — so the transitions some arrival could put to
//! sleep are an upper bound on what any sleep-set reduction saves, whatever its order and however
//! it meets a state it has seen (docs/BENCHMARKS.md). No timing: counts only, the same on every
//! run.
//!
//! Run: `cargo bench -p turnfence-checks --bench commuting`.

use std::collections::HashSet;

use turnfence_checks::explore::{self, Explore};
use turnfence_model::fence::FenceMachine;
use turnfence_model::turn::TurnMachine;

#[path = "../tests/support/plain_walk.rs"]
mod plain_walk;

fn main() {
    println!("inputs that commute, and the transitions a sleep set could leave out at most");
    survey::<TurnMachine>(&["children", "livekit"]);
    survey::<FenceMachine>(&["transport", "queue"]);
}

/// Where `second` leads after `first`'s successor, if it is still offered there and taken.
fn then<M: Explore>(
    (machine, monitor, _, _): &plain_walk::Successor<M>,
    second: &M::Input,
    bounds: &M::Bounds,
) -> Option<u64> {
    if !machine.alphabet(bounds).contains(second) {
        return None;
    }
    plain_walk::successor(machine, monitor, second).map(|(_, _, _, key)| key)
}

/// A transition named by the state it is taken from and its input (the input by a hash of its
/// text: inputs carry no `Hash`).
fn transition<I: std::fmt::Debug>(from: u64, input: &I) -> (u64, u64) {
    let mut h = explore::hasher();
    std::hash::Hash::hash(&format!("{input:?}"), &mut h);
    (from, std::hash::Hasher::finish(&h))
}

fn survey<M: Explore>(named: &[&str]) {
    for (set, bounds) in M::ci_bounds() {
        if !named.contains(&set) {
            continue;
        }
        let all = plain_walk::all_states::<M>(&bounds, |_, _, _, _| {});
        let (mut transitions, mut self_loops, mut pairs, mut commuting) = (0, 0, 0, 0);
        let mut may_sleep = HashSet::new();
        for state in &all {
            let here = explore::fingerprint(&state.0, &state.1);
            let inputs = state.0.alphabet(&bounds);
            let next: Vec<_> = inputs
                .iter()
                .map(|input| plain_walk::successor(&state.0, &state.1, input))
                .collect();
            for (x, a) in next.iter().enumerate() {
                let Some(a) = a else { continue };
                transitions += 1;
                self_loops += usize::from(a.3 == here);
                for (y, b) in next.iter().enumerate().skip(x + 1) {
                    let Some(b) = b else { continue };
                    pairs += 1;
                    let (ia, ib) = (&inputs[x], &inputs[y]);
                    let (ab, ba) = (then(a, ib, &bounds), then(b, ia, &bounds));
                    if ab.is_some() && ab == ba {
                        commuting += 1;
                        may_sleep.insert(transition(a.3, ib));
                        may_sleep.insert(transition(b.3, ia));
                    }
                }
            }
        }
        let share = |n: usize, of: usize| 100.0 * n as f64 / of as f64;
        println!(
            "{set}: {} states, {transitions} transitions ({self_loops} back to their state); \
             {commuting} of {pairs} pairs of inputs taken from one state commute ({:.1}%); \
             at most {} transitions ({:.1}%) could be left asleep",
            all.len(),
            share(commuting, pairs),
            may_sleep.len(),
            share(may_sleep.len(), transitions)
        );
    }
}
