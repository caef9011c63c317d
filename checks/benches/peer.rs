//! The explorer against stateright's checker, side by side: the fence machine's `queue` CI
//! bounds, the same notion of state, on one thread each and then on every core each. Prints
//! distinct states, states/s and the ratio of the two best of five alternating runs; fails if
//! the counts disagree. On one thread it also times, alternating with both, the work the two
//! share when each transition copies its state whole (`shared_work`): what no bookkeeping of such
//! an explorer's own can go below, so the ratio it bounds is printed beside the measured one; and
//! the same work with the state restored part by part instead (`Machine::restore_from`, which
//! the explorer does and stateright's `next_state` cannot): what no explorer that takes every
//! transition of this model can go below. Alternating with them, the explorer with sleep sets
//! (`explore --reduce`): its time to the same verdict (the states and invariants reached are held
//! equal), the transitions it took, and its ratio to stateright's time. Stateright has no
//! reduction of its own that applies here: its symmetry needs a `Representative` of the state,
//! which the peer model does not have (the explorer's own symmetry is `--symmetry`, apart).
//!
//! Run: `cargo bench -p turnfence-checks --bench peer`.

/// The allocator the `turnfence` binary runs on: a benchmark measures what the command costs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::collections::HashSet;
use std::time::Instant;

use stateright::{Checker, Model};
use turnfence_checks::explore;
use turnfence_checks::explore::Explore;
use turnfence_model::fence::FenceMachine;
use turnfence_model::Monitor;

#[path = "../tests/support/peer_model.rs"]
mod peer_model;
#[path = "../tests/support/plain_walk.rs"]
mod plain_walk;

/// Runs each checker this many times, alternating, and keeps each one's best time.
const ROUNDS: usize = 5;

fn main() {
    let bounds = <FenceMachine>::ci_bounds()
        .into_iter()
        .find(|(n, _)| *n == "queue")
        .map(|(_, b)| b)
        .expect("the queue bounds");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("fence queue bounds, best of {ROUNDS} alternating runs each");
    // The input of the floor measurement, gathered untimed.
    let every = plain_walk::all_states::<FenceMachine>(&bounds, |_, _, _, _| {});
    let (mut floor_s, mut restored_s) = (f64::MAX, f64::MAX);
    for threads in [1, cores] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a thread pool");
        let (mut ours_s, mut theirs_s, mut reduced_s) = (f64::MAX, f64::MAX, f64::MAX);
        let (mut states, mut transitions) = (0, (0, 0));
        for _ in 0..ROUNDS {
            #[allow(clippy::disallowed_methods)] // Benchmarks measure wall-clock time.
            let t = Instant::now();
            let ours =
                pool.install(|| explore::exhaustive::<FenceMachine>(&FenceMachine::new, &bounds));
            ours_s = ours_s.min(t.elapsed().as_secs_f64());
            #[allow(clippy::disallowed_methods)]
            let t = Instant::now();
            let checker = peer_model::PeerModel {
                bounds: bounds.clone(),
            }
            .checker()
            .threads(threads)
            .spawn_bfs()
            .join();
            theirs_s = theirs_s.min(t.elapsed().as_secs_f64());
            #[allow(clippy::disallowed_methods)]
            let t = Instant::now();
            let reduced =
                pool.install(|| explore::reduced::<FenceMachine>(&FenceMachine::new, &bounds));
            reduced_s = reduced_s.min(t.elapsed().as_secs_f64());
            assert_eq!(
                (
                    reduced.states,
                    &reduced.reached,
                    reduced.counterexample.is_none()
                ),
                (ours.states, &ours.reached, ours.counterexample.is_none()),
                "sleep sets reached other states or another verdict"
            );
            transitions = (reduced.transitions, ours.transitions);
            if threads == 1 {
                for (copy, best) in [
                    (Copying::Whole, &mut floor_s),
                    (Copying::Restored, &mut restored_s),
                ] {
                    #[allow(clippy::disallowed_methods)]
                    let t = Instant::now();
                    let transitions = shared_work(&every, &bounds, copy);
                    *best = best.min(t.elapsed().as_secs_f64());
                    assert_eq!(
                        transitions, ours.transitions,
                        "the shared work took every transition"
                    );
                }
            }
            assert_eq!(
                checker.unique_state_count(),
                ours.states,
                "the peers disagree on the number of distinct states"
            );
            states = ours.states;
        }
        let (a, b) = (states as f64 / ours_s, states as f64 / theirs_s);
        println!("{threads} thread(s), {states} distinct states each:");
        println!("  turnfence explorer: {ours_s:.2} s, {a:.0} states/s");
        println!("  stateright checker: {theirs_s:.2} s, {b:.0} states/s");
        println!("  ratio: {:.2}x stateright's states/s", a / b);
        println!(
            "  turnfence explorer with sleep sets (--reduce): {reduced_s:.2} s to the same \
             verdict, {} of {} transitions taken: {:.2}x the explorer's time without, \
             stateright's time {:.2}x its",
            transitions.0,
            transitions.1,
            reduced_s / ours_s,
            theirs_s / reduced_s
        );
        if threads == 1 {
            println!(
                "  the work both do per transition, alone (alphabet, copy in place, step, monitor, \
                 fingerprint, look-up; no frontier, paths or coverage): {floor_s:.2} s: at most \
                 {:.2}x stateright's states/s for an explorer that copies a whole state, steps and \
                 fingerprints every transition (the explorer restores its scratch copy)",
                theirs_s / floor_s
            );
            println!(
                "  the same with the state restored part by part, as the explorer does: \
                 {restored_s:.2} s: at most {:.2}x stateright's states/s for any explorer that \
                 takes every transition of this model",
                theirs_s / restored_s
            );
        }
    }
}

/// How the shared work makes the state each input is taken from.
#[derive(Clone, Copy)]
enum Copying {
    /// A whole copy in place (`clone_from`), as stateright's `next_state` must copy a state.
    Whole,
    /// The scratch copy restored part by part (`restore_from`), as the explorer does: the least
    /// copying any explorer of this model can do.
    Restored,
}

/// The work every explorer of this model does for every transition, and nothing else: the
/// state's alphabet, a copy of the state made in place (no allocation; whole or restored), the
/// input stepped, the monitor told, the successor fingerprinted (its parts' hashes kept, as the
/// explorer keeps them) and looked up. No frontier, no paths, no coverage, no new state kept.
/// Returns the transitions taken.
fn shared_work<M: Explore>(states: &[(M, M::Monitor)], bounds: &M::Bounds, copy: Copying) -> usize {
    let mut seen: HashSet<u64, foldhash::fast::FixedState> = HashSet::default();
    let mut scratch = states[0].clone();
    let mut steps = Vec::new();
    let mut transitions = 0;
    for (machine, monitor) in states {
        for input in machine.alphabet(bounds) {
            match copy {
                Copying::Whole => {
                    scratch.0.clone_from(machine);
                    scratch.1.clone_from(monitor);
                }
                Copying::Restored => {
                    scratch.0.restore_from(machine);
                    scratch.1.restore_from(monitor);
                }
            }
            steps.clear();
            if turnfence_model::step(&mut scratch.0, &input, &mut steps).is_err() {
                continue;
            }
            for step in &steps {
                let _ = scratch.1.observe(step);
            }
            scratch.0.refresh_fingerprint();
            scratch.1.refresh_fingerprint();
            seen.insert(explore::fingerprint(&scratch.0, &scratch.1));
            transitions += 1;
        }
    }
    transitions
}
