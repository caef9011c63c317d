//! The explorer against stateright's checker, side by side: the fence machine's `queue` CI
//! bounds, the same notion of state, on one thread each and then on every core each. Prints
//! distinct states, states/s and the ratio; fails if the counts disagree.
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

fn main() {
    let bounds = <FenceMachine>::ci_bounds()
        .into_iter()
        .find(|(n, _)| *n == "queue")
        .map(|(_, b)| b)
        .expect("the queue bounds");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("fence queue bounds");
    for threads in [1, cores] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a thread pool");
        #[allow(clippy::disallowed_methods)] // Benchmarks measure wall-clock time, by definition.
        let t = Instant::now();
        let ours =
            pool.install(|| explore::exhaustive::<FenceMachine>(&FenceMachine::new, &bounds));
        let ours_s = t.elapsed().as_secs_f64();
        #[allow(clippy::disallowed_methods)]
        let t = Instant::now();
        let checker = peer_model::PeerModel {
            bounds: bounds.clone(),
        }
        .checker()
        .threads(threads)
        .spawn_bfs()
        .join();
        let theirs_s = t.elapsed().as_secs_f64();
        let theirs = checker.unique_state_count();
        assert_eq!(
            theirs, ours.states,
            "the peers disagree on the number of distinct states"
        );
        let (a, b) = (ours.states as f64 / ours_s, theirs as f64 / theirs_s);
        println!("{threads} thread(s), {} distinct states each:", ours.states);
        println!("  turnfence explorer: {ours_s:.2} s, {a:.0} states/s");
        println!("  stateright checker: {theirs_s:.2} s, {b:.0} states/s");
        println!("  ratio: {:.2}x stateright's states/s", a / b);
    }
}
