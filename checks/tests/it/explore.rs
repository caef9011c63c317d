//! Exhaustive exploration at the CI bounds (run in release by `ci/explore.sh`: about half a
//! minute; in a debug build it would take several): every state reachable within the bounds is
//! visited, no invariant breaks, coverage holds, and the state space is pinned.

use std::collections::BTreeSet;
use std::fmt::Write;

use turnfence_checks::explore::{self, fence::FenceBounds, turn::TurnBounds, Explored};
use turnfence_model::fence;
use turnfence_model::fence::FenceMachine;
use turnfence_model::prelude::*;
use turnfence_model::turn::{Invariant, TurnMachine};

fn line<I, V>(out: &mut String, name: &str, e: &Explored<I, V>) {
    writeln!(
        out,
        "{name}: {} distinct states, {} transitions, depth {}",
        e.states, e.transitions, e.depth
    )
    .unwrap();
}

fn check<I: std::fmt::Debug, V: turnfence_model::Invariant>(name: &str, e: &Explored<I, V>) {
    assert!(
        !e.truncated,
        "{name}: not exhaustive; still growing along {:?}",
        e.deepest
    );
    if let Some((path, broken)) = &e.counterexample {
        panic!(
            "{name}: {} broken after {path:?}: {}",
            broken.name(),
            broken.message
        );
    }
}

#[test]
#[ignore = "deep: run in release by ci/explore.sh"]
fn deep_exhaustive_exploration_at_the_ci_bounds() {
    const DEPTH: usize = 10_000;
    // Both cores: the fence machine on one thread, the turn machine's bounds on the other.
    let (fences, turns) = std::thread::scope(|scope| {
        let fence = scope.spawn(|| {
            FenceBounds::ci()
                .into_iter()
                .map(|(name, b)| {
                    let e = explore::explore::<FenceMachine>(
                        &FenceMachine::new,
                        &b,
                        DEPTH,
                        None,
                        &mut |_, _, _| {},
                    );
                    (name, e)
                })
                .collect::<Vec<_>>()
        });
        let turns: Vec<(&str, Explored<_, _>)> = TurnBounds::ci()
            .into_iter()
            .map(|(name, b)| {
                let e = explore::explore::<TurnMachine>(
                    &TurnMachine::new,
                    &b,
                    DEPTH,
                    None,
                    &mut |_, _, _| {},
                );
                (name, e)
            })
            .collect();
        (fence.join().unwrap(), turns)
    });
    let mut counts = String::new();
    let mut coverage = BTreeSet::new();
    let mut reached = BTreeSet::new();
    for (name, e) in &turns {
        check(&format!("turn/{name}"), e);
        line(
            &mut counts,
            &format!(
                "turn {name} {}",
                serde_json::to_string(
                    &TurnBounds::ci()
                        .into_iter()
                        .find(|(n, _)| n == name)
                        .unwrap()
                        .1
                )
                .unwrap()
            ),
            e,
        );
        coverage.extend(e.coverage.iter().cloned());
        reached.extend(e.reached.iter().copied());
    }
    let mut fence_coverage = BTreeSet::new();
    let mut fence_reached = BTreeSet::new();
    for (name, e) in &fences {
        check(&format!("fence/{name}"), e);
        let b = FenceBounds::ci()
            .into_iter()
            .find(|(n, _)| n == name)
            .unwrap()
            .1;
        line(
            &mut counts,
            &format!("fence {name} {}", serde_json::to_string(&b).unwrap()),
            e,
        );
        fence_coverage.extend(e.coverage.iter().cloned());
        fence_reached.extend(e.reached.iter().copied());
    }

    let (missing, wrong) = explore::turn::coverage().gaps(&coverage);
    assert!(
        missing.is_empty() && wrong.is_empty(),
        "turn coverage: missing {missing:?}, listed impossible but reached {wrong:?}"
    );
    let (missing, wrong) = explore::fence::coverage().gaps(&fence_coverage);
    assert!(
        missing.is_empty() && wrong.is_empty(),
        "fence coverage: missing {missing:?}, listed impossible but reached {wrong:?}"
    );
    let unreached: Vec<&str> = Invariant::ALL
        .iter()
        .filter(|i| !reached.contains(*i))
        .map(|i| i.name())
        .collect();
    assert!(
        unreached.is_empty(),
        "turn invariants never put to the test: {unreached:?}"
    );
    let unreached: Vec<&str> = fence::Invariant::ALL
        .iter()
        .filter(|i| !fence_reached.contains(*i))
        .map(|i| i.name())
        .collect();
    assert!(
        unreached.is_empty(),
        "fence invariants never put to the test: {unreached:?}"
    );
    crate::snapshot_settings().bind(|| insta::assert_snapshot!("deep_explore_counts", counts));
}

/// A small exploration that runs with the other tests: the explorer is exhaustive on a tiny
/// bound, and its state counts are pinned too.
#[test]
fn small_exploration_is_exhaustive_and_pinned() {
    let b = TurnBounds {
        turns: 1,
        children_per_turn: 1,
        deltas_per_turn: 1,
        deadline_ms: 100,
        client: false,
    };
    let e = explore::explore::<TurnMachine>(&TurnMachine::new, &b, 10_000, None, &mut |_, _, _| {});
    check("turn/small", &e);
    let mut counts = String::new();
    line(
        &mut counts,
        &format!("turn {}", serde_json::to_string(&b).unwrap()),
        &e,
    );
    crate::snapshot_settings().bind(|| insta::assert_snapshot!("explore_counts_small", counts));
}
