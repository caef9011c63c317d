//! The concurrency adapter over threads: under loom (`ci/loom.sh`, `--cfg loom`) every
//! interleaving within the preemption bound; otherwise as a stress test on std threads. Each
//! scenario checks what the threads observed is a legal trace of the model (conformance, not
//! only assertions); each planted variant is caught by loom.

use turnfence_checks::adapter::turn::{conformance, TurnAdapter, Variant};
use turnfence_checks::sync::thread;
use turnfence_model::turn::StopAnswer;

/// Runs a scenario under loom's model checker, or 200 times on std threads.
fn model(f: impl Fn() + Sync + Send + 'static) {
    #[cfg(loom)]
    {
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = Some(loom_bound());
        builder.check(f);
    }
    #[cfg(not(loom))]
    for _ in 0..200 {
        f();
    }
}

/// The preemption bound: `LOOM_MAX_PREEMPTIONS` (ci/loom.sh sets 2), else 2.
#[cfg(loom)]
fn loom_bound() -> usize {
    #[allow(clippy::disallowed_methods)] // The bound is the gate's to name.
    let v = std::env::var("LOOM_MAX_PREEMPTIONS");
    v.ok().and_then(|v| v.parse().ok()).unwrap_or(2)
}

fn conforms(adapter: &TurnAdapter) {
    let verdict = conformance(&adapter.record());
    assert!(
        verdict.conforms(),
        "{:#?}\n{:#?}",
        adapter.record(),
        verdict.findings
    );
}

/// 1. A delta racing a stop is never delivered after the stop is answered.
fn stop_vs_stream(variant: Variant) {
    let a = TurnAdapter::new(variant);
    a.delta(1);
    let (stream, client) = (a.clone(), a.clone());
    let t1 = thread::spawn(move || stream.delta(2));
    let t2 = thread::spawn(move || {
        client.stop("r1");
    });
    t1.join().unwrap();
    t2.join().unwrap();
    conforms(&a);
}

/// 2. A frame of the old generation racing the buffer clear is never played after the clear.
fn barge_in_vs_playback(variant: Variant) {
    let a = TurnAdapter::new(variant);
    a.delta(1);
    a.delta(2);
    let (speaker, vad) = (a.clone(), a.clone());
    let t1 = thread::spawn(move || speaker.play());
    let t2 = thread::spawn(move || vad.speech());
    t1.join().unwrap();
    t2.join().unwrap();
    conforms(&a);
}

/// 3. Two clients stopping at once: one cancel effect, both answered with the same state.
fn two_stops(variant: Variant) {
    let a = TurnAdapter::new(variant);
    let (c1, c2) = (a.clone(), a.clone());
    let t1 = thread::spawn(move || c1.stop("r1"));
    let t2 = thread::spawn(move || c2.stop("r2"));
    let answers = [t1.join().unwrap(), t2.join().unwrap()];
    let effects = answers
        .iter()
        .filter(|x| **x == Some(StopAnswer::Requested))
        .count();
    assert_eq!(effects, 1, "{answers:?}");
    conforms(&a);
}

/// 4. A child registered while its parent is being cancelled ends cancelled, never runs.
fn spawn_vs_cancel(variant: Variant) {
    let a = TurnAdapter::new(variant);
    let (planner, client) = (a.clone(), a.clone());
    let t1 = thread::spawn(move || planner.tool("c1"));
    let t2 = thread::spawn(move || {
        client.stop("r1");
    });
    t1.join().unwrap();
    t2.join().unwrap();
    conforms(&a);
}

#[test]
fn adapter_stop_vs_stream() {
    model(|| stop_vs_stream(Variant::Correct));
}

#[test]
fn adapter_barge_in_vs_playback() {
    model(|| barge_in_vs_playback(Variant::Correct));
}

#[test]
fn adapter_two_stops() {
    model(|| two_stops(Variant::Correct));
}

#[test]
fn adapter_spawn_vs_cancel() {
    model(|| spawn_vs_cancel(Variant::Correct));
}

/// Each planted variant is caught: some interleaving breaks conformance or the scenario's
/// assertion. Only loom can promise to find it; std threads might not hit the window.
#[cfg(loom)]
mod planted {
    use super::*;

    fn caught(f: impl Fn() + Sync + Send + 'static) {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| model(f)));
        assert!(
            result.is_err(),
            "loom found no interleaving that shows the planted variant"
        );
    }

    #[test]
    fn adapter_planted_deliver_after_stale_check() {
        caught(|| stop_vs_stream(Variant::DeliverAfterStaleCheck));
    }

    #[test]
    fn adapter_planted_play_peeked_frame() {
        caught(|| barge_in_vs_playback(Variant::PlayPeekedFrame));
    }

    #[test]
    fn adapter_planted_stop_flag_check_then_set() {
        caught(|| two_stops(Variant::StopFlagCheckThenSet));
    }

    #[test]
    fn adapter_planted_cancel_flag_read_before_registering() {
        caught(|| spawn_vs_cancel(Variant::CancelFlagReadBeforeRegistering));
    }
}

/// Sequentially, the adapter is the model: the same inputs give the same outputs.
#[cfg(not(loom))]
#[test]
fn adapter_sequential_runs_match_the_model() {
    use proptest::prelude::*;
    use turnfence_model::turn::{self as model, TurnMachine};

    let ops = prop::collection::vec(0u8..6, 1..40);
    let seed = crate::seed();
    let result = crate::runner(seed).run(&ops, |ops| {
        let a = TurnAdapter::new(Variant::Correct);
        let (mut seq, mut tools) = (0, 0);
        for op in ops {
            match op {
                1 => {
                    a.stop("r");
                }
                2 => a.speech(),
                3 => a.play(),
                4 => {
                    tools += 1;
                    a.tool(&format!("c{tools}"))
                }
                _ => {
                    seq += 1;
                    a.delta(seq)
                }
            }
        }
        let record = a.record();
        let mut m = TurnMachine::new();
        for o in &record {
            let mut steps = Vec::new();
            let taken = model::step(&mut m, &o.input, &mut steps).is_ok();
            let outputs: Vec<_> = steps.into_iter().flat_map(|s| s.outputs).collect();
            let told: Vec<_> = if taken { outputs } else { Vec::new() };
            prop_assert_eq!(&told, &o.told);
        }
        prop_assert!(conformance(&record).conforms());
        Ok(())
    });
    if let Err(e) = result {
        panic!("reproduce: TURNFENCE_SEED={seed}\n{e}");
    }
}
