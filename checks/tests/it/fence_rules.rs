//! The fence machine's rules of its own, one at a time: its flat set, its limits on workers and
//! tasks, the token a request takes, ids normalized and validated.

use std::collections::BTreeSet;

use crate::fence::record;
use proptest::prelude::*;
use proptest::sample::select;
use turnfence_model::fence;
use turnfence_model::fence::{Action, EndOutcome, FenceMachine, Path as Route, Status};
use turnfence_model::prelude::*;

/// `fence::Set`, the flat set the machines' states keep, is a set: after any sequence of
/// inserts and removes it holds, answers, counts, iterates (in order) and serializes what a
/// B-tree set given the same sequence does, and each insert and remove says what it did.
#[test]
fn a_flat_set_is_a_set() {
    let seed = crate::seed();
    let ops = proptest::collection::vec((any::<bool>(), 0u8..6), 0..40);
    let result = crate::runner(seed).run(&ops, |ops| {
        let mut flat = fence::Set::new();
        let mut tree = BTreeSet::new();
        for (insert, v) in ops {
            let v = format!("id-{v}");
            if insert {
                prop_assert_eq!(
                    flat.insert(fence::Id::from(v.as_str())),
                    tree.insert(v.clone())
                );
            } else {
                prop_assert_eq!(flat.remove(v.as_str()), tree.remove(&v));
            }
            prop_assert_eq!(flat.len(), tree.len());
            prop_assert_eq!(flat.is_empty(), tree.is_empty());
            for probe in 0u8..6 {
                let probe = format!("id-{probe}");
                prop_assert_eq!(flat.contains(probe.as_str()), tree.contains(&probe));
            }
            let listed: Vec<&str> = flat.iter().map(|i| i.as_str()).collect();
            prop_assert!(listed.iter().copied().eq(tree.iter().map(String::as_str)));
            prop_assert_eq!(
                serde_json::to_value(&flat).unwrap(),
                serde_json::to_value(&tree).unwrap()
            );
            let collected: fence::Set<fence::Id> =
                tree.iter().map(|s| fence::Id::from(s.as_str())).collect();
            prop_assert_eq!(&collected, &flat);
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("reproduce: TURNFENCE_SEED={seed} cargo test -p turnfence-checks --test it fence::a_flat_set\n{e}");
    }
}

/// One input taken by the machine at `at`, its outputs drained: what it answered.
fn take(m: &mut FenceMachine, at: u64, kind: fence::InputKind) -> Result<(), fence::Misuse> {
    let r = m.handle(&fence::Input::new(at, kind));
    while m.poll_output().is_some() {}
    r
}

/// The `n`th request id: 32 hex digits.
fn req_id(n: u32) -> fence::Id {
    format!("{n:032x}").into()
}

/// What the fence machine holds is bounded, and reaching a bound is a typed misuse that changes
/// nothing: the last worker and the last task within the limits are taken, the next of each is
/// refused with `LimitReached` naming what is full.
#[test]
fn the_fence_machine_refuses_a_worker_or_task_past_its_limit() {
    let worker = |i: usize| fence::InputKind::WorkerStart {
        worker: format!("w{i:05}").into(),
        path: Route::Direct,
        task: format!("t{i:05}").into(),
        root: "root-a".into(),
    };
    let mut m = FenceMachine::new();
    for i in 0..fence::MAX_WORKERS {
        take(&mut m, 0, worker(i)).unwrap_or_else(|e| panic!("worker {i}: {e}"));
    }
    let before = m.state().clone();
    assert_eq!(
        take(&mut m, 0, worker(fence::MAX_WORKERS)),
        Err(fence::Misuse::LimitReached {
            what: "workers",
            limit: fence::MAX_WORKERS
        })
    );
    assert_eq!(m.state(), &before, "a refused start changed the state");

    let task = |i: usize| fence::InputKind::Enqueue {
        task: format!("c{i:05}").into(),
        root: "root-a".into(),
    };
    let mut m = FenceMachine::new();
    for i in 0..fence::MAX_TASKS {
        take(&mut m, 0, task(i)).unwrap_or_else(|e| panic!("task {i}: {e}"));
    }
    assert_eq!(
        take(&mut m, 0, task(fence::MAX_TASKS)),
        Err(fence::Misuse::LimitReached {
            what: "tasks",
            limit: fence::MAX_TASKS
        })
    );
}

/// A begin is the one request that never goes by the loop's token: it names a token of its own,
/// fresh or re-adopted (a bound worker inspects instead). A begin naming none is refused
/// `NoToken`, bound or not, and changes nothing; an inspect or end naming none takes the bound
/// token, and with none bound only a revision's end takes the last seal's.
#[test]
fn a_request_naming_no_token_takes_the_loops_token_or_is_refused() {
    let mut m = FenceMachine::new();
    let start = fence::InputKind::WorkerStart {
        worker: "w".into(),
        path: Route::Direct,
        task: "root-a".into(),
        root: "root-a".into(),
    };
    take(&mut m, 0, start).expect("a worker starts");
    let begin = |token: Option<&str>, n| {
        fence::InputKind::request(
            "w".into(),
            Action::Begin,
            token.map(Into::into),
            req_id(n),
            None,
        )
    };
    assert_eq!(
        take(&mut m, 1, begin(None, 1)),
        Err(fence::Misuse::NoToken { worker: "w".into() }),
        "unbound"
    );
    take(&mut m, 2, begin(Some(&"a".repeat(32)), 2)).expect("a begin with a token");
    let bound = m.state().clone();
    assert_eq!(
        take(&mut m, 2, begin(None, 3)),
        Err(fence::Misuse::NoToken { worker: "w".into() }),
        "bound"
    );
    assert_eq!(m.state(), &bound, "a refused begin changed the state");
    let inspect = fence::InputKind::request("w".into(), Action::Inspect, None, req_id(4), None);
    take(&mut m, 4, inspect).expect("an inspect takes the bound token");
    // An end seals the root and drops the binding; then only a revision's end goes by the token
    // of the last seal (an owner follow-up un-seals the root): any other end naming none has no
    // token to send.
    let end = |outcome, n| {
        fence::InputKind::request("w".into(), Action::End, None, req_id(n), Some(outcome))
    };
    take(&mut m, 5, end(EndOutcome::Terminal, 5)).expect("an end takes the bound token");
    assert!(
        m.state()
            .workers
            .get("w")
            .is_some_and(|w| w.binding.is_none()),
        "an end drops the binding"
    );
    for outcome in [
        EndOutcome::Terminal,
        EndOutcome::AuthorStop,
        EndOutcome::Degraded,
    ] {
        assert_eq!(
            take(&mut m, 6, end(outcome, 6)),
            Err(fence::Misuse::NoToken { worker: "w".into() }),
            "{outcome:?} after the seal"
        );
    }
    take(&mut m, 6, end(EndOutcome::Revision, 6)).expect("a revision goes by the seal's token");
}

/// A row's owner is the task whose begin made it; a begin that carries the row's own token
/// (a re-send, or another task that came by the token) answers the row as it stands and gives it
/// no new owner. So the owner's own re-adoption with a fresh token later is no takeover, and the
/// other task's begin with a fresh token still is refused as foreign.
#[test]
fn a_begin_with_the_rows_own_token_leaves_its_owner() {
    let (a, c, d) = ("a".repeat(32), "c".repeat(32), "d".repeat(32));
    let start = |worker: &str, task: &str| fence::InputKind::WorkerStart {
        worker: worker.into(),
        path: Route::Direct,
        task: task.into(),
        root: "root-a".into(),
    };
    let begin = |worker: &str, token: &str, n| {
        fence::InputKind::request(
            worker.into(),
            Action::Begin,
            Some(token.into()),
            req_id(n),
            None,
        )
    };
    let inputs: Vec<fence::Input> = [
        start("w1", "root-a"),
        start("w2", "task-b"),
        begin("w1", &a, 1),
        begin("w2", &a, 2),
        begin("w1", &c, 3),
        begin("w2", &d, 4),
    ]
    .into_iter()
    .enumerate()
    .map(|(at, kind)| fence::Input::new(at as u64, kind))
    .collect();
    let steps = record(&mut FenceMachine::new(), &inputs);
    let broken = turnfence_model::check_all::<FenceMachine>(&steps);
    assert!(broken.is_empty(), "{broken:#?}\n{steps:#?}");
    let last = steps.last().map(|s| &s.outputs[..]).unwrap_or_default();
    assert!(
        last.iter().any(|o| matches!(
            o,
            fence::Output::Verdict {
                verdict: fence::Verdict::Refused {
                    status: Status::Active
                },
                ..
            }
        )),
        "the other task's fresh begin: {last:#?}"
    );
    assert!(
        turnfence_model::reached::<FenceMachine>(&steps)
            .contains(&fence::Invariant::ForeignBeginRefused),
        "{steps:#?}"
    );
}

/// The supervisor's id rules, as the fast paths of `normalized` and `valid_id` implement them,
/// are the rules as stated: trimmed of Unicode white space (`str::trim`) and lower-cased; valid
/// when 1–64 of `[0-9a-f]` remain. Ids drawn from hex digits, upper-case letters, other ASCII and
/// the white space at either end that a byte test alone would miss (vertical tab, no-break
/// space, the ideographic space).
#[test]
fn ids_are_normalized_and_validated_as_the_rules_say() {
    use turnfence_model::fence::table::{normalize, normalized, valid_id};
    let seed = crate::seed();
    let edge = select(vec![
        "", " ", "\t", "\u{b}", "\u{a0}", "\u{3000}", "\n", "x", "\u{e9}",
    ]);
    let body = proptest::collection::vec(
        select(vec![
            '0', '9', 'a', 'f', 'A', 'F', 'g', 'Z', '.', ' ', '\u{a0}', '\u{e9}',
        ]),
        0..70,
    );
    let result = crate::runner(seed).run(&(edge.clone(), body, edge), |(front, body, back)| {
        let id = format!("{front}{}{back}", body.iter().collect::<String>());
        let stated = id.trim().to_ascii_lowercase();
        prop_assert_eq!(normalized(&id).into_owned(), stated.clone());
        prop_assert_eq!(normalize(&id).to_string(), stated.clone());
        let valid = !stated.is_empty()
            && stated.chars().count() <= 64
            && stated.chars().all(|c| c.is_ascii_hexdigit());
        prop_assert_eq!(valid_id(&id), valid, "valid_id({:?})", id);
        Ok(())
    });
    if let Err(e) = result {
        panic!("reproduce: TURNFENCE_SEED={seed} cargo test -p turnfence-checks --test it fence::ids_are\n{e}");
    }
}

/// `fence::Id` is its string: built from a `&str`, a `String` or formatted in place, inline
/// (to 32 bytes) or not, it reads back, compares, orders, hashes, prints, serializes and
/// deserializes as the `str` it holds, and a clone is equal to it.
#[test]
fn a_fence_id_is_its_string() {
    use std::hash::{BuildHasher, BuildHasherDefault};
    type H = BuildHasherDefault<std::collections::hash_map::DefaultHasher>;
    let seed = crate::seed();
    let text = proptest::collection::vec(select(vec!['a', 'f', '0', '9', '-', '\u{e9}']), 0..40)
        .prop_map(|cs| cs.into_iter().collect::<String>());
    let result = crate::runner(seed).run(&(text.clone(), text), |(a, b)| {
        for (s, id) in [
            (&a, fence::Id::from(a.as_str())),
            (&a, fence::Id::from(a.clone())),
            (&a, fence::Id::format(format_args!("{a}"))),
            (&b, fence::Id::from(b.as_str())),
        ] {
            prop_assert_eq!(id.as_str(), s.as_str());
            prop_assert_eq!(&*id, s.as_str());
            prop_assert_eq!(id.clone(), fence::Id::from(s.as_str()));
            prop_assert!(id == *s.as_str() && id == s.as_str() && id == *s);
            prop_assert_eq!(
                H::default().hash_one(&id),
                H::default().hash_one(s.as_str())
            );
            prop_assert_eq!(format!("{id} {id:?}"), format!("{s} {s:?}"));
            let json = serde_json::to_string(&id).unwrap();
            prop_assert_eq!(&json, &serde_json::to_string(s).unwrap());
            let back: fence::Id = serde_json::from_str(&json).unwrap();
            prop_assert_eq!(back.as_str(), s.as_str());
            let owned: fence::Id = serde_json::from_value(s.as_str().into()).unwrap();
            prop_assert_eq!(owned.as_str(), s.as_str());
        }
        let (x, y) = (fence::Id::from(a.as_str()), fence::Id::from(b.as_str()));
        prop_assert_eq!(x.cmp(&y), a.cmp(&b));
        prop_assert_eq!(x == y, a == b);
        // An id equals a string exactly when its text is that string.
        prop_assert_eq!(x == *b.as_str(), a == b);
        prop_assert_eq!(x == b.as_str(), a == b);
        prop_assert_eq!(x == b, a == b);
        prop_assert!(fence::Id::default().is_empty());
        let not_a_string = serde_json::from_str::<fence::Id>("5")
            .unwrap_err()
            .to_string();
        prop_assert!(
            not_a_string.contains("expected a string"),
            "{}",
            not_a_string
        );
        Ok(())
    });
    if let Err(e) = result {
        panic!("reproduce: TURNFENCE_SEED={seed} cargo test -p turnfence-checks --test it fence::a_fence_id\n{e}");
    }
}
