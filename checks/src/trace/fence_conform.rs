//! The fence machine for the conformance engine (`impl Conform`). Fence traces are ours, written
//! whole: no hidden steps are supplied.

use turnfence_model::fence;
use turnfence_model::fence::{Action, FenceMachine};
use turnfence_model::said::Said;

use super::conform::Conform;

impl Conform for FenceMachine {
    /// The fence's logs state nothing beside their events.
    type Fact = std::convert::Infallible;

    fn is_bare(input: &fence::Input) -> bool {
        matches!(
            input.kind,
            fence::InputKind::Tick | fence::InputKind::DropEvent
        )
    }

    fn subject(output: &fence::Output) -> Option<&str> {
        match output {
            fence::Output::EventQueued { worker, .. }
            | fence::Output::AckConsumed { worker, .. }
            | fence::Output::Resent { worker, .. }
            | fence::Output::Verdict { worker, .. }
            | fence::Output::SealBelieved { worker, .. } => Some(worker),
            fence::Output::OwnerMessageWritten { root, .. }
            | fence::Output::OwnerMessageRefused { root }
            | fence::Output::RowCleared { root } => Some(root),
            fence::Output::Admitted { task, .. } | fence::Output::AdmissionBlocked { task, .. } => {
                Some(task)
            }
            fence::Output::EventDropped { token, .. }
            | fence::Output::EventRejected { token, .. }
            | fence::Output::Applied { token, .. }
            | fence::Output::AckWritten { token, .. }
            | fence::Output::AckLost { token, .. } => Some(token),
            fence::Output::AcksPruned { .. } | fence::Output::Restored { .. } => None,
        }
    }

    fn input_subject(input: &fence::Input) -> Option<&str> {
        match &input.kind {
            fence::InputKind::WorkerStart { worker, .. }
            | fence::InputKind::Request { worker, .. } => Some(worker),
            fence::InputKind::OwnerMessage { root } => Some(root),
            fence::InputKind::TaskDone { task } | fence::InputKind::Enqueue { task, .. } => {
                Some(task)
            }
            _ => None,
        }
    }

    /// A worker's loop with no token to send, after an end dropped its binding, is a loop that
    /// still holds the dead token (the trace shows which one it sent).
    fn refusal_cause(
        &self,
        outputs: &[&fence::Output],
        misuse: &fence::Misuse,
    ) -> Option<(fence::Invariant, Said)> {
        let fence::Misuse::NoToken { worker } = misuse else {
            return None;
        };
        let ended = outputs.iter().any(|o| {
            matches!(o, fence::Output::Verdict { worker: w, action: Action::End, .. } if w == worker)
        });
        ended.then(|| {
            (
                fence::Invariant::DeadTokenHarmless,
                format!("worker {worker}'s loop sends a token its end already dropped").into(),
            )
        })
    }
}
