//! The monitor's handlers: each input and each output, dispatched by kind to the handler of its
//! subject, and the end of a step.

use super::memory::{Asked, Monitor, WorkerSeen};
use super::Invariant;
use crate::fence::table::normalize;
use crate::fence::types::*;

impl Monitor {
    pub(super) fn on_input(&mut self, input: &Input) {
        self.now = self.now.max(input.at);
        match &input.kind {
            InputKind::WorkerStart {
                worker,
                path,
                task,
                root,
            } => {
                self.workers.insert(
                    worker.clone(),
                    WorkerSeen {
                        direct: *path == Path::Direct,
                        root: root.clone(),
                        task: task.clone(),
                        ..WorkerSeen::default()
                    },
                );
            }
            InputKind::Request {
                worker,
                token,
                req,
                root,
                task,
                ..
            } => {
                let Some(w) = self.workers.get_mut(worker) else {
                    return;
                };
                w.loop_token = token.is_none();
                let asked = Asked {
                    worker: worker.clone(),
                    root: root.clone().unwrap_or_else(|| w.root.clone()),
                    task: task.clone().unwrap_or_else(|| w.task.clone()),
                };
                w.pending_ask = Some((normalize(req), asked));
            }
            InputKind::Restore { fences, pending } => {
                let roots = match fences {
                    FenceSnapshot::Rows(rows) if rows.iter().all(|r| !r.root.is_empty()) => Some(
                        rows.iter()
                            .filter(|r| matches!(r.status, Status::Active | Status::Sealed))
                            .map(|r| r.root.clone())
                            .collect(),
                    ),
                    _ => None,
                };
                self.restore = Some((roots, pending.clone()));
            }
            _ => {}
        }
    }

    pub(super) fn on_output(&mut self, output: &Output) {
        match output {
            Output::EventQueued {
                worker,
                token,
                req,
                action,
                attempt: _,
            } => self.on_queued(worker, token, req, *action),
            Output::EventRejected { .. } => self.reach(Invariant::IdsValidated),
            Output::Applied {
                token,
                req,
                action,
                reply,
                worker,
                expected_generation,
                ..
            } => self.on_applied(worker, token, req, *action, *expected_generation, reply),
            Output::AckWritten { token, req, .. } => self.on_ack_written(token, req),
            Output::AckConsumed { worker, token, req } => self.on_consumed(worker, token, req),
            Output::Resent { .. } => self.reach(Invariant::ResendBounded),
            Output::Verdict {
                worker,
                action,
                token,
                req,
                verdict,
            } => self.on_verdict(worker, *action, token, req, verdict),
            Output::SealBelieved {
                worker,
                root,
                token,
                ..
            } => self.on_seal_believed(worker, root, token),
            Output::OwnerMessageWritten {
                root,
                generation: Some(g),
            } => {
                if let Some(r) = self.rows.get_mut(root) {
                    r.generation = *g;
                }
            }
            Output::RowCleared { root } => {
                if let Some(r) = self.rows.remove(root) {
                    self.dead.insert(r.token);
                }
            }
            Output::Admitted { task, root } => {
                if let Some(r) = self.rows.get(root) {
                    let status = if r.sealed { "sealed" } else { "active" };
                    self.violate(
                        Invariant::FencedRootAdmitsNothing,
                        &[task, root],
                        format!(
                            "task {task} was admitted under root {root} whose fence is {status}"
                        ),
                    );
                }
            }
            Output::AdmissionBlocked { .. } => self.reach(Invariant::FencedRootAdmitsNothing),
            Output::Restored {
                restored,
                cancelled,
                ..
            } => self.on_restored(restored, cancelled),
            _ => {}
        }
    }

    pub(super) fn on_end_step(&mut self) {
        self.findings.end_step();
    }
}
