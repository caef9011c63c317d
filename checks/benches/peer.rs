//! The explorer against stateright's checker, side by side: the fence machine's `queue` CI
//! bounds, one thread each, the same notion of state. Prints distinct states, states/s and the
//! ratio; fails if the counts disagree.
//!
//! Run: `cargo bench -p turnfence-checks --bench peer`.

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
    #[allow(clippy::disallowed_methods)] // Benchmarks measure wall-clock time, by definition.
    let t = Instant::now();
    let ours = explore::exhaustive::<FenceMachine>(&FenceMachine::new, &bounds);
    let ours_s = t.elapsed().as_secs_f64();
    #[allow(clippy::disallowed_methods)]
    let t = Instant::now();
    let checker = peer_model::PeerModel { bounds }
        .checker()
        .threads(1)
        .spawn_bfs()
        .join();
    let theirs_s = t.elapsed().as_secs_f64();
    let theirs = checker.unique_state_count();
    assert_eq!(
        theirs, ours.states,
        "the peers disagree on the number of distinct states"
    );
    let (a, b) = (ours.states as f64 / ours_s, theirs as f64 / theirs_s);
    println!("fence queue bounds: {} distinct states", ours.states);
    println!("turnfence explorer: {ours_s:.2} s, {a:.0} states/s (one thread)");
    println!("stateright checker: {theirs_s:.2} s, {b:.0} states/s (one thread)");
    println!("ratio: {:.2}× stateright's states/s", a / b);
}
