//! Symmetry reduction in the explorer (renaming tokens and request ids, `explore::symmetry`):
//! exact — it explores one state per class, as many as brute force over every renaming counts —
//! and sound — the fence model commutes with renaming, and every planted fence flaw is still
//! found, no later, by a counterexample that replays as recorded.

use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::fmt::Write;

use proptest::prelude::*;
use turnfence_checks::explore::{self, fence::FenceBounds, Explore};
use turnfence_checks::shared::take;
use turnfence_model::fence::rename::Renaming;
use turnfence_model::fence::table::valid_id;
use turnfence_model::fence::{self, FenceMachine, Id, Monitor};
use turnfence_model::{Flaw as _, Invariant as _, Monitor as _, Plant, Plantable};

/// Every order of `0..n`.
pub fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    let mut all = Vec::new();
    for rest in permutations(n - 1) {
        for at in 0..=rest.len() {
            let mut p = rest.clone();
            p.insert(at, n - 1);
            all.push(p);
        }
    }
    all
}

/// The tokens a state names (its machine and every request the monitor saw) and its valid reqs.
fn names<P: Plant<fence::Flaw>>(m: &FenceMachine<P>, mon: &Monitor) -> (Vec<Id>, Vec<Id>) {
    let s = m.state();
    let mut tokens: BTreeSet<Id> = mon.requests().map(|(_, t, _)| t.into()).collect();
    tokens.extend(s.table.rows.values().map(|r| r.token.clone()));
    tokens.extend(s.queue.iter().map(|e| e.request.token.clone()));
    tokens.extend(s.mailbox.keys().map(|(t, _)| t.clone()));
    for w in s.workers.values() {
        tokens.extend(w.binding.iter().map(|b| b.token.clone()));
        tokens.extend(w.sealed_token.iter().cloned());
        tokens.extend(w.unanswered_end.iter().cloned());
        tokens.extend(w.waiting.iter().map(|x| x.token.clone()));
    }
    let reqs = s
        .workers
        .values()
        .flat_map(|w| w.used_reqs.iter())
        .filter(|q| valid_id(q))
        .cloned()
        .collect();
    (tokens.into_iter().collect(), reqs)
}

/// The class of a state by brute force: the least fingerprint over every bijection of its tokens
/// and valid reqs onto neutral labels (two states share it exactly when a renaming maps one onto
/// the other).
fn brute_force_class(m: &FenceMachine, mon: &Monitor) -> u64 {
    let (tokens, reqs) = names(m, mon);
    let mut best = u64::MAX;
    for pt in permutations(tokens.len()) {
        for pq in permutations(reqs.len()) {
            let r = Renaming::new(
                tokens
                    .iter()
                    .zip(&pt)
                    .map(|(t, i)| (t.clone(), format!("t{i}").into()))
                    .collect(),
                reqs.iter()
                    .zip(&pq)
                    .map(|(q, i)| (q.clone(), format!("q{i}").into()))
                    .collect(),
            );
            best = best.min(explore::fingerprint(&m.renamed(&r), &mon.renamed(&r)));
        }
    }
    best
}

/// Over every state reachable within the bounds (without symmetry): how many there are, how many
/// classes brute force counts, and how many the explorer's canonical form tells apart.
fn classes(bounds: &FenceBounds) -> (usize, usize, usize) {
    let (m, mon) = explore::start(&FenceMachine::new);
    let mut seen = HashSet::from([explore::fingerprint(&m, &mon)]);
    let (mut brute, mut canonical) = (HashSet::new(), HashSet::new());
    let mut frontier = VecDeque::from([(m, mon)]);
    while let Some((m, mon)) = frontier.pop_front() {
        brute.insert(brute_force_class(&m, &mon));
        canonical.insert(m.canonical_fingerprint(&mon));
        for input in m.alphabet(bounds) {
            let mut next = m.clone();
            let (steps, ok) = take(&mut next, &input);
            if !ok {
                continue;
            }
            let mut seen_by = mon.clone();
            steps.iter().for_each(|s| drop(seen_by.observe(s)));
            if seen.insert(explore::fingerprint(&next, &seen_by)) {
                frontier.push_back((next, seen_by));
            }
        }
    }
    (seen.len(), brute.len(), canonical.len())
}

/// One bound set with and without symmetry: the explorer's counts, the classes brute force
/// predicts, and the ratio; the reduced exploration visits exactly one state per class.
fn with_and_without(out: &mut String, name: &str, bounds: &FenceBounds) {
    let plain = explore::exhaustive::<FenceMachine>(&FenceMachine::new, bounds);
    let on = <FenceMachine as Explore>::with_symmetry(bounds).unwrap();
    let reduced = explore::exhaustive::<FenceMachine>(&FenceMachine::new, &on);
    assert!(plain.counterexample.is_none() && reduced.counterexample.is_none());
    assert!(!plain.truncated && !reduced.truncated);
    let (states, brute, canonical) = classes(bounds);
    assert_eq!(
        states, plain.states,
        "{name}: the walk here is the explorer's"
    );
    assert_eq!(canonical, brute, "{name}: the canonical form is not exact");
    assert_eq!(reduced.states, brute, "{name}: a class was lost or split");
    assert_eq!(reduced.coverage, plain.coverage, "{name}: coverage changed");
    assert_eq!(
        reduced.reached, plain.reached,
        "{name}: reachability changed"
    );
    assert_eq!(reduced.depth, plain.depth, "{name}: depth changed");
    writeln!(
        out,
        "fence {name} {}: {} states, {} transitions without; {} classes by brute force; \
         with: {} states, {} transitions, depth {}; states ×{:.3} fewer",
        serde_json::to_string(bounds).unwrap(),
        plain.states,
        plain.transitions,
        brute,
        reduced.states,
        reduced.transitions,
        reduced.depth,
        plain.states as f64 / reduced.states as f64
    )
    .unwrap();
}

#[test]
fn explore_with_symmetry_is_exact_at_small_bounds() {
    let mut out = String::new();
    let sets = [
        (
            "transport-2",
            FenceBounds {
                requests: 2,
                owner_messages: 1,
                queue: false,
                malformed: true,
                symmetry: false,
            },
        ),
        (
            "queue-1",
            FenceBounds {
                requests: 1,
                owner_messages: 1,
                queue: true,
                malformed: false,
                symmetry: false,
            },
        ),
    ];
    for (name, bounds) in sets {
        with_and_without(&mut out, name, &bounds);
    }
    crate::snapshot_settings().bind(|| insta::assert_snapshot!("explore_symmetry_small", out));
}

/// A random permutation of `names` (by the given keys), as a map.
fn shuffled(names: &[Id], keys: &[u32]) -> BTreeMap<Id, Id> {
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by_key(|&i| (keys.get(i).copied().unwrap_or(0), i));
    names
        .iter()
        .zip(order)
        .map(|(n, i)| (n.clone(), names[i].clone()))
        .collect()
}

/// The model commutes with renaming, on the sound machine and on each planted one: from a random
/// reachable state, the renamed state has the same class (and hashing as renamed is hashing the
/// renamed state); its alphabet is the renamed alphabet; and each input, renamed, takes it to
/// the renamed successor, with the same violations.
fn commutes<P: Plant<fence::Flaw>>(make: &dyn Fn() -> FenceMachine<P>, walk: &[u8], keys: &[u32]) {
    let bounds = FenceMachine::<P>::hunt_bounds();
    let (m, mon) = crate::walk(make, &bounds, walk);
    let (tokens, reqs) = names(&m, &mon);
    let (tk, rk) = keys.split_at(keys.len() / 2);
    let r = Renaming::new(shuffled(&tokens, tk), shuffled(&reqs, rk));
    let (rm, rmon) = (m.renamed(&r), mon.renamed(&r));
    assert_eq!(
        m.canonical_fingerprint(&mon),
        rm.canonical_fingerprint(&rmon)
    );
    // Hashing as renamed is hashing the renamed state and memory.
    let hashed = |m: &FenceMachine<P>, mon: &Monitor, r: &Renaming| {
        let mut h = explore::hasher();
        m.state().hash_renamed(r, &mut h);
        mon.hash_renamed(r, &mut h);
        std::hash::Hasher::finish(&h)
    };
    assert_eq!(
        hashed(&m, &mon, &r),
        hashed(&rm, &rmon, &Renaming::default())
    );
    let rename = |i: &fence::Input| fence::Input::new(i.at, i.kind.renamed(&r));
    let alphabet: Vec<_> = m.alphabet(&bounds).iter().map(rename).collect();
    assert_eq!(rm.alphabet(&bounds), alphabet, "the alphabet commutes");
    for input in m.alphabet(&bounds) {
        let (mut a, mut b) = (m.clone(), rm.clone());
        let (sa, oka) = take(&mut a, &input);
        let (sb, okb) = take(&mut b, &rename(&input));
        assert_eq!(oka, okb);
        let (mut ma, mut mb) = (mon.clone(), rmon.clone());
        let va: Vec<_> = sa
            .iter()
            .flat_map(|s| ma.observe(s))
            .map(|v| v.invariant)
            .collect();
        let vb: Vec<_> = sb
            .iter()
            .flat_map(|s| mb.observe(s))
            .map(|v| v.invariant)
            .collect();
        assert_eq!(va, vb, "the same violations after {input:?}");
        assert_eq!(
            explore::fingerprint(&a.renamed(&r), &ma.renamed(&r)),
            explore::fingerprint(&b, &mb),
            "renaming commutes with {input:?}"
        );
    }
}

#[test]
fn renaming_commutes_with_the_model_and_keeps_the_class() {
    let strategy = (
        0..=fence::Flaw::ALL.len(),
        proptest::collection::vec(any::<u8>(), 0..24),
        proptest::collection::vec(any::<u32>(), 16),
    );
    crate::runner(crate::seed())
        .run(&strategy, |(flaw, walk, keys)| {
            match flaw.checked_sub(1).map(|i| fence::Flaw::ALL[i]) {
                None => commutes(&FenceMachine::new, &walk, &keys),
                Some(f) => commutes(&|| FenceMachine::with_flaw(f), &walk, &keys),
            }
            Ok(())
        })
        .unwrap();
}

/// How deep the flaw hunt goes: as deep as every fence flaw's shortest counterexample (at most 5
/// inputs, `snapshots/shrunk_lengths.snap`).
const HUNT_DEPTH: usize = 5;

/// Every planted fence flaw, hunted within each CI bound set and the hunting bounds, with
/// symmetry and without (`still_finds_every_flaw`).
#[test]
fn explore_with_symmetry_still_finds_every_planted_fence_flaw() {
    let mut sets = <FenceMachine as Explore>::ci_bounds();
    sets.push(("hunt", <FenceMachine as Explore>::hunt_bounds()));
    still_finds_every_flaw::<FenceMachine>(&sets, HUNT_DEPTH);
}

/// Every planted flaw of machine `M`, hunted within each bound set up to `depth` inputs, with
/// symmetry and without: found in the same bound sets and at the same depth either way, at least
/// once, and each path found with symmetry (names as drawn, never the labels) replays from a
/// fresh planted machine to the same invariant at its last input.
pub fn still_finds_every_flaw<M>(sets: &[(&str, <M::Planted as Explore>::Bounds)], depth: usize)
where
    M: Plantable<Planted: Explore>,
{
    for &flaw in <M::Flaw as turnfence_model::Flaw>::ALL {
        let make = || M::with_flaw(flaw);
        let invariant = flaw.breaks();
        let hunt = |bounds: &<M::Planted as Explore>::Bounds| {
            explore::explore(&make, bounds, depth, Some(invariant), &mut |_, _, _| {})
                .counterexample
        };
        let mut found = 0;
        for (name, b) in sets {
            let plain = hunt(b);
            let on = hunt(&<M::Planted as Explore>::with_symmetry(b).unwrap());
            assert_eq!(
                plain.as_ref().map(|(p, _)| p.len()),
                on.as_ref().map(|(p, _)| p.len()),
                "{flaw:?} in {name}: found otherwise with symmetry"
            );
            let Some((path, broken)) = on else { continue };
            found += 1;
            assert_eq!(broken.invariant, invariant, "{flaw:?}");
            let what = format!("{flaw:?}");
            assert!(
                crate::replays_to(explore::start(&make), &path, invariant, &what),
                "{flaw:?} in {name}: the path does not replay to {}",
                invariant.name()
            );
        }
        assert!(found > 0, "{flaw:?}: never found");
    }
}

/// Both fence CI bound sets with symmetry on, exhaustively (run in release by `ci/explore.sh`):
/// no violation, the coverage of their union and every invariant put to the test as without
/// it, and the reduced counts pinned (those without it are in `deep_explore_counts`).
#[test]
#[ignore = "deep: run in release by ci/explore.sh"]
fn deep_explore_with_symmetry_at_the_fence_ci_bounds() {
    let mut out = String::new();
    let (mut coverage, mut reached) = (BTreeSet::new(), BTreeSet::new());
    for (name, bounds) in <FenceMachine as Explore>::ci_bounds() {
        let on = <FenceMachine as Explore>::with_symmetry(&bounds).unwrap();
        let e = explore::exhaustive::<FenceMachine>(&FenceMachine::new, &on);
        assert!(!e.truncated && e.counterexample.is_none(), "{name}");
        writeln!(
            out,
            "fence {name} {}: {} distinct classes, {} transitions, depth {}",
            serde_json::to_string(&on).unwrap(),
            e.states,
            e.transitions,
            e.depth
        )
        .unwrap();
        coverage.extend(e.coverage);
        reached.extend(e.reached);
    }
    let (missing, wrong) = <FenceMachine as Explore>::coverage().gaps(&coverage);
    assert!(
        missing.is_empty() && wrong.is_empty(),
        "{missing:?} {wrong:?}"
    );
    assert!(crate::unreached(&reached).is_empty());
    crate::snapshot_settings()
        .bind(|| insta::assert_snapshot!("deep_explore_symmetry_counts", out));
}

/// The exactness check of the small bound sets, at the fence CI bound sets: brute force over
/// every renaming of every state reached without symmetry counts as many classes as the
/// explorer visits with it. Minutes in release (up to 36 renamings a state at `transport`), so
/// by hand: `cargo test --release -p turnfence-checks --test it deep_symmetry -- --ignored
/// --nocapture`.
#[test]
#[ignore = "deep and slow: by hand"]
fn deep_symmetry_is_exact_at_the_fence_ci_bounds() {
    let mut out = String::new();
    for (name, bounds) in <FenceMachine as Explore>::ci_bounds() {
        with_and_without(&mut out, name, &bounds);
    }
    println!("{out}");
}

/// Why workers are not renamed: `w1` asks first, yet when both waits run out at one instant
/// `w0`'s re-send is queued first. Swapping the two workers of this state gives one no run
/// reaches (`w1`'s re-send first), so the swap is not a symmetry of the model.
#[test]
fn workers_are_not_interchangeable_waits_run_out_in_worker_order() {
    use turnfence_model::fence::{Action, InputKind, Output};
    let (mut m, _) = explore::start(&FenceMachine::new);
    for (worker, token, req) in [("w1", "a0", "1"), ("w0", "a1", "2")] {
        let ask = InputKind::request(
            worker.into(),
            Action::Begin,
            Some(token.into()),
            req.into(),
            None,
        );
        assert!(take(&mut m, &fence::Input::new(0, ask)).1);
    }
    for _ in 0..2 {
        assert!(take(&mut m, &fence::Input::new(0, InputKind::DropEvent)).1);
    }
    let (steps, ok) = take(&mut m, &fence::Input::new(10_000, InputKind::Tick));
    assert!(ok);
    let resent: Vec<&str> = steps
        .iter()
        .flat_map(|s| &s.outputs)
        .filter_map(|o| match o {
            Output::Resent { worker, .. } => Some(worker.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(resent, ["w0", "w1"]);
    let queued: Vec<&str> = m.state().queue.iter().map(|e| e.worker.as_str()).collect();
    assert_eq!(queued, ["w0", "w1"]);
}
