//! The turn machine (SPEC §2): one conversation session — its turns and generations, child work
//! and the cancel tree, the delivery gate and the playback buffer, deadlines and budgets, tools
//! with checkpoints and commits, the stream store, the client cursor, and stop requests.

#[cfg(feature = "flaws")]
mod flaw;
pub mod invariants;
mod machine;
mod misuse;
pub mod state;
mod types;

#[cfg(feature = "flaws")]
pub use flaw::Flaw;
pub use invariants::{check_all, Invariant, Monitor, Step, Violation};
pub use machine::*;
pub use misuse::Misuse;
pub use types::*;

/// Runs inputs through a machine, recording each step. What time passing causes (deadlines
/// firing) is recorded as a `tick` step of its own before the input it preceded, so every step's
/// outputs are caused by its input alone. Stops at the first misuse, returning the steps so far
/// and the index of the refused input with its error.
pub fn run(machine: &mut TurnMachine, inputs: &[Input]) -> (Vec<Step>, Option<(usize, Misuse)>) {
    let mut steps = Vec::with_capacity(inputs.len());
    for (i, input) in inputs.iter().enumerate() {
        if let Err(misuse) = step(machine, input, &mut steps) {
            return (steps, Some((i, misuse)));
        }
    }
    (steps, None)
}

/// Takes one input as [`run`] does, appending its step (and a tick step first, if time passing
/// caused anything).
pub fn step(machine: &mut TurnMachine, input: &Input, steps: &mut Vec<Step>) -> Result<(), Misuse> {
    machine.advance_to(input.at)?;
    let outputs = drain(machine);
    // A tick is time passing: what it caused is its own step, not a step before it.
    let mut caused = Vec::new();
    if matches!(input.kind, InputKind::Tick) {
        caused = outputs;
    } else if !outputs.is_empty() {
        steps.push(Step {
            input: Input::new(input.at, InputKind::Tick),
            outputs,
        });
    }
    machine.handle(input)?;
    caused.extend(drain(machine));
    steps.push(Step {
        input: input.clone(),
        outputs: caused,
    });
    Ok(())
}

fn drain(machine: &mut TurnMachine) -> Vec<Output> {
    std::iter::from_fn(|| machine.poll_output()).collect()
}
