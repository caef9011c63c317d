//! Exhaustive exploration at the CI bounds (run in release by `ci/explore.sh`: under a minute;
//! in a debug build it would take many): every state reachable within the bounds is
//! visited, no invariant breaks, coverage holds, and the state space is pinned.

use std::collections::BTreeSet;
use std::fmt::Write;

use turnfence_checks::explore::{self, turn::TurnBounds, Explore, Explored};
use turnfence_model::fence::FenceMachine;
use turnfence_model::turn::TurnMachine;

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

/// Each bound set explored exhaustively, with no violation, its counts as lines of `counts`;
/// returns the coverage points and invariants reached between them.
fn exhaustive_at<M: Explore>(
    sets: Vec<(&str, M::Bounds)>,
    counts: &mut String,
) -> (BTreeSet<String>, BTreeSet<M::Invariant>) {
    let mut coverage = BTreeSet::new();
    let mut reached = BTreeSet::new();
    for (name, b) in sets {
        let e = explore::exhaustive::<M>(&M::default, &b);
        check(&format!("{}/{name}", M::NAME), &e);
        let bounds = serde_json::to_string(&b).unwrap();
        line(counts, &format!("{} {name} {bounds}", M::NAME), &e);
        coverage.extend(e.coverage.iter().cloned());
        reached.extend(e.reached.iter().copied());
    }
    (coverage, reached)
}

/// Every CI bound set of a machine explored exhaustively: each with no violation, its counts
/// as lines of `counts`; coverage and the invariants put to the test are the union's.
fn at_the_ci_bounds<M: Explore>(counts: &mut String) {
    let (coverage, reached) = exhaustive_at::<M>(M::ci_bounds(), counts);
    let (missing, wrong) = M::coverage().gaps(&coverage);
    assert!(
        missing.is_empty() && wrong.is_empty(),
        "{} coverage: missing {missing:?}, listed impossible but reached {wrong:?}",
        M::NAME
    );
    let unreached = crate::unreached(&reached);
    assert!(
        unreached.is_empty(),
        "{} invariants never put to the test: {unreached:?}",
        M::NAME
    );
}

#[test]
#[ignore = "deep: run in release by ci/explore.sh"]
fn deep_exhaustive_exploration_at_the_ci_bounds() {
    // Both cores: the fence machine on one thread, the turn machine's bounds on the other.
    let (turns, fences) = std::thread::scope(|scope| {
        let fence = scope.spawn(|| {
            let mut counts = String::new();
            at_the_ci_bounds::<FenceMachine>(&mut counts);
            counts
        });
        let mut counts = String::new();
        at_the_ci_bounds::<TurnMachine>(&mut counts);
        (counts, fence.join().unwrap())
    });
    let counts = turns + &fences;
    crate::snapshot_settings().bind(|| insta::assert_snapshot!("deep_explore_counts", counts));
}

/// The deeper bound sets (`Explore::deep_bounds`: three turns, three queued requests), each
/// exhaustive with no violation, their counts pinned apart from the CI sets' (which stay as they
/// are, so that drift in either shows).
#[test]
#[ignore = "deep: run in release by ci/explore.sh"]
fn deep_exhaustive_exploration_at_the_deeper_bounds() {
    use turnfence_checks::explore::Explore as _;
    assert!(!<TurnMachine>::deep_bounds().is_empty() && !<FenceMachine>::deep_bounds().is_empty());
    let mut counts = String::new();
    exhaustive_at::<TurnMachine>(<TurnMachine>::deep_bounds(), &mut counts);
    exhaustive_at::<FenceMachine>(<FenceMachine>::deep_bounds(), &mut counts);
    crate::snapshot_settings()
        .bind(|| insta::assert_snapshot!("deep_explore_deeper_counts", counts));
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
        profile: None,
        symmetry: false,
    };
    let e = explore::exhaustive::<TurnMachine>(&TurnMachine::new, &b);
    check("turn/small", &e);
    let mut counts = String::new();
    line(
        &mut counts,
        &format!("turn {}", serde_json::to_string(&b).unwrap()),
        &e,
    );
    crate::snapshot_settings().bind(|| insta::assert_snapshot!("explore_counts_small", counts));
}

/// The invariants an exploration reports reached, and the coverage points, are those a plain
/// breadth-first walk finds: one that copies every state afresh for every input, keeps every
/// state whole, and takes the union of every transition's monitor's reached set. The explorer
/// reports a transition's reached invariants only where its step added to the state's (the rest
/// were reported by the transition that made the state) and what the prelude reached up front;
/// this holds it to the plain count on bound sets of both machines and of each profile.
#[test]
fn the_invariants_and_points_reached_are_those_a_plain_walk_reaches() {
    use turnfence_model::turn::Profile;
    fn plain<M: Explore>(bounds: &M::Bounds) -> (BTreeSet<M::Invariant>, BTreeSet<String>) {
        use turnfence_model::Monitor as _;
        let mut reached = BTreeSet::new();
        let mut points = BTreeSet::new();
        let all = crate::plain_walk::all_states::<M>(bounds, |machine, input, steps, memory| {
            let outputs: Vec<_> = steps.iter().flat_map(|s| s.outputs.clone()).collect();
            machine.covered(input, &outputs, &mut |pieces| {
                points.insert(pieces.concat());
            });
            reached.extend(memory.reached().iter().copied());
        });
        // And what the start (after the prelude) had reached before any transition.
        reached.extend(all[0].1.reached().iter().copied());
        (reached, points)
    }
    fn same<M: Explore>(bounds: &M::Bounds) {
        let e = explore::exhaustive::<M>(&M::default, bounds);
        let (reached, points) = plain::<M>(bounds);
        assert!(!reached.is_empty() && !points.is_empty());
        assert_eq!(e.reached, reached, "{}: the invariants reached", M::NAME);
        assert_eq!(e.coverage, points, "{}: the coverage points", M::NAME);
    }
    // With a client, but for livekit-agents (its speech timers make that 869 236 states).
    let small = |profile| TurnBounds {
        turns: 1,
        children_per_turn: 1,
        deltas_per_turn: 1,
        deadline_ms: 100,
        client: profile != Some(Profile::LivekitAgents),
        profile,
        symmetry: false,
    };
    for profile in [
        None,
        Some(Profile::OpenaiRealtime),
        Some(Profile::LivekitAgents),
    ] {
        same::<TurnMachine>(&small(profile));
    }
    same::<FenceMachine>(&explore::fence::FenceBounds {
        requests: 2,
        owner_messages: 1,
        queue: false,
        malformed: true,
        symmetry: false,
    });
}

/// Explores on a pool of `threads` threads.
fn on_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(f)
}

/// The explorer expands states on every core, and its results do not depend on how many: one
/// thread and three give the same counts, coverage and invariants reached at a bound set, and the
/// same shortest counterexample for a planted flaw (its path, input by input, and its violation).
#[test]
fn exploration_is_the_same_on_any_number_of_threads() {
    use turnfence_model::turn::Flaw as TurnFlaw;
    use turnfence_model::Plantable;

    let b = TurnBounds {
        turns: 1,
        children_per_turn: 2,
        deltas_per_turn: 1,
        deadline_ms: 100,
        client: false,
        profile: None,
        symmetry: false,
    };
    let one = on_threads(1, || {
        explore::exhaustive::<TurnMachine>(&TurnMachine::new, &b)
    });
    let many = on_threads(3, || {
        explore::exhaustive::<TurnMachine>(&TurnMachine::new, &b)
    });
    assert_eq!(
        (one.states, one.transitions, one.depth),
        (many.states, many.transitions, many.depth)
    );
    assert_eq!(one.coverage, many.coverage);
    assert_eq!(one.reached, many.reached);

    let hunt = <TurnMachine as Explore>::hunt_bounds();
    for flaw in [
        TurnFlaw::DeliverAfterStop,
        TurnFlaw::UninterruptibleIsPaused,
    ] {
        let make = move || TurnMachine::with_flaw(flaw);
        let run = |threads| {
            on_threads(threads, || {
                explore::explore(&make, &hunt, 4, None, &mut |_, _, _| {}).counterexample
            })
        };
        let (one, many) = (run(1), run(3));
        assert!(one.is_some(), "{flaw:?} found");
        assert_eq!(one, many, "{flaw:?}");
    }
}

/// A bound set's profile is the machine explored: under each profile the explorer puts to the
/// test only invariants the profile judges, and the profile's own where one audio turn can reach
/// them — truncated_to_heard under openai-realtime (a barge-in truncates the turn to what was
/// heard), interruption_decided_once and uninterruptible_output_survives under livekit-agents
/// (speech pauses the turn; a turn may be accepted uninterruptible), uninterruptible_output_survives
/// under pipecat (a turn may be accepted uninterruptible). One turn, one delta, no
/// child: small enough to run with the other tests.
#[test]
fn a_bound_sets_profile_is_the_one_explored() {
    use turnfence_model::turn::{Invariant, Profile};

    let own: [(Profile, &[Invariant]); 4] = [
        (Profile::Lab, &[]),
        (Profile::OpenaiRealtime, &[Invariant::TruncatedToHeard]),
        (
            Profile::LivekitAgents,
            &[
                Invariant::InterruptionDecidedOnce,
                Invariant::UninterruptibleOutputSurvives,
            ],
        ),
        (
            Profile::Pipecat,
            &[Invariant::UninterruptibleOutputSurvives],
        ),
    ];
    for (profile, own) in own {
        let b = TurnBounds {
            turns: 1,
            children_per_turn: 0,
            deltas_per_turn: 1,
            deadline_ms: 100,
            client: false,
            profile: Some(profile),
            symmetry: false,
        };
        let e = explore::exhaustive::<TurnMachine>(&TurnMachine::new, &b);
        check(&format!("turn/{}", profile.name()), &e);
        let unjudged: Vec<_> = e.reached.iter().filter(|i| !profile.judges(**i)).collect();
        assert!(unjudged.is_empty(), "{}: {unjudged:?}", profile.name());
        for i in own {
            assert!(
                e.reached.contains(i),
                "{}: {i:?} not reached",
                profile.name()
            );
        }
    }
}

/// A machine and its monitor cloned, and copied in place over another (`Clone::clone_from`,
/// which the explorer copies each state with, keeping the buffers of the one it stepped last),
/// are the source: the same state, outputs and memory (`Debug` shows every field), the same
/// fingerprint, and the same successor for every input of the alphabet. The two walks are of
/// any lengths, so the copy overwrites maps, sets and vectors longer, shorter and as long as
/// its source's; each of the machine's bound sets is drawn (a turn machine's profiles too). A
/// copy that took an input or two since, or any other state, restored (`restore_from`: its parts
/// share the source's, and the next change is copied into the values they had) is its source
/// again.
fn copied_in_place_is_its_source<M>(
    (set, a, b): (usize, Vec<u8>, Vec<u8>),
) -> Result<(), proptest::test_runner::TestCaseError>
where
    M: Explore + Default + std::fmt::Debug,
    M::Monitor: std::fmt::Debug,
{
    use proptest::prop_assert_eq;
    use proptest::test_runner::TestCaseError;
    use turnfence_checks::shared::take;
    use turnfence_model::Monitor as _;
    let mut sets: Vec<M::Bounds> = M::ci_bounds().into_iter().map(|(_, b)| b).collect();
    sets.push(M::hunt_bounds());
    let bounds = &sets[set % sets.len()];
    let (source, source_monitor) = crate::walk(&M::default, bounds, &a);
    let (mut copy, mut copy_monitor) = crate::walk(&M::default, bounds, &b);
    // A clone made afresh is its source too (a new state the explorer keeps may be one).
    prop_assert_eq!(format!("{:?}", source.clone()), format!("{source:?}"));
    prop_assert_eq!(
        format!("{:?}", source_monitor.clone()),
        format!("{source_monitor:?}")
    );
    // The source: every field, and the fingerprint.
    let is_source = |m: &M, mon: &M::Monitor| -> Result<(), TestCaseError> {
        prop_assert_eq!(format!("{m:?}"), format!("{source:?}"));
        prop_assert_eq!(format!("{mon:?}"), format!("{source_monitor:?}"));
        prop_assert_eq!(
            explore::fingerprint(m, mon),
            explore::fingerprint(&source, &source_monitor)
        );
        Ok(())
    };
    // Restored over another state, as the explorer restores its scratch copy to each state it
    // expands.
    let (mut other, mut other_monitor) = crate::walk(&M::default, bounds, &b);
    other.restore_from(&source);
    other_monitor.restore_from(&source_monitor);
    is_source(&other, &other_monitor)?;
    copy.clone_from(&source);
    copy_monitor.clone_from(&source_monitor);
    is_source(&copy, &copy_monitor)?;
    for input in source.alphabet(bounds) {
        let after = |m: &M, mon: &M::Monitor| {
            let (mut m, mut mon) = (m.clone(), mon.clone());
            let (steps, ok) = take(&mut m, &input);
            steps.iter().for_each(|s| drop(mon.observe(s)));
            (ok, explore::fingerprint(&m, &mon))
        };
        prop_assert_eq!(
            after(&copy, &copy_monitor),
            after(&source, &source_monitor),
            "after {:?}",
            input
        );
    }
    // Restored after each input, or after two, as the explorer restores its scratch copy between
    // a state's inputs: the source again, every field, and its fingerprint.
    for input in source.alphabet(bounds) {
        let (steps, _) = take(&mut copy, &input);
        steps.iter().for_each(|s| drop(copy_monitor.observe(s)));
        copy.refresh_fingerprint();
        copy_monitor.refresh_fingerprint();
        if let Some(then) = copy.alphabet(bounds).into_iter().nth(second_pick(&input)) {
            let (steps, _) = take(&mut copy, &then);
            steps.iter().for_each(|s| drop(copy_monitor.observe(s)));
        }
        copy.restore_from(&source);
        copy_monitor.restore_from(&source_monitor);
        is_source(&copy, &copy_monitor)
            .map_err(|e| TestCaseError::fail(format!("restored after {input:?}: {e}")))?;
    }
    Ok(())
}

/// Which input of the next state's alphabet to take after `input` (any will do; this one
/// varies with the input, so a restore follows one input or two).
fn second_pick<I: std::fmt::Debug>(input: &I) -> usize {
    format!("{input:?}").len() % 3
}

/// A turn state copied in place over one that differs only in a text — a tool's name, a
/// checkpoint, an idempotency key, a streamed piece — or in how a commit ended is its source:
/// each text is copied into the buffer it overwrites, in the machine (a child's kind and state,
/// the store) and in the monitor (what it saw of a child, of the store). The explorer's
/// alphabet names one tool, one key and one text, so its walks never put two texts side by side.
#[test]
fn a_turn_state_copied_in_place_over_other_texts_is_its_source() {
    use turnfence_model::turn::Input;
    use turnfence_model::Monitor as _;
    let story = |text: &str, fate: &str, to: usize| {
        let lines = [
            r#"{"at":0,"input":"accept","turn":"t","generation":1,"mode":"text"}"#.to_owned(),
            format!(
                r#"{{"at":1,"input":"delta","turn":"t","generation":1,"seq":1,"text":"{text}"}}"#
            ),
            format!(
                r#"{{"at":2,"input":"spawn","turn":"t","child":"c","kind":{{"tool":{{"name":"{text}","cancellable":false}}}}}}"#
            ),
            format!(
                r#"{{"at":3,"input":"commit_sent","turn":"t","child":"c","idempotency_key":"{text}"}}"#
            ),
            format!(r#"{{"at":4,"input":"{fate}","turn":"t","child":"c"}}"#),
            r#"{"at":5,"input":"spawn","turn":"t","child":"m","kind":"model"}"#.to_owned(),
            r#"{"at":6,"input":"stop","turn":"t","request_id":"r"}"#.to_owned(),
            format!(r#"{{"at":7,"input":"checkpoint","turn":"t","child":"m","phase":"{text}"}}"#),
        ];
        let (mut m, mut mon) = explore::start(&<TurnMachine>::default);
        for line in &lines[..to] {
            let input: Input = serde_json::from_str(line).expect(line);
            let (steps, ok) = turnfence_checks::shared::take(&mut m, &input);
            assert!(ok, "refused: {line}");
            steps.iter().for_each(|s| drop(mon.observe(s)));
        }
        (m, mon)
    };
    let texts = ["k", "a-much-longer-text-than-k"];
    let fates = ["commit_acked", "commit_failed"];
    let stories: Vec<(&str, &str)> = texts.iter().flat_map(|&t| fates.map(|f| (t, f))).collect();
    for to in 2..=8 {
        for (&(a, fa), &(b, fb)) in stories
            .iter()
            .flat_map(|x| stories.iter().map(move |y| (x, y)))
            .filter(|(x, y)| x != y)
        {
            let (source, source_monitor) = story(a, fa, to);
            let (mut copy, mut copy_monitor) = story(b, fb, to);
            copy.clone_from(&source);
            copy_monitor.clone_from(&source_monitor);
            let (shown, monitor_shown) = (format!("{source:?}"), format!("{source_monitor:?}"));
            assert!(shown.contains(&format!("{a:?}")) && monitor_shown.contains(&format!("{a:?}")));
            assert_eq!(format!("{copy:?}"), shown, "the machine, {to} inputs");
            assert_eq!(
                format!("{copy_monitor:?}"),
                monitor_shown,
                "the monitor, {to} inputs"
            );
            assert_eq!(
                explore::fingerprint(&copy, &copy_monitor),
                explore::fingerprint(&source, &source_monitor)
            );
        }
    }
}

#[test]
fn a_state_copied_in_place_is_its_source() {
    use proptest::prelude::*;
    let seed = crate::seed();
    let walk = || proptest::collection::vec(any::<u8>(), 0..24);
    let choices = (0..8usize, walk(), walk());
    for (machine, copied) in [
        (
            "fence",
            copied_in_place_is_its_source::<FenceMachine> as fn(_) -> _,
        ),
        ("turn", copied_in_place_is_its_source::<TurnMachine>),
    ] {
        let result = crate::runner(seed).run(&choices, copied);
        if let Err(e) = result {
            panic!("{machine}: reproduce: TURNFENCE_SEED={seed} cargo test -p turnfence-checks --test it explore::a_state_copied\n{e}");
        }
    }
}
