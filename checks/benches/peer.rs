//! The explorer against stateright's checker, side by side: the fence machine's `queue` CI
//! bounds, the same notion of state, on one thread each and then on every core each. Prints
//! distinct states, states/s and the ratio of the two best of five alternating runs; fails if
//! the counts disagree.
//!
//! Run: `cargo bench -p turnfence-checks --bench peer`.

/// The allocator the `turnfence` binary runs on: a benchmark measures what the command costs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::time::Instant;

use stateright::{Checker, Model};
use turnfence_checks::explore;
use turnfence_checks::explore::Explore;
use turnfence_model::fence::FenceMachine;

#[path = "../tests/support/peer_model.rs"]
mod peer_model;

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
    for threads in [1, cores] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a thread pool");
        let (mut ours_s, mut theirs_s) = (f64::MAX, f64::MAX);
        let mut states = 0;
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
    }
}
