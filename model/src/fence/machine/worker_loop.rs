//! The worker's loop layer (SPEC §3.4): the request a worker's loop sends (its bound token, the
//! generation it knows) and the verdict it draws from a reply or its absence, with what that does
//! to its binding and to its belief that it sealed its root.

use super::{Binding, FenceMachine, TaskStatus, Worker};
use crate::fence::table::{normalized, Request};
use crate::fence::types::*;
use crate::fence::Flaw;
use crate::Plant;

impl<P: Plant<Flaw>> FenceMachine<P> {
    /// A worker starts on its task under its root, bound to nothing.
    pub(super) fn start_worker(&mut self, worker: &str, path: Path, task: &str, root: &str) {
        self.state.workers.insert(
            worker.into(),
            Worker {
                path,
                task: task.into(),
                root: root.into(),
                binding: None,
                sealed_token: None,
                unanswered_end: None,
                waiting: None,
                used_reqs: Default::default(),
            },
        );
        self.state
            .tasks
            .insert(task.into(), (root.into(), TaskStatus::Running));
    }

    /// The request a worker's loop sends for a `Request` input (`None` for any other input): the
    /// token the input names, else the loop's; the root and task it names, else the worker's. An
    /// end carries the worker's known generation.
    pub(super) fn request_of(&self, input: &InputKind) -> Option<Request> {
        let InputKind::Request {
            worker,
            action,
            token,
            outcome,
            expected_generation: stated,
            root,
            task,
            ..
        } = input
        else {
            return None;
        };
        let (action, outcome) = (*action, *outcome);
        let w = self.state.workers.get(worker)?;
        let token = match token {
            Some(t) => t.clone(),
            None => loop_token(w, action, outcome).unwrap_or_default(),
        };
        let known = w
            .binding
            .as_ref()
            .filter(|b| normalized(&b.token) == normalized(&token))
            .map(|b| b.generation);
        let expected = match action {
            Action::End if !flawed!(self, BlindSeal) => stated.or(known),
            _ => *stated,
        };
        Some(Request {
            action,
            token,
            root: root.clone().unwrap_or_else(|| w.root.clone()),
            task: task.clone().unwrap_or_else(|| w.task.clone()),
            outcome,
            expected_generation: expected,
        })
    }

    /// The loop layer (SPEC §3.4): the verdict, and what it does to the worker's binding.
    pub(super) fn conclude(
        &mut self,
        worker: &str,
        request: &Request,
        req: &str,
        reply: Option<Reply>,
    ) {
        let accepted: &[Status] = match request.action {
            Action::Begin => &[Status::Active],
            Action::Inspect => &[Status::Active, Status::Sealed],
            _ => &[Status::Released, Status::Sealed],
        };
        let verdict = match &reply {
            None if flawed!(self, GapAsRefusal) => Verdict::Refused {
                status: Status::Error,
            },
            None => Verdict::Unknown,
            Some(r) if r.ok && accepted.contains(&r.status) => Verdict::Ok { status: r.status },
            Some(r) => Verdict::Refused { status: r.status },
        };
        self.emit(Output::Verdict {
            worker: worker.into(),
            action: request.action,
            token: request.token.clone(),
            req: req.into(),
            verdict: verdict.clone(),
        });
        let keep_stale = flawed!(self, EndKeepsBinding);
        let released_is_seal = flawed!(self, ReleasedIsSeal);
        let Some(w) = self.state.workers.get_mut(worker) else {
            return;
        };
        let root = w.root.clone();
        let mut sealed = None;
        match (request.action, &verdict, &reply) {
            (Action::Begin, Verdict::Ok { .. }, Some(r)) => {
                w.binding = Some(Binding {
                    token: r.token.clone().unwrap_or_else(|| request.token.clone()),
                    generation: r.owner_message_generation.unwrap_or(0),
                });
            }
            // Refused as sealed right after an end of ours went unanswered: our own seal.
            (
                Action::Begin,
                Verdict::Refused {
                    status: Status::Sealed,
                },
                _,
            ) => {
                if let Some(token) = w.unanswered_end.take() {
                    w.sealed_token = Some(token.clone());
                    sealed = Some(token);
                }
            }
            (Action::Inspect, Verdict::Ok { .. }, Some(r)) => {
                if let Some(b) = &mut w.binding {
                    b.generation = r.owner_message_generation.unwrap_or(b.generation);
                }
            }
            (Action::Inspect, Verdict::Refused { .. }, _) if !keep_stale => w.binding = None,
            (Action::End, v, r) => {
                if !keep_stale {
                    w.binding = None;
                }
                let revision = request.outcome == Some(EndOutcome::Revision);
                match (v, r) {
                    (
                        Verdict::Ok {
                            status: Status::Sealed,
                        },
                        _,
                    ) => {
                        w.sealed_token = Some(request.token.clone());
                        w.unanswered_end = None;
                        sealed = Some(request.token.clone());
                    }
                    (
                        Verdict::Ok {
                            status: Status::Released,
                        },
                        Some(r),
                    ) if released_is_seal && !revision && !r.generation_mismatch => {
                        sealed = Some(request.token.clone());
                    }
                    (Verdict::Unknown, _) if !revision => {
                        w.unanswered_end = Some(request.token.clone());
                    }
                    _ => {}
                }
            }
            _ => {}
        }
        if let Some(token) = sealed {
            self.emit(Output::SealBelieved {
                worker: worker.into(),
                root,
                token,
            });
        }
    }
}

/// The token a worker's loop sends when the request names none: its bound token; for a
/// revision with none bound, the token of its last seal (an owner follow-up un-seals the root).
pub(super) fn loop_token(w: &Worker, action: Action, outcome: Option<EndOutcome>) -> Option<Token> {
    match (action, &w.binding) {
        (Action::Begin, _) => None,
        (_, Some(b)) => Some(b.token.clone()),
        (Action::End, None) if outcome == Some(EndOutcome::Revision) => w.sealed_token.clone(),
        _ => None,
    }
}
