//! Sleep sets in the explorer (`explore::sleep`): two inputs a machine's footprints call
//! independent at a state commute there — each still offered and taken after the other, the same
//! state (machine and monitor) either way, the same invariants broken on the way — at every state
//! of the bound sets; a reduced exploration reaches the states, the invariants and the verdict
//! of the full one, taking fewer transitions; and every planted flaw is still found.

use std::fmt::Write;

use turnfence_checks::explore::{self, fence::FenceBounds, turn::TurnBounds, Explore};
use turnfence_checks::shared::take;
use turnfence_model::fence::FenceMachine;
use turnfence_model::turn::TurnMachine;
use turnfence_model::{Invariant as _, Monitor as _, Plantable};

use crate::plain_walk;

/// Where `input` leads from a state, if the machine takes it: the machine and monitor, the
/// invariants broken on the way (by name, sorted) and the successor's key.
type After<M> = (
    M,
    <M as turnfence_model::Machine>::Monitor,
    Vec<&'static str>,
    u64,
);

fn after<M: Explore>(machine: &M, monitor: &M::Monitor, input: &M::Input) -> Option<After<M>> {
    let (mut next, mut memory) = (machine.clone(), monitor.clone());
    let (steps, ok) = take(&mut next, input);
    if !ok {
        return None;
    }
    let mut broken: Vec<&'static str> = steps
        .iter()
        .flat_map(|s| memory.observe(s))
        .map(|v| v.invariant.name())
        .collect();
    broken.sort_unstable();
    next.refresh_fingerprint();
    memory.refresh_fingerprint();
    let key = explore::fingerprint(&next, &memory);
    Some((next, memory, broken, key))
}

/// `second` taken after `first`'s successor, if offered and taken there: the invariants broken
/// on both inputs' way (sorted) and the key reached.
fn then<M: Explore>(
    first: &After<M>,
    second: &M::Input,
    bounds: &M::Bounds,
) -> Option<(Vec<&'static str>, u64)> {
    if !first.0.alphabet(bounds).contains(second) {
        return None;
    }
    let (_, _, broken, key) = after(&first.0, &first.1, second)?;
    let mut all = [first.2.clone(), broken].concat();
    all.sort_unstable();
    Some((all, key))
}

/// Every state of the bounds walked, and every pair of inputs taken from it that the footprints
/// call independent taken in both orders: asserted to commute. Returns the pairs called
/// independent and all the pairs taken.
fn commute_everywhere<M: Explore>(name: &str, bounds: &M::Bounds) -> (usize, usize) {
    let (mut independent, mut pairs) = (0, 0);
    // Each state as the walk is done with it: only the states still to expand are held.
    plain_walk::walk::<M>(
        bounds,
        |_, _, _, _, _| {},
        |(machine, monitor)| {
            let inputs = machine.alphabet(bounds);
            let prints: Vec<_> = inputs
                .iter()
                .map(|i| machine.footprint(i, bounds))
                .collect();
            let next: Vec<_> = inputs
                .iter()
                .map(|i| after(&machine, &monitor, i))
                .collect();
            for (x, a) in next.iter().enumerate() {
                let Some(a) = a else { continue };
                for (y, b) in next.iter().enumerate().skip(x + 1) {
                    let Some(b) = b else { continue };
                    pairs += 1;
                    if !prints[x].independent(prints[y]) {
                        continue;
                    }
                    independent += 1;
                    let (ia, ib) = (&inputs[x], &inputs[y]);
                    let ab = then(a, ib, bounds);
                    let ba = then(b, ia, bounds);
                    assert!(
                        ab.is_some() && ab == ba,
                        "{name}: {ia:?} and {ib:?} are called independent but do not commute \
                     (a then b: {:?}, b then a: {:?}) at {machine:?}",
                        ab.map(|(v, _)| v),
                        ba.map(|(v, _)| v),
                    );
                }
            }
        },
    );
    (independent, pairs)
}

/// Small bounds with independent inputs in both machines, for the debug run: two turns with a
/// child each, and one turn with two children, no delta; one request beside the queue's inputs
/// and an owner message.
fn small() -> ([TurnBounds; 2], FenceBounds) {
    let b = |turns, children_per_turn| TurnBounds {
        turns,
        children_per_turn,
        deltas_per_turn: 0,
        deadline_ms: 100,
        client: false,
        profile: None,
        symmetry: false,
    };
    let turn = [b(2, 1), b(1, 2)];
    let fence = FenceBounds {
        requests: 1,
        owner_messages: 1,
        queue: true,
        malformed: false,
        symmetry: false,
    };
    (turn, fence)
}

#[test]
fn independent_inputs_commute_at_every_state_of_small_bounds() {
    let (turn, fence) = small();
    let (t, _) = commute_everywhere::<TurnMachine>("turn/two turns", &turn[0]);
    let (c, _) = commute_everywhere::<TurnMachine>("turn/two children", &turn[1]);
    let (f, _) = commute_everywhere::<FenceMachine>("fence/small", &fence);
    // Inputs of two turns, of two children, and a request beside the queue's inputs, are called
    // independent: the test holds a claim, not none.
    assert!(
        t > 0 && c > 0 && f > 0,
        "independent pairs: turns {t}, children {c}, fence {f}"
    );
}

/// By hand (`cargo test --release -p turnfence-checks --test it by_hand -- --ignored`): the walk
/// of every CI set takes minutes on two cores, more than the rest of ci/explore.sh together.
#[test]
#[ignore = "by hand, in release: cargo test --release --test it by_hand -- --ignored"]
fn by_hand_independent_inputs_commute_at_every_state_of_the_ci_bounds() {
    fn each<M: Explore>() -> usize {
        let mut called = 0;
        for (name, b) in M::ci_bounds() {
            let (independent, pairs) = commute_everywhere::<M>(&format!("{}/{name}", M::NAME), &b);
            println!(
                "{}/{name}: {independent} of {pairs} pairs called independent",
                M::NAME
            );
            called += independent;
        }
        called
    }
    let (t, f) = std::thread::scope(|scope| {
        let fence = scope.spawn(each::<FenceMachine>);
        (each::<TurnMachine>(), fence.join().unwrap())
    });
    assert!(t > 0 && f > 0, "independent pairs: turn {t}, fence {f}");
}

/// Explored with sleep sets and without: the same states, invariants reached and verdict; fewer
/// transitions taken (never more). The counts as a line of `out`; returns the transitions left
/// asleep.
fn same_verdict<M: Explore>(name: &str, bounds: &M::Bounds, out: &mut String) -> usize {
    let full = explore::exhaustive::<M>(&M::default, bounds);
    let reduced = explore::reduced::<M>(&M::default, bounds);
    assert!(reduced.reduced && !full.reduced, "{name}");
    assert!(!full.truncated && !reduced.truncated, "{name}");
    assert_eq!(reduced.states, full.states, "{name}: states");
    assert_eq!(reduced.reached, full.reached, "{name}: invariants reached");
    assert_eq!(
        reduced.counterexample.is_some(),
        full.counterexample.is_some(),
        "{name}: verdict"
    );
    assert!(
        reduced.transitions <= full.transitions,
        "{name}: {} transitions reduced, {} in full",
        reduced.transitions,
        full.transitions
    );
    writeln!(
        out,
        "{name}: {} distinct states, {} of {} transitions taken ({:.1}% left asleep)",
        reduced.states,
        reduced.transitions,
        full.transitions,
        100.0 * (full.transitions - reduced.transitions) as f64 / full.transitions as f64
    )
    .unwrap();
    full.transitions - reduced.transitions
}

#[test]
fn reduced_exploration_reaches_what_the_full_one_does_in_fewer_transitions() {
    let (turn, fence) = small();
    let mut out = String::new();
    let asleep = [
        same_verdict::<TurnMachine>("turn/two turns", &turn[0], &mut out),
        same_verdict::<TurnMachine>("turn/two children", &turn[1], &mut out),
        same_verdict::<FenceMachine>("fence/small", &fence, &mut out),
    ];
    // Each left some transitions asleep (the same states, fewer transitions: fewer steps).
    assert!(asleep.iter().all(|&n| n > 0), "{out}");
}

#[test]
#[ignore = "deep: run in release by ci/explore.sh"]
fn deep_explore_reduced_at_the_ci_bounds_keeps_states_and_verdict() {
    fn each<M: Explore>() -> String {
        let mut out = String::new();
        for (name, b) in M::ci_bounds() {
            same_verdict::<M>(&format!("{} {name}", M::NAME), &b, &mut out);
        }
        out
    }
    let (turns, fences) = std::thread::scope(|scope| {
        let fence = scope.spawn(each::<FenceMachine>);
        (each::<TurnMachine>(), fence.join().unwrap())
    });
    let counts = format!("{fences}{turns}");
    crate::snapshot_settings()
        .bind(|| insta::assert_snapshot!("deep_explore_reduced_counts", counts));
}

/// Every planted flaw of a machine (made by `plant`), hunted up to `depth` inputs within the CI
/// bound sets and then the hunting bounds, with sleep sets and without, until a set holds it:
/// found or not alike in each set hunted, found in one, and the path found reduced replays from
/// a fresh planted machine to the flaw's invariant at its last input. One line per flaw: where it
/// was found, and the paths' lengths with and without.
fn flaws_found<P, F>(plant: impl Fn(F) -> P, depth: usize) -> String
where
    P: Explore,
    F: turnfence_model::Flaw<Invariant = P::Invariant> + std::fmt::Debug,
{
    let mut sets = P::ci_bounds();
    sets.push(("hunt", P::hunt_bounds()));
    let mut out = String::new();
    for &flaw in F::ALL {
        let make = || plant(flaw);
        let invariant = flaw.breaks();
        let mut found = Vec::new();
        for (name, b) in &sets {
            let hunt = |reduce| {
                explore::explore_with(&make, b, depth, Some(invariant), reduce, &mut |_, _, _| {})
                    .counterexample
            };
            let (plain, reduced) = (hunt(false), hunt(true));
            assert_eq!(
                plain.is_some(),
                reduced.is_some(),
                "{flaw:?} in {name}: found otherwise with sleep sets"
            );
            let (Some((p, _)), Some((path, broken))) = (plain, reduced) else {
                continue;
            };
            assert_eq!(broken.invariant, invariant, "{flaw:?}");
            let start = explore::start(&|| make().bounded(b));
            let what = format!("{flaw:?}");
            assert!(
                crate::replays_to(start, &path, invariant, &what),
                "{flaw:?}: the reduced path does not break {} at its last input",
                invariant.name()
            );
            found.push(format!("{name} {}/{}", path.len(), p.len()));
            break;
        }
        assert!(!found.is_empty(), "{flaw:?}: never found within {depth}");
        writeln!(out, "{flaw:?}: {}", found.join(", ")).unwrap();
    }
    out
}

#[test]
fn explore_reduced_still_finds_every_planted_fence_flaw() {
    // As deep as every fence flaw's shortest counterexample (`snapshots/shrunk_lengths.snap`).
    println!("{}", flaws_found(FenceMachine::with_flaw, 5));
}

/// By hand, as the walk above: every planted turn flaw hunted reduced.
#[test]
#[ignore = "by hand, in release: cargo test --release --test it by_hand -- --ignored"]
fn by_hand_reduced_still_finds_every_planted_turn_flaw() {
    // As deep as every turn flaw's shortest counterexample (`snapshots/shrunk_lengths.snap`).
    println!("{}", flaws_found(TurnMachine::with_flaw, 6));
}
