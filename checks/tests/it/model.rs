//! The turn machine under random input sequences: it never panics, a refused input changes
//! nothing but the clock, and the correct model keeps every invariant.

use proptest::prelude::*;
use proptest::sample::select;
use turnfence_model::prelude::*;
use turnfence_model::turn::{
    Budget, ChildId, ChildKind, Input, InputKind, Mode, Step, TurnId, TurnMachine,
};

fn name(options: &'static [&'static str]) -> impl Strategy<Value = String> {
    select(options).prop_map(str::to_owned)
}

fn turn() -> impl Strategy<Value = TurnId> {
    name(&["t0", "t1", "t2"]).prop_map(TurnId::from)
}

fn child() -> impl Strategy<Value = ChildId> {
    name(&["c0", "c1", "c2"]).prop_map(ChildId::from)
}

fn kind() -> impl Strategy<Value = ChildKind> {
    prop_oneof![
        Just(ChildKind::Retrieval),
        Just(ChildKind::Model),
        Just(ChildKind::Tts),
        any::<bool>().prop_map(|cancellable| ChildKind::Tool {
            name: "tool".into(),
            cancellable
        }),
    ]
}

/// Small numbers mostly, and the extremes sometimes: overflow is a panic too.
fn number() -> impl Strategy<Value = u64> {
    prop_oneof![8 => 0u64..6, 1 => Just(u64::MAX), 1 => Just(u64::MAX - 1)]
}

fn input_kind() -> impl Strategy<Value = InputKind> {
    let accept = (
        turn(),
        number(),
        any::<bool>(),
        prop::option::of(prop_oneof![0u64..200, Just(u64::MAX)]),
        0u64..40,
    )
        .prop_map(
            |(turn, generation, audio, deadline_ms, split)| InputKind::Accept {
                turn,
                generation,
                mode: if audio { Mode::Audio } else { Mode::Text },
                deadline_ms,
                budget: deadline_ms.filter(|_| split > 20).map(|d| Budget {
                    retrieval_ms: d / 4,
                    model_ms: d / 2,
                    reserve_ms: split.min(d / 4),
                }),
                interruptible: true,
            },
        );
    let spawn = (turn(), child(), kind(), prop::option::of(0u64..80)).prop_map(
        |(turn, child, kind, need_ms)| InputKind::Spawn {
            turn,
            child,
            kind,
            need_ms,
            timeout_ms: None,
        },
    );
    let checkpoint = (turn(), child(), name(&["a", "b"]), 0u32..3).prop_map(
        |(turn, child, phase, temporary_outputs)| InputKind::Checkpoint {
            turn,
            child,
            phase,
            temporary_outputs,
        },
    );
    let delta = (
        turn(),
        number(),
        number(),
        prop::option::of(name(&["x", "y "])),
        0u32..3,
    )
        .prop_map(|(turn, generation, seq, text, frames)| InputKind::Delta {
            turn,
            generation,
            seq,
            text,
            frames,
        });
    let commit =
        (turn(), child(), name(&["k1", "k2"])).prop_map(|(turn, child, idempotency_key)| {
            InputKind::CommitSent {
                turn,
                child,
                idempotency_key,
            }
        });
    prop_oneof![
        3 => accept,
        3 => spawn,
        2 => (turn(), child()).prop_map(|(turn, child)| InputKind::ChildCompleted { turn, child }),
        3 => checkpoint,
        5 => delta,
        2 => turn().prop_map(|turn| InputKind::ModelDone { turn }),
        2 => Just(InputKind::FRAME_PLAYED),
        3 => (turn(), name(&["r0", "r1"])).prop_map(|(turn, request_id)| InputKind::Stop { turn, request_id }),
        2 => ((0.0f64..1.0), proptest::option::of(0u64..10_000))
            .prop_map(|(confidence, since)| InputKind::SpeechStarted { confidence, since }),
        2 => commit,
        1 => (turn(), child()).prop_map(|(turn, child)| InputKind::CommitAcked { turn, child }),
        1 => (turn(), child()).prop_map(|(turn, child)| InputKind::CommitFailed { turn, child }),
        2 => Just(InputKind::Tick),
        1 => number().prop_map(|seq| InputKind::ClientAck { seq }),
        1 => Just(InputKind::Disconnect),
        1 => number().prop_map(|after_seq| InputKind::Resume { after_seq }),
        2 => number().prop_map(|seq| InputKind::ClientReceive { seq }),
    ]
}

/// Sequences with time mostly moving forward, sometimes backwards (a misuse the model refuses).
fn inputs() -> impl Strategy<Value = Vec<Input>> {
    prop::collection::vec((0u64..40, any::<u8>(), input_kind()), 1..120).prop_map(|steps| {
        let mut at = 0u64;
        steps
            .into_iter()
            .map(|(dt, back, kind)| {
                at = if back < 4 {
                    at.saturating_sub(dt)
                } else {
                    at + dt
                };
                Input::new(at, kind)
            })
            .collect()
    })
}

/// A machine that accepted a text turn `t` at 0 ms, with no deadline or budget.
pub(crate) fn text_turn_t_accepted() -> TurnMachine {
    let mut m = TurnMachine::new();
    let accept = InputKind::Accept {
        turn: "t".into(),
        generation: 1,
        mode: Mode::Text,
        deadline_ms: None,
        budget: None,
        interruptible: true,
    };
    m.handle(&Input::new(0, accept)).unwrap();
    m
}

pub(crate) fn drain(m: &mut TurnMachine) -> Vec<turnfence_model::turn::Output> {
    std::iter::from_fn(|| m.poll_output()).collect()
}

/// Runs inputs, skipping refused ones, and records the steps.
pub(crate) fn record(inputs: &[Input]) -> Vec<Step> {
    let mut m = TurnMachine::new();
    let mut steps = Vec::new();
    for input in inputs {
        let _ = turnfence_model::step(&mut m, input, &mut steps);
    }
    steps
}

pub(crate) fn fail_with_seed(seed: u64, what: &str, detail: String) -> ! {
    panic!("{what}\nreproduce: TURNFENCE_SEED={seed} cargo test -p turnfence-checks --test it model::\n{detail}")
}

#[test]
fn model_never_panics_and_misuse_changes_only_the_clock() {
    let seed = crate::seed();
    let result = crate::runner(seed).run(&inputs(), |inputs| {
        let mut m = TurnMachine::new();
        for input in &inputs {
            // A refused input must leave the machine exactly as letting time pass would.
            let mut ticked = m.clone();
            let _ = ticked.handle(&Input::new(input.at.max(m.session().now), InputKind::Tick));
            let expected = drain(&mut ticked);
            match m.handle(input) {
                Ok(()) => {
                    drain(&mut m);
                }
                Err(misuse) => {
                    prop_assert!(!misuse.to_string().is_empty());
                    prop_assert_eq!(
                        m.session(),
                        ticked.session(),
                        "misuse {} changed state",
                        misuse
                    );
                    prop_assert_eq!(drain(&mut m), expected);
                }
            }
            // Every input survives the canonical JSON form.
            let json = serde_json::to_string(input).unwrap();
            prop_assert_eq!(&serde_json::from_str::<Input>(&json).unwrap(), input);
        }
        Ok(())
    });
    if let Err(e) = result {
        fail_with_seed(seed, "the turn machine misbehaved", format!("{e}"));
    }
}

#[test]
fn the_model_keeps_every_invariant_on_random_runs() {
    let seed = crate::seed();
    let result = crate::runner(seed).run(&inputs(), |inputs| {
        let steps = record(&inputs);
        let violations = turnfence_model::check_all::<TurnMachine>(&steps);
        prop_assert!(violations.is_empty(), "{:#?}", violations);
        Ok(())
    });
    if let Err(e) = result {
        fail_with_seed(seed, "the correct model broke an invariant", format!("{e}"));
    }
}
