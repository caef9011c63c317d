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

/// Runs inputs through a machine, recording each step. Stops at the first misuse, returning the
/// steps so far and the index of the refused input with its error.
pub fn run(machine: &mut TurnMachine, inputs: &[Input]) -> (Vec<Step>, Option<(usize, Misuse)>) {
    let mut steps = Vec::with_capacity(inputs.len());
    for (i, input) in inputs.iter().enumerate() {
        let result = machine.handle(input);
        let mut outputs = Vec::new();
        while let Some(output) = machine.poll_output() {
            outputs.push(output);
        }
        if let Err(misuse) = result {
            // Time still passed to the refused input's `at`: what that caused is a tick's step.
            if !outputs.is_empty() {
                steps.push(Step {
                    input: Input::new(input.at, InputKind::Tick),
                    outputs,
                });
            }
            return (steps, Some((i, misuse)));
        }
        steps.push(Step {
            input: input.clone(),
            outputs,
        });
    }
    (steps, None)
}
