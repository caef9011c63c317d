//! Random event sequences for both machines, their shrinking, and counterexample reports.
//!
//! One `u64` seed makes one case: a ChaCha8 stream (rand_chacha) first draws the case's own
//! fault mix (swarm testing: ack-loss rate, stall lengths around the 10 s wait, stop and barge-in
//! rates, …), then a sequence of inputs, each chosen against the machine's current state so that
//! it is mostly meaningful (a stop names an existing turn, a supervisor step finds an event).
//! proptest drives the cases (`CaseStrategy`) and shrinks a failing one by removing inputs;
//! replaying a shrunk sequence skips the inputs that became misuse, which keeps every shrunk
//! sequence a legal run. The same seed gives the same case, the same shrinking and the same
//! bytes in the report.
//!
//! Why two random sources: proptest's own `TestRng` (rand 0.9 line) only picks each case's `u64`
//! seed; everything inside a case comes from rand_chacha 0.10 seeded by it, so a case is
//! reproducible from its seed alone (`turnfence fuzz --seed S --cases 1`), outside proptest.

pub mod fence_gen;
pub mod report;
pub mod strategy;
pub mod turn_gen;

use std::collections::{BTreeMap, BTreeSet};

use rand_chacha::rand_core::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use turnfence_model::{Machine, Millis, Monitor, Step, StepOf, Violation};

use crate::shared::take;

/// A case's fault mix: each case draws its own, so some cases lose half their acks and others
/// none (swarm testing). Percentages are per eligible step.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultMix {
    pub ack_loss_pct: u32,
    pub event_drop_pct: u32,
    /// How long a stalled supervisor stays silent, around the 10 000 ms wait.
    pub stall_ms: Millis,
    pub stall_pct: u32,
    pub stop_pct: u32,
    pub barge_in_pct: u32,
    pub late_delta_pct: u32,
    pub disconnect_pct: u32,
    pub duplicate_pct: u32,
    pub owner_message_pct: u32,
}

/// The random source of one case.
pub struct Gen {
    rng: ChaCha8Rng,
}

impl Gen {
    pub fn new(seed: u64) -> Gen {
        Gen {
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    pub fn u64(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// A number in `lo..hi` (`lo` when the range is empty).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            lo
        } else {
            lo + self.u64() % (hi - lo)
        }
    }

    pub fn chance(&mut self, pct: u32) -> bool {
        self.range(0, 100) < u64::from(pct)
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            None
        } else {
            items.get(self.range(0, items.len() as u64) as usize)
        }
    }

    /// Picks an index by weight.
    pub fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u64 = weights.iter().map(|w| u64::from(*w)).sum();
        let mut x = self.range(0, total.max(1));
        for (i, w) in weights.iter().enumerate() {
            let w = u64::from(*w);
            if x < w {
                return i;
            }
            x -= w;
        }
        0
    }

    /// A 32-digit hex id.
    pub fn hex(&mut self) -> String {
        format!("{:016x}{:016x}", self.u64(), self.u64())
    }

    /// The case's fault mix.
    pub fn mix(&mut self) -> FaultMix {
        FaultMix {
            ack_loss_pct: self.range(0, 51) as u32,
            event_drop_pct: self.range(0, 21) as u32,
            stall_ms: self.range(8_000, 12_001),
            stall_pct: self.range(0, 16) as u32,
            stop_pct: self.range(0, 16) as u32,
            barge_in_pct: self.range(0, 11) as u32,
            late_delta_pct: self.range(0, 26) as u32,
            disconnect_pct: self.range(0, 8) as u32,
            duplicate_pct: self.range(0, 26) as u32,
            owner_message_pct: self.range(0, 16) as u32,
        }
    }
}

/// What fuzzing needs of a machine beyond the [`Machine`] trait: a generator and a summary.
pub trait Fuzz: Machine {
    /// The next input, chosen against the machine's state; `at` is the case's clock.
    fn next_input(&self, g: &mut Gen, mix: &FaultMix, at: &mut Millis) -> Self::Input;

    /// A flat summary of the state, for the per-step changes of a report.
    fn summary(&self) -> BTreeMap<String, String>;

    /// The faults of a mix this machine's generator draws on, as a report says them.
    fn faults(mix: &FaultMix) -> String;

    /// The rule choices this machine follows, by name, where they are not the lab's (a report
    /// records them, and its replay makes the machine with them).
    fn profile_name(&self) -> Option<&'static str> {
        None
    }
}

/// A broken invariant of machine `M`.
pub type Broken<M> = Violation<<M as Machine>::Invariant>;

/// One recorded step of a report: the step, and how the machine's state changed
/// (`key: before → after`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(bound(
    serialize = "I: Serialize, O: Serialize",
    deserialize = "I: DeserializeOwned, O: DeserializeOwned"
))]
pub struct Recorded<I, O> {
    #[serde(flatten)]
    pub step: Step<I, O>,
    pub changes: Vec<String>,
}

/// A generated case.
#[derive(Clone, Debug, PartialEq)]
pub struct Case<I> {
    pub seed: u64,
    pub mix: FaultMix,
    pub inputs: Vec<I>,
    /// How many inputs the case had before any shrinking.
    pub generated: usize,
}

/// Generates a case of `steps` inputs from `seed`, driving a machine made by `make` to know what
/// is meaningful next.
pub fn generate<M: Fuzz>(seed: u64, steps: usize, make: &dyn Fn() -> M) -> Case<M::Input> {
    let mut g = Gen::new(seed);
    let mix = g.mix();
    let mut m = make();
    let mut at = 0;
    let mut inputs = Vec::with_capacity(steps);
    for _ in 0..steps {
        let input = m.next_input(&mut g, &mix, &mut at);
        if take(&mut m, &input).1 {
            inputs.push(input);
        }
    }
    let generated = inputs.len();
    Case {
        seed,
        mix,
        inputs,
        generated,
    }
}

/// A run of inputs: the steps recorded (misuse skipped) and their state changes.
pub struct Run<M: Machine> {
    pub steps: Vec<Recorded<M::Input, M::Output>>,
    /// The inputs the machine took (the misused ones dropped).
    pub taken: Vec<M::Input>,
    /// A fresh monitor of the machine that ran: what judges the run.
    pub monitor: M::Monitor,
}

/// Replays inputs on a fresh machine, skipping misuse, recording state changes.
pub fn replay<M: Fuzz>(inputs: &[M::Input], make: &dyn Fn() -> M) -> Run<M> {
    let mut m = make();
    let monitor = m.monitor();
    let mut steps = Vec::new();
    let mut taken = Vec::new();
    let mut before = m.summary();
    for input in inputs {
        let before_machine = m.clone();
        let (recorded, ok) = take(&mut m, input);
        if !ok {
            // Refused, but time still passed: keep what that caused, as the tick it was.
            if let Some(tick) = recorded.first() {
                taken.push(tick.input.clone());
            } else {
                continue;
            }
        } else {
            taken.push(input.clone());
        }
        let after = m.summary();
        // With a time-passing step first, split the changes: what the tick did, then the input.
        let mid = (recorded.len() == 2).then(|| {
            let mut ticked = before_machine.clone();
            let _ = take(&mut ticked, &recorded[0].input);
            ticked.summary()
        });
        let mut from = before;
        for (i, step) in recorded.into_iter().enumerate() {
            let to = match (&mid, i) {
                (Some(mid), 0) => mid.clone(),
                _ => after.clone(),
            };
            steps.push(Recorded {
                step,
                changes: diff(&from, &to),
            });
            from = to;
        }
        before = after;
    }
    Run {
        steps,
        taken,
        monitor,
    }
}

fn diff(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> Vec<String> {
    let mut changes = Vec::new();
    for (k, v) in after {
        match before.get(k) {
            Some(b) if b == v => {}
            Some(b) => changes.push(format!("{k}: {b} → {v}")),
            None => changes.push(format!("{k}: → {v}")),
        }
    }
    for (k, b) in before {
        if !after.contains_key(k) {
            changes.push(format!("{k}: {b} →"));
        }
    }
    changes
}

/// Every invariant of a machine over recorded steps, judged by `monitor` (fresh: made by the
/// machine that ran them, so it judges by that machine's rules).
pub fn judge<'a, M: Machine>(
    mut monitor: M::Monitor,
    steps: impl IntoIterator<Item = &'a StepOf<M>>,
) -> (Vec<Broken<M>>, BTreeSet<M::Invariant>)
where
    M::Input: 'a,
    M::Output: 'a,
{
    let mut broken = Vec::new();
    for step in steps {
        broken.extend(monitor.observe(step));
    }
    monitor.finish();
    broken.extend(monitor.take_violations());
    (broken, monitor.reached().clone())
}

/// The violations of a run, narrowed to one invariant if given.
pub fn violations<M: Machine>(run: &Run<M>, only: Option<M::Invariant>) -> Vec<Broken<M>> {
    judge::<M>(run.monitor.clone(), run.steps.iter().map(|r| &r.step))
        .0
        .into_iter()
        .filter(|b| only.is_none_or(|o| b.invariant == o))
        .collect()
}

/// Shrinks a failing input sequence: removes chunks, then single inputs, as long as the run
/// still breaks `invariant` (any invariant if `None`). Deterministic.
pub fn shrink<M: Fuzz>(
    inputs: Vec<M::Input>,
    invariant: Option<M::Invariant>,
    make: &dyn Fn() -> M,
) -> Vec<M::Input> {
    let fails = |xs: &[M::Input]| !violations::<M>(&replay::<M>(xs, make), invariant).is_empty();
    let mut current = replay::<M>(&inputs, make).taken;
    if !fails(&current) {
        return current;
    }
    let mut chunk = current.len().div_ceil(2).max(1);
    loop {
        let mut i = 0;
        let mut removed_any = false;
        while i < current.len() {
            let end = (i + chunk).min(current.len());
            let mut candidate = current[..i].to_vec();
            candidate.extend_from_slice(&current[end..]);
            if fails(&candidate) {
                current = replay::<M>(&candidate, make).taken;
                removed_any = true;
            } else {
                i += chunk;
            }
        }
        if chunk == 1 && !removed_any {
            return current;
        }
        if !removed_any {
            chunk = (chunk / 2).max(1);
        }
    }
}

/// What one fuzzing case found.
pub struct Found<M: Machine> {
    pub case: Case<M::Input>,
    pub shrunk: Vec<M::Input>,
    pub broken: Broken<M>,
}

/// Runs one case; on a violation (of `invariant`, or of any), shrinks it. Without one, the
/// invariants the case put to the test.
pub fn run_case<M: Fuzz>(
    seed: u64,
    steps: usize,
    invariant: Option<M::Invariant>,
    make: &dyn Fn() -> M,
) -> Result<BTreeSet<M::Invariant>, Box<Found<M>>> {
    let case = generate::<M>(seed, steps, make);
    let run = replay::<M>(&case.inputs, make);
    let (all, reached) = judge::<M>(run.monitor.clone(), run.steps.iter().map(|r| &r.step));
    let broken: Vec<Broken<M>> = all
        .into_iter()
        .filter(|b| invariant.is_none_or(|o| b.invariant == o))
        .collect();
    let Some(first) = broken.first() else {
        return Ok(reached);
    };
    let target = invariant.unwrap_or(first.invariant);
    let shrunk = shrink::<M>(case.inputs.clone(), Some(target), make);
    let broken = violations::<M>(&replay::<M>(&shrunk, make), Some(target))
        .into_iter()
        .next()
        .unwrap_or_else(|| first.clone());
    Err(Box::new(Found {
        case,
        shrunk,
        broken,
    }))
}

/// The seed of case `i` of a run seeded `seed`: a SplitMix64 step, so neighbouring runs do not
/// share cases and a shard (a range of `i`) is independent of the others.
pub fn case_seed(seed: u64, i: u64) -> u64 {
    let mut z = seed.wrapping_add(i.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What replaying a report shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replayed<V> {
    /// The invariants broken by the report's recorded run, as the monitor judges it now.
    pub broken: Vec<Violation<V>>,
    /// Re-run on the machine as built now: `Some(None)` when it gives the recorded outputs at
    /// every step, `Some(Some(i))` when it differs from step `i`; `None` when not re-run.
    pub rerun: Option<Option<usize>>,
}

/// Judges a report's recorded run with `monitor` (fresh, of the machine the report ran on: its
/// rules) and re-runs its inputs on a machine made by `make`, if given.
pub fn replay_report<M: Machine>(
    report: &report::Report<M>,
    monitor: M::Monitor,
    make: Option<&dyn Fn() -> M>,
) -> Replayed<M::Invariant> {
    let recorded: Vec<&StepOf<M>> = report.steps.iter().map(|r| &r.step).collect();
    let broken = judge::<M>(monitor, recorded.iter().copied()).0;
    let Some(make) = make else {
        return Replayed {
            broken,
            rerun: None,
        };
    };
    let mut m = make();
    let mut again: Vec<StepOf<M>> = Vec::new();
    for step in &recorded {
        let (steps, ok) = take(&mut m, &step.input);
        if !ok && steps.is_empty() {
            again.push(Step {
                input: step.input.clone(),
                outputs: Vec::new(),
            });
        }
        again.extend(steps);
    }
    let differs_at = recorded
        .iter()
        .enumerate()
        .position(|(i, a)| again.get(i).map_or(&[][..], |b| &b.outputs[..]) != &a.outputs[..]);
    Replayed {
        broken,
        rerun: Some(differs_at),
    }
}
