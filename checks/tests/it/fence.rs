//! The fence machine: the seed's tests and the research's as accepted fixtures (checked by the
//! data-driven fixture test), every historical bug as a rejected one, planted flaws caught by the
//! invariants, random runs that never panic and keep every invariant.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::{fixtures, read, unreached};

use proptest::prelude::*;
use proptest::sample::select;
use turnfence_checks::trace::canonical::write_fence;
use turnfence_model::fence;
use turnfence_model::fence::{
    Action, EndOutcome, FenceMachine, FenceSnapshot, Path as Route, SnapshotRow, SnapshotTask,
    Status,
};
use turnfence_model::prelude::*;
use turnfence_model::Plant;

fn fence_fixtures(dir: &str) -> Vec<PathBuf> {
    let mut files = fixtures(dir);
    files.retain(|p| p.to_string_lossy().contains("_fence_"));
    files
}

/// The inputs of a canonical fence trace.
fn inputs_of(path: &Path) -> Vec<fence::Input> {
    read(path)
        .lines()
        .skip(1)
        .filter_map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).ok()?;
            v.get("input")?;
            v.as_object_mut()?.remove("session");
            serde_json::from_value(v).ok()
        })
        .collect()
}

pub(crate) fn record(
    machine: &mut FenceMachine<impl Plant<fence::Flaw>>,
    inputs: &[fence::Input],
) -> Vec<fence::Step> {
    let mut steps = Vec::new();
    for i in inputs {
        let _ = turnfence_model::step(machine, i, &mut steps);
    }
    steps
}

fn meta_invariant(path: &Path) -> Option<String> {
    crate::fixture(&read(path))["invariant"]
        .as_str()
        .map(str::to_owned)
}

/// Every fence invariant has a rejected fixture naming it, and every historical bug of SPEC §4
/// (1–10) has its own.
#[test]
fn every_fence_invariant_and_historical_bug_has_a_rejected_fixture() {
    let rejected = fence_fixtures("rejected");
    let named: BTreeSet<String> = rejected.iter().filter_map(|p| meta_invariant(p)).collect();
    for i in fence::Invariant::ALL {
        assert!(
            named.contains(i.name()),
            "no rejected fixture for {}",
            i.name()
        );
    }
    for bug in 1..=10 {
        let prefix = format!("_fence_bug{bug}_");
        assert!(
            rejected
                .iter()
                .any(|p| p.to_string_lossy().contains(&prefix)),
            "no fixture for historical bug {bug}"
        );
    }
}

/// The correct machine, run on the inputs of every fence fixture, breaks nothing; together the
/// accepted ones put every invariant to the test.
#[test]
fn the_fence_model_keeps_every_invariant_on_the_fixtures_and_reaches_them_all() {
    let mut reached = BTreeSet::new();
    for path in fence_fixtures("accepted")
        .into_iter()
        .chain(fence_fixtures("rejected"))
    {
        let steps = record(&mut FenceMachine::new(), &inputs_of(&path));
        let violations = turnfence_model::check_all::<FenceMachine>(&steps);
        assert!(violations.is_empty(), "{}: {violations:#?}", path.display());
        if path.to_string_lossy().contains("accepted") {
            reached.extend(turnfence_model::reached::<FenceMachine>(&steps));
        }
    }
    let missing = unreached(&reached);
    assert!(missing.is_empty(), "never put to the test: {missing:?}");
}

/// Each planted flaw, run on the fixtures' inputs, breaks the invariant it names.
#[test]
fn every_fence_flaw_is_caught_naming_its_invariant() {
    let all: Vec<Vec<fence::Input>> = fence_fixtures("accepted")
        .into_iter()
        .chain(fence_fixtures("rejected"))
        .map(|p| inputs_of(&p))
        .collect();
    let mut table = String::new();
    for &flaw in fence::Flaw::ALL {
        let mut broken = BTreeSet::new();
        for inputs in &all {
            let steps = record(&mut FenceMachine::with_flaw(flaw), inputs);
            broken.extend(
                turnfence_model::check_all::<FenceMachine>(&steps)
                    .into_iter()
                    .map(|v| v.invariant.name()),
            );
        }
        assert!(
            broken.contains(flaw.breaks().name()),
            "{flaw:?}: expected {} broken, got {broken:?}",
            flaw.breaks().name()
        );
        let list: Vec<&str> = broken.into_iter().collect();
        table.push_str(&format!("{flaw:?}: {}\n", list.join(", ")));
    }
    crate::snapshot_settings().bind(|| insta::assert_snapshot!("fence_flaws_caught", table));
}

/// Each planted historical bug is that bug: replaying the inputs of a rejected fixture of bug N
/// (SPEC §4, 1–10) with flaw N planted breaks the flaw's invariant. Caught on some fixture is not
/// enough — a flaw that drifted to a neighbouring bug (bug 9's `released` read as a seal on a
/// revision's end instead of a terminal one) still breaks its invariant somewhere.
#[test]
fn each_historical_bug_is_reproduced_by_its_own_flaw_on_its_own_fixture() {
    let rejected = fence_fixtures("rejected");
    // The flaws list the ten historical bugs first, in their order.
    for (bug, &flaw) in (1..=10).zip(fence::Flaw::ALL) {
        let prefix = format!("_fence_bug{bug}_");
        let reproduced = rejected
            .iter()
            .filter(|p| p.to_string_lossy().contains(&prefix))
            .any(|p| {
                let steps = record(&mut FenceMachine::with_flaw(flaw), &inputs_of(p));
                turnfence_model::check_all::<FenceMachine>(&steps)
                    .iter()
                    .any(|v| v.invariant == flaw.breaks())
            });
        assert!(
            reproduced,
            "{flaw:?} breaks {} on no fixture of bug {bug}",
            flaw.breaks().name()
        );
    }
}

/// Every accepted fence scenario's whole trace, as the model produces it, is reviewed.
#[test]
fn fence_scenario_traces_snapshots() {
    let mut traces = Vec::new();
    for path in fence_fixtures("accepted") {
        let steps = record(&mut FenceMachine::new(), &inputs_of(&path));
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        if stem.contains("ack_compaction") {
            continue; // 1 800 lines of the same three steps; its fixture is its record.
        }
        traces.push((stem, write_fence("s", &steps)));
    }
    crate::snapshot_settings().bind(|| {
        for (stem, trace) in traces {
            insta::assert_snapshot!(format!("trace_{stem}"), trace);
        }
    });
}

fn id(options: &'static [&'static str]) -> impl Strategy<Value = fence::Id> {
    select(options).prop_map(fence::Id::from)
}

fn fence_kind() -> impl Strategy<Value = fence::InputKind> {
    let request = (
        id(&["w0", "w1", "w2"]),
        prop_oneof![
            Just(Action::Begin),
            Just(Action::Inspect),
            Just(Action::End),
            Just(Action::Invalid)
        ],
        prop::option::of(id(&["aa", "bb", "cc", "", "../x", "AB"])),
        id(&["01", "02", "03", "04", "", "zz", "../e"]),
        prop::option::of(prop_oneof![
            Just(EndOutcome::Revision),
            Just(EndOutcome::Terminal),
            Just(EndOutcome::AuthorStop)
        ]),
        prop::option::of(0u64..3),
    )
        .prop_map(
            |(worker, action, token, req, outcome, expected_generation)| {
                fence::InputKind::Request {
                    worker,
                    action,
                    token,
                    req,
                    outcome,
                    expected_generation,
                    root: None,
                    task: None,
                }
            },
        );
    let start = (
        id(&["w0", "w1", "w2"]),
        any::<bool>(),
        id(&["r0", "r1", "t9"]),
        id(&["r0", "r1"]),
    )
        .prop_map(
            |(worker, direct, task, root)| fence::InputKind::WorkerStart {
                worker,
                path: if direct { Route::Direct } else { Route::Pooled },
                task,
                root,
            },
        );
    let restore = (
        any::<bool>(),
        prop::collection::vec((id(&["c0", "c1"]), id(&["r0", "r1"])), 0..3),
    )
        .prop_map(|(malformed, pending)| fence::InputKind::Restore {
            fences: if malformed {
                FenceSnapshot::Malformed("x".into())
            } else {
                FenceSnapshot::Rows(vec![SnapshotRow {
                    root: "r0".into(),
                    status: Status::Sealed,
                }])
            },
            pending: pending
                .into_iter()
                .map(|(task, root)| SnapshotTask { task, root })
                .collect(),
        });
    prop_oneof![
        2 => start,
        6 => request,
        4 => any::<bool>().prop_map(|lose_ack| fence::InputKind::SupervisorStep { lose_ack }),
        1 => Just(fence::InputKind::DropEvent),
        3 => Just(fence::InputKind::Tick),
        2 => id(&["r0", "r1"]).prop_map(|root| fence::InputKind::OwnerMessage { root }),
        1 => id(&["r0", "r1", "t9"]).prop_map(|task| fence::InputKind::TaskDone { task }),
        2 => (id(&["c0", "c1", "c2"]), id(&["r0", "r1"])).prop_map(|(task, root)| fence::InputKind::Enqueue { task, root }),
        1 => restore,
    ]
}

fn fence_inputs() -> impl Strategy<Value = Vec<fence::Input>> {
    prop::collection::vec(
        (prop_oneof![0u64..50, 9_000u64..11_000], fence_kind()),
        1..120,
    )
    .prop_map(|steps| {
        let mut at = 0;
        steps
            .into_iter()
            .map(|(dt, kind)| {
                at += dt;
                fence::Input::new(at, kind)
            })
            .collect()
    })
}

#[test]
fn the_fence_machine_never_panics_and_keeps_every_invariant() {
    let seed = crate::seed();
    let result = crate::runner(seed).run(&fence_inputs(), |inputs| {
        let mut m = FenceMachine::new();
        let mut steps = Vec::new();
        for input in &inputs {
            let before = m.clone();
            if let Err(misuse) = turnfence_model::step(&mut m, input, &mut steps) {
                prop_assert!(!misuse.to_string().is_empty());
                let mut ticked = before;
                let _ = ticked.advance_to(input.at);
                prop_assert_eq!(m.state(), ticked.state(), "misuse {} changed state", misuse);
            }
            let json = serde_json::to_string(input).unwrap();
            prop_assert_eq!(&serde_json::from_str::<fence::Input>(&json).unwrap(), input);
        }
        let violations = turnfence_model::check_all::<FenceMachine>(&steps);
        prop_assert!(violations.is_empty(), "{:#?}", violations);
        Ok(())
    });
    if let Err(e) = result {
        panic!("reproduce: TURNFENCE_SEED={seed} cargo test -p turnfence-checks --test it fence::\n{e}");
    }
}

/// Both ways `foreign_begin_refused` is put to the test each reach it on their own: a foreign
/// begin refused (the table's transport suite) and a re-adoption by the root's own task with a
/// new token (the lost-token recovery). One reaching it must not hide the other missing.
#[test]
fn foreign_begin_refused_is_reached_by_a_refusal_and_by_a_readoption() {
    for name in [
        "0102_fence_foreign_begin_refused.jsonl",
        "0100_fence_lost_token_readopts_live_fence.jsonl",
    ] {
        let path = fence_fixtures("accepted")
            .into_iter()
            .find(|p| p.ends_with(name))
            .unwrap_or_else(|| panic!("no fixture {name}"));
        let steps = record(&mut FenceMachine::new(), &inputs_of(&path));
        let reached = turnfence_model::reached::<FenceMachine>(&steps);
        assert!(
            reached.contains(&fence::Invariant::ForeignBeginRefused),
            "{name} does not put foreign_begin_refused to the test"
        );
    }
}
