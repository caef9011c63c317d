//! The fence machine (SPEC §3): a supervisor's acceptance-fence table, the worker↔supervisor
//! transport with its faults, and the worker's loop-level verdicts.

#[cfg(feature = "flaws")]
mod flaw;
pub mod invariants;
mod machine;
mod misuse;
pub mod table;
mod types;

#[cfg(feature = "flaws")]
pub use flaw::FenceFlaw;
pub use invariants::{check_all, FenceInvariant, FenceMonitor, FenceStep, FenceViolation};
pub use machine::*;
pub use misuse::FenceMisuse;
pub use types::*;

/// Takes one input, recording what time passing caused as a `tick` step before it.
pub fn step(
    machine: &mut FenceMachine,
    input: &FenceInput,
    steps: &mut Vec<FenceStep>,
) -> Result<(), FenceMisuse> {
    machine.advance_to(input.at)?;
    let outputs = drain(machine);
    // A tick is time passing: what it caused is its own step, not a step before it.
    let mut caused = Vec::new();
    if matches!(input.kind, FenceInputKind::Tick) {
        caused = outputs;
    } else if !outputs.is_empty() {
        steps.push(FenceStep {
            input: FenceInput::new(input.at, FenceInputKind::Tick),
            outputs,
        });
    }
    machine.handle(input)?;
    caused.extend(drain(machine));
    steps.push(FenceStep {
        input: input.clone(),
        outputs: caused,
    });
    Ok(())
}

/// Runs inputs through a machine, recording each step; stops at the first misuse.
pub fn run(
    machine: &mut FenceMachine,
    inputs: &[FenceInput],
) -> (Vec<FenceStep>, Option<(usize, FenceMisuse)>) {
    let mut steps = Vec::with_capacity(inputs.len());
    for (i, input) in inputs.iter().enumerate() {
        if let Err(m) = step(machine, input, &mut steps) {
            return (steps, Some((i, m)));
        }
    }
    (steps, None)
}

fn drain(machine: &mut FenceMachine) -> Vec<FenceOutput> {
    std::iter::from_fn(|| machine.poll_output()).collect()
}
