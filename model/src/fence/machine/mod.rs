//! The fence machine: the table, the worker↔supervisor transport (event queue, ack mailbox,
//! waits, one re-send) and each worker's loop layer (bindings and verdicts), driven by
//! [`Input`]s. Faults are inputs: a dropped event, a lost ack, a supervisor that does not
//! step (stalls) while time passes, a re-send applied twice.
//!
//! A worker's wait:
//!
//! ```text
//!   request ──► waiting(attempt 1) ──ack of its own (token, req)──► verdict ok | refused
//!                    │ 10 000 ms
//!                    ├── transition: re-send, identical ──► waiting(attempt 2) ──► … | unknown
//!                    └── read: ──► unknown
//! ```
//!
//! The machine is one struct, [`FenceMachine`], with one `impl` block per layer: this file holds
//! its state, the [`crate::Machine`] interface and the validate/apply dispatch; `transport` the
//! worker↔supervisor transport, `worker_loop` the loop layer, `admission` the table's own inputs
//! and admission, `restore` a restart from a snapshot.

use std::collections::VecDeque;

use serde::Serialize;

use super::misuse::Misuse;
use super::table::{normalized, Request, Table, TableFlaws};
use super::types::*;
use super::{Flaw, Invariant, Monitor};
use crate::{Hashed, Millis, Plant, Sound};

/// Each wait for an ack is this long, by name (never lengthened to ride out a stalled supervisor).
pub const ACK_WAIT_MS: Millis = 10_000;
/// Acks older than this are pruned.
pub const ACK_TTL_MS: Millis = 3_600_000;
/// At most this many acks stay in the mailbox.
pub const ACK_KEEP: usize = 256;
/// At most this many workers, queued events, tasks, requests per worker.
pub const MAX_WORKERS: usize = 1024;
pub const MAX_REQUESTS_PER_WORKER: usize = 4096;
pub const MAX_QUEUED: usize = 4096;
pub const MAX_TASKS: usize = 1 << 16;

/// Whether the planted flaw is this one: for the sound machine a constant `false` that compiles
/// away. Defined before the layers' modules, so that each of them can use it.
macro_rules! flawed {
    ($self:ident, $flaw:ident) => {
        $crate::Plant::<$crate::fence::Flaw>::planted(&$self.plant)
            == Some($crate::fence::Flaw::$flaw)
    };
}

mod admission;
mod restore;
mod transport;
mod worker_loop;

use worker_loop::loop_token;

/// A request on its way to the supervisor.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Event {
    pub worker: WorkerId,
    pub req: Req,
    pub request: Request,
}

/// An ack in the mailbox.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Ack {
    pub token: Token,
    pub req: Req,
    pub reply: Reply,
    pub written_at: Millis,
}

/// The worker's binding to its fence.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Binding {
    pub token: Token,
    pub generation: u64,
}

/// A request waiting for its ack.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Wait {
    pub action: Action,
    pub token: Token,
    pub req: Req,
    pub request: Request,
    pub attempt: u8,
    pub deadline_at: Millis,
}

#[derive(Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Worker {
    pub path: Path,
    pub task: TaskId,
    pub root: RootId,
    pub binding: Option<Binding>,
    /// The token of the worker's own last seal, for an owner follow-up's revision.
    pub sealed_token: Option<Token>,
    /// An end (not a revision) whose answer never came: it may have sealed.
    pub unanswered_end: Option<Token>,
    pub waiting: Option<Wait>,
    /// Every `req` the worker has sent, normalized: each request has a fresh one.
    pub used_reqs: Set<Req>,
}

clone_in_place!(Worker {
    path,
    task,
    root,
    binding,
    sealed_token,
    unanswered_end,
    waiting,
    used_reqs
});

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Pending,
    Running,
    Done,
    Cancelled,
}

/// The whole fence system's state. Compared and hashed as a value.
#[derive(Debug, Default, PartialEq, Eq, Hash, Serialize)]
/// Its parts keep their hashes ([`Hashed`]): a step touches one or two of them.
pub struct FenceState {
    pub now: Millis,
    pub table: Hashed<Table>,
    pub queue: Hashed<VecDeque<Event>>,
    /// Keyed by (token, req), normalized.
    pub mailbox: Hashed<Map<(Token, Req), Ack>>,
    pub workers: Hashed<Map<WorkerId, Worker>>,
    pub tasks: Hashed<Map<TaskId, (RootId, TaskStatus)>>,
}

clone_in_place!(FenceState { now } parts { table, queue, mailbox, workers, tasks });

/// The fence machine. `P` is its planted flaw: [`Sound`] (none, by type: the machine everyone
/// runs) unless it was made by [`Plantable::with_flaw`](crate::Plantable::with_flaw).
#[derive(Debug, Default)]
pub struct FenceMachine<P = Sound> {
    state: FenceState,
    outputs: VecDeque<Output>,
    plant: P,
}

clone_in_place!(<P> FenceMachine { state, outputs, plant });

machine!(FenceMachine "fence" { state: FenceState }
    due: expire_waits, timeout: wait_end, monitor: fresh_monitor, planted: plant_flaw);

impl<P: Plant<Flaw>> FenceMachine<P> {
    /// The fence machine has one set of rules: its monitor is the one there is.
    fn fresh_monitor(&self) -> Monitor {
        Monitor::default()
    }

    /// Every fence flaw runs on the one set of rules.
    fn plant_flaw(&mut self, _: Flaw) {}

    /// The machine with its state made anew from its own by `make` (a renaming: the
    /// `fence::rename` module), the outputs not yet drained and its plant kept.
    pub fn with_state_from(&self, make: impl FnOnce(&FenceState) -> FenceState) -> FenceMachine<P> {
        FenceMachine {
            state: make(&self.state),
            outputs: self.outputs.clone(),
            plant: self.plant.clone(),
        }
    }

    /// The end of the earliest wait: there it is re-sent or ends `unknown`.
    fn wait_end(&self) -> Option<Millis> {
        self.state
            .workers
            .values()
            .filter_map(|w| w.waiting.as_ref())
            .map(|w| w.deadline_at)
            .min()
    }

    fn table_flaws(&self) -> TableFlaws {
        TableFlaws {
            same_token_answers_active: flawed!(self, SameTokenAnswersActive),
            no_readoption: flawed!(self, NoReadoption),
            readopt_keeps_token: flawed!(self, ReadoptKeepsToken),
            dead_owner_takeover: flawed!(self, DeadOwnerTakeover),
        }
    }

    fn validate(&self, kind: &InputKind) -> Result<(), Misuse> {
        let s = &self.state;
        match kind {
            InputKind::WorkerStart { worker, .. } => {
                if s.workers.contains_key(worker) {
                    return Err(Misuse::DuplicateWorker {
                        worker: worker.clone(),
                    });
                }
                limit("workers", s.workers.len(), MAX_WORKERS)?;
                limit("tasks", s.tasks.len(), MAX_TASKS)
            }
            InputKind::Request {
                worker,
                action,
                token,
                outcome,
                req,
                ..
            } => {
                let w = s.workers.get(worker).ok_or_else(|| Misuse::UnknownWorker {
                    worker: worker.clone(),
                })?;
                if w.waiting.is_some() {
                    return Err(Misuse::WorkerBusy {
                        worker: worker.clone(),
                    });
                }
                if w.used_reqs.contains(&*normalized(req)) {
                    return Err(Misuse::ReqReused {
                        worker: worker.clone(),
                        req: req.clone(),
                    });
                }
                limit(
                    "requests per worker",
                    w.used_reqs.len(),
                    MAX_REQUESTS_PER_WORKER,
                )?;
                if token.is_none() && loop_token(w, *action, *outcome).is_none() {
                    return Err(Misuse::NoToken {
                        worker: worker.clone(),
                    });
                }
                limit("queued events", s.queue.len(), MAX_QUEUED)
            }
            InputKind::SupervisorStep { .. } | InputKind::DropEvent if s.queue.is_empty() => {
                Err(Misuse::NothingQueued)
            }
            InputKind::Enqueue { task, .. } => {
                if s.tasks.contains_key(task) {
                    return Err(Misuse::DuplicateTask { task: task.clone() });
                }
                limit("tasks", s.tasks.len(), MAX_TASKS)
            }
            InputKind::Restore { pending, .. } => {
                let mut seen = std::collections::BTreeSet::new();
                if let Some(t) = pending.iter().find(|t| !seen.insert(&t.task)) {
                    return Err(Misuse::DuplicateTask {
                        task: t.task.clone(),
                    });
                }
                limit(
                    "tasks",
                    s.tasks.len().saturating_add(pending.len()),
                    MAX_TASKS,
                )
            }
            _ => Ok(()),
        }
    }

    fn apply(&mut self, kind: &InputKind) {
        match kind {
            InputKind::WorkerStart {
                worker,
                path,
                task,
                root,
            } => self.start_worker(worker, *path, task, root),
            InputKind::Request { worker, req, .. } => {
                if let Some(request) = self.request_of(kind) {
                    self.send(worker, request, req);
                }
            }
            InputKind::SupervisorStep { lose_ack } => self.supervisor_step(*lose_ack),
            InputKind::DropEvent => {
                if let Some(e) = self.state.queue.pop_front() {
                    self.emit(Output::EventDropped {
                        token: e.request.token,
                        req: e.req,
                    });
                }
            }
            InputKind::Tick => {}
            InputKind::OwnerMessage { root } => self.owner_message(root),
            InputKind::TaskDone { task } => self.task_done(task),
            InputKind::Enqueue { task, root } => self.enqueue(task, root),
            InputKind::Restore { fences, pending } => self.restore(fences, pending),
        }
    }
}

fn limit(what: &'static str, len: usize, limit: usize) -> Result<(), Misuse> {
    if len >= limit {
        Err(Misuse::LimitReached { what, limit })
    } else {
        Ok(())
    }
}
