//! The fence machine as a [`Spec`] for the conformance engine. Fence traces are ours, written
//! whole: no hidden steps are supplied.

use turnfence_model::fence::{
    Action, FenceInput, FenceInputKind, FenceInvariant, FenceMachine, FenceMisuse, FenceMonitor,
    FenceOutput,
};
use turnfence_model::Millis;

use super::conform::{Judged, Spec};

/// The fence machine (SPEC §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FenceSpec;

impl Spec for FenceSpec {
    type Machine = FenceMachine;
    type Input = FenceInput;
    type Output = FenceOutput;
    type Misuse = FenceMisuse;

    fn at(input: &FenceInput) -> Millis {
        input.at
    }

    fn advance_to(m: &mut FenceMachine, at: Millis) -> Result<(), FenceMisuse> {
        m.advance_to(at)
    }

    fn handle(m: &mut FenceMachine, input: &FenceInput) -> Result<(), FenceMisuse> {
        m.handle(input)
    }

    fn poll(m: &mut FenceMachine) -> Option<FenceOutput> {
        m.poll_output()
    }

    fn tick(at: Millis) -> FenceInput {
        FenceInput::new(at, FenceInputKind::Tick)
    }

    fn is_bare(input: &FenceInput) -> bool {
        matches!(input.kind, FenceInputKind::Tick | FenceInputKind::DropEvent)
    }

    fn subject(output: &FenceOutput) -> Option<&str> {
        match output {
            FenceOutput::EventQueued { worker, .. }
            | FenceOutput::AckConsumed { worker, .. }
            | FenceOutput::Resent { worker, .. }
            | FenceOutput::Verdict { worker, .. }
            | FenceOutput::SealBelieved { worker, .. } => Some(worker),
            FenceOutput::OwnerMessageWritten { root, .. }
            | FenceOutput::OwnerMessageRefused { root }
            | FenceOutput::RowCleared { root } => Some(root),
            FenceOutput::Admitted { task, .. } | FenceOutput::AdmissionBlocked { task, .. } => {
                Some(task)
            }
            FenceOutput::EventDropped { token, .. }
            | FenceOutput::EventRejected { token, .. }
            | FenceOutput::Applied { token, .. }
            | FenceOutput::AckWritten { token, .. }
            | FenceOutput::AckLost { token, .. } => Some(token),
            FenceOutput::AcksPruned { .. } | FenceOutput::Restored { .. } => None,
        }
    }

    fn input_subject(input: &FenceInput) -> Option<&str> {
        match &input.kind {
            FenceInputKind::WorkerStart { worker, .. } | FenceInputKind::Request { worker, .. } => {
                Some(worker)
            }
            FenceInputKind::OwnerMessage { root } => Some(root),
            FenceInputKind::TaskDone { task } | FenceInputKind::Enqueue { task, .. } => Some(task),
            _ => None,
        }
    }

    /// A worker's loop with no token to send, after an end dropped its binding, is a loop that
    /// still holds the dead token (the trace shows which one it sent).
    fn refusal_cause(
        outputs: &[&FenceOutput],
        misuse: &FenceMisuse,
    ) -> Option<(&'static str, String)> {
        let FenceMisuse::NoToken { worker } = misuse else {
            return None;
        };
        let ended = outputs.iter().any(|o| {
            matches!(o, FenceOutput::Verdict { worker: w, action: Action::End, .. } if w == worker)
        });
        ended.then(|| {
            (
                FenceInvariant::DeadTokenHarmless.name(),
                format!("worker {worker}'s loop sends a token its end already dropped"),
            )
        })
    }

    fn judge(steps: &[(&FenceInput, Vec<&FenceOutput>)]) -> Vec<Judged> {
        let mut monitor = FenceMonitor::new();
        for (input, outputs) in steps {
            monitor.input(input);
            for o in outputs {
                monitor.output(o);
            }
            monitor.end_step();
        }
        monitor
            .take_violations()
            .into_iter()
            .map(|v| Judged {
                step: v.step,
                name: v.invariant.name(),
                ids: v.ids,
                message: v.message,
            })
            .collect()
    }
}
