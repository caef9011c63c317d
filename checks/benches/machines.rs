//! Model steps/s per machine and explorer states/s, with criterion.
//!
//! Run: `cargo bench -p turnfence-checks --bench machines`.

/// The allocator the `turnfence` binary runs on: a benchmark measures what the command costs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use turnfence_checks::explore::{self, Explore};
use turnfence_checks::fuzz::{self, Fuzz};
use turnfence_model::fence::FenceMachine;
use turnfence_model::turn::TurnMachine;

/// Inputs of 50 generated cases, replayed on a fresh machine each: the machine's own cost, a step
/// being one input handled and its outputs drained (`steps`), and the same with each step recorded
/// as the checkers record it, the input cloned into a [`Step`](turnfence_model::Step) beside
/// its outputs (`recorded_steps`).
fn steps<M: Fuzz>(c: &mut Criterion, make: &dyn Fn() -> M) {
    let cases: Vec<Vec<M::Input>> = (0..50)
        .map(|i| fuzz::generate::<M>(fuzz::case_seed(1, i), 200, make).inputs)
        .collect();
    let n: usize = cases.iter().map(Vec::len).sum();
    let mut g = c.benchmark_group(format!("{}_machine", M::NAME));
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("steps", |b| {
        b.iter(|| {
            for case in &cases {
                let mut m = make();
                for input in case {
                    let _ = m.handle(input);
                    while m.poll_output().is_some() {}
                }
            }
        })
    });
    g.bench_function("recorded_steps", |b| {
        b.iter(|| {
            for case in &cases {
                let mut m = make();
                for input in case {
                    let _ = turnfence_checks::shared::take(&mut m, input);
                }
            }
        })
    });
    g.finish();
}

fn machines(c: &mut Criterion) {
    steps::<TurnMachine>(c, &TurnMachine::new);
    steps::<FenceMachine>(c, &FenceMachine::new);
}

fn explorer(c: &mut Criterion) {
    let bounds = <TurnMachine>::ci_bounds()
        .into_iter()
        .find(|(n, _)| *n == "children")
        .map(|(_, b)| b)
        .unwrap();
    let states = explore::exhaustive::<TurnMachine>(&TurnMachine::new, &bounds).states;
    let mut g = c.benchmark_group("explorer");
    g.throughput(Throughput::Elements(states as u64));
    g.sample_size(10);
    g.bench_function("turn_children_bounds", |b| {
        b.iter(|| explore::exhaustive::<TurnMachine>(&TurnMachine::new, &bounds))
    });
    // The same bounds up to respawns of a turn's children (`--symmetry`): one state per class,
    // its throughput still counted in the full run's states, so the two read as time to verdict.
    let on = <TurnMachine>::with_symmetry(&bounds).unwrap();
    g.bench_function("turn_children_bounds_symmetry", |b| {
        b.iter(|| explore::exhaustive::<TurnMachine>(&TurnMachine::new, &on))
    });
    g.finish();
}

criterion_group!(benches, machines, explorer);
criterion_main!(benches);
