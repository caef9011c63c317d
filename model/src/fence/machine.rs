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

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;

use super::misuse::Misuse;
use super::table::{normalize, valid_id, OwnerMessage, Request, Table, TableFlaws};
use super::types::*;
#[cfg(feature = "flaws")]
use super::Flaw;
use super::{Invariant, Monitor};
use crate::Millis;

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

macro_rules! flawed {
    ($self:ident, $flaw:ident) => {{
        #[cfg(feature = "flaws")]
        let on = $self.flaw == Some(Flaw::$flaw);
        #[cfg(not(feature = "flaws"))]
        let on = false;
        on
    }};
}

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

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
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
    pub used_reqs: std::collections::BTreeSet<Req>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Pending,
    Running,
    Done,
    Cancelled,
}

/// The whole fence system's state. Compared and hashed as a value.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct FenceState {
    pub now: Millis,
    pub table: Table,
    pub queue: VecDeque<Event>,
    /// Keyed by (token, req), normalized.
    pub mailbox: BTreeMap<(Token, Req), Ack>,
    pub workers: BTreeMap<WorkerId, Worker>,
    pub tasks: BTreeMap<TaskId, (RootId, TaskStatus)>,
}

/// The fence machine.
#[derive(Clone, Debug, Default)]
pub struct FenceMachine {
    state: FenceState,
    outputs: VecDeque<Output>,
    #[cfg(feature = "flaws")]
    flaw: Option<Flaw>,
}

impl crate::Machine for FenceMachine {
    type Input = Input;
    type Output = Output;
    type Misuse = Misuse;
    type Invariant = Invariant;
    type Monitor = Monitor;
    #[cfg(feature = "flaws")]
    type Flaw = Flaw;

    const NAME: &'static str = "fence";

    #[cfg(feature = "flaws")]
    fn with_flaw(flaw: Flaw) -> Self {
        FenceMachine {
            flaw: Some(flaw),
            ..FenceMachine::default()
        }
    }

    #[cfg(feature = "flaws")]
    const FLAWS: &'static [Flaw] = &Flaw::ALL;

    #[cfg(feature = "flaws")]
    fn breaks(flaw: Flaw) -> Invariant {
        flaw.breaks()
    }

    fn at(input: &Input) -> Millis {
        input.at
    }

    fn tick(at: Millis) -> Input {
        Input::new(at, InputKind::Tick)
    }

    fn is_tick(input: &Input) -> bool {
        matches!(input.kind, InputKind::Tick)
    }

    /// Waits that ran out by `at` are re-sent or end `unknown`.
    fn advance_to(&mut self, at: Millis) -> Result<(), Misuse> {
        if at < self.state.now {
            return Err(Misuse::TimeWentBackwards {
                expected_at_least: self.state.now,
                got: at,
            });
        }
        self.state.now = at;
        self.expire_waits();
        Ok(())
    }

    fn handle(&mut self, input: &Input) -> Result<(), Misuse> {
        self.advance_to(input.at)?;
        self.validate(&input.kind)?;
        self.apply(&input.kind);
        Ok(())
    }

    fn poll_output(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    /// The end of the earliest wait: there it is re-sent or ends `unknown`.
    fn poll_timeout(&self) -> Option<Millis> {
        self.state
            .workers
            .values()
            .filter_map(|w| w.waiting.as_ref())
            .map(|w| w.deadline_at)
            .min()
    }

    fn fingerprint<H: std::hash::Hasher>(&self, h: &mut H) {
        use std::hash::Hash;
        self.state.hash(h);
    }
}

impl FenceMachine {
    pub fn new() -> FenceMachine {
        FenceMachine::default()
    }

    pub fn state(&self) -> &FenceState {
        &self.state
    }

    fn emit(&mut self, o: Output) {
        self.outputs.push_back(o);
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
                if w.used_reqs.contains(&normalize(req)) {
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
            } => {
                self.state.workers.insert(
                    worker.clone(),
                    Worker {
                        path: *path,
                        task: task.clone(),
                        root: root.clone(),
                        binding: None,
                        sealed_token: None,
                        unanswered_end: None,
                        waiting: None,
                        used_reqs: Default::default(),
                    },
                );
                self.state
                    .tasks
                    .insert(task.clone(), (root.clone(), TaskStatus::Running));
            }
            InputKind::Request {
                worker,
                action,
                token,
                req,
                outcome,
                expected_generation,
                root,
                task,
            } => {
                let w = &self.state.workers[worker];
                let token = match token {
                    Some(t) => t.clone(),
                    None => loop_token(w, *action, *outcome).unwrap_or_default(),
                };
                let request = self.request_of(
                    worker,
                    *action,
                    &token,
                    *outcome,
                    *expected_generation,
                    root,
                    task,
                );
                self.send(worker, request, req);
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

    /// The request a worker's loop sends. An end carries the worker's known generation.
    #[allow(clippy::too_many_arguments)]
    fn request_of(
        &self,
        worker: &str,
        action: Action,
        token: &str,
        outcome: Option<EndOutcome>,
        expected_generation: Option<u64>,
        root: &Option<RootId>,
        task: &Option<TaskId>,
    ) -> Request {
        let w = &self.state.workers[worker];
        let known = w
            .binding
            .as_ref()
            .filter(|b| normalize(&b.token) == normalize(token))
            .map(|b| b.generation);
        let expected = match action {
            Action::End if !flawed!(self, BlindSeal) => expected_generation.or(known),
            _ => expected_generation,
        };
        Request {
            action,
            token: token.to_owned(),
            root: root.clone().unwrap_or_else(|| w.root.clone()),
            task: task.clone().unwrap_or_else(|| w.task.clone()),
            outcome,
            expected_generation: expected,
        }
    }

    fn send(&mut self, worker: &str, request: Request, req: &str) {
        if let Some(w) = self.state.workers.get_mut(worker) {
            w.used_reqs.insert(normalize(req));
        }
        let path = self.state.workers[worker].path;
        if path == Path::Direct && !flawed!(self, DirectUsesTransport) {
            let reply = self.state.table.transition(&request, self.table_flaws());
            self.emit(Output::Applied {
                worker: worker.to_owned(),
                token: request.token.clone(),
                req: req.to_owned(),
                action: request.action,
                outcome: request.outcome,
                expected_generation: request.expected_generation,
                reply: reply.clone(),
            });
            self.conclude(worker, &request, req, Some(reply));
            return;
        }
        let (token, action) = (request.token.clone(), request.action);
        self.state.queue.push_back(Event {
            worker: worker.to_owned(),
            req: req.to_owned(),
            request: request.clone(),
        });
        self.emit(Output::EventQueued {
            worker: worker.to_owned(),
            token: token.clone(),
            req: req.to_owned(),
            action,
            attempt: 1,
        });
        if let Some(w) = self.state.workers.get_mut(worker) {
            w.waiting = Some(Wait {
                action,
                token,
                req: req.to_owned(),
                request,
                attempt: 1,
                deadline_at: self.state.now.saturating_add(ACK_WAIT_MS),
            });
        }
        self.poll(worker);
    }

    /// The mailbox key of an ack. Per (token, req); the flaw keys it by token alone.
    fn ack_key(&self, token: &str, req: &str) -> (Token, Req) {
        if flawed!(self, AckPerToken) {
            (normalize(token), String::new())
        } else {
            (normalize(token), normalize(req))
        }
    }

    /// A waiting worker looks for its ack and, if it is there, takes it.
    fn poll(&mut self, worker: &str) {
        let Some(wait) = self
            .state
            .workers
            .get(worker)
            .and_then(|w| w.waiting.clone())
        else {
            return;
        };
        let key = self.ack_key(&wait.token, &wait.req);
        let Some(ack) = self.state.mailbox.remove(&key) else {
            return;
        };
        self.emit(Output::AckConsumed {
            worker: worker.to_owned(),
            token: ack.token.clone(),
            req: ack.req.clone(),
        });
        if let Some(w) = self.state.workers.get_mut(worker) {
            w.waiting = None;
        }
        self.conclude(worker, &wait.request, &wait.req, Some(ack.reply));
    }

    fn supervisor_step(&mut self, lose_ack: bool) {
        let Some(event) = self.state.queue.pop_front() else {
            return;
        };
        let (token, req) = (normalize(&event.request.token), normalize(&event.req));
        let req_ok = valid_id(&req) || flawed!(self, ReqNotValidated);
        if !valid_id(&token) || !req_ok {
            self.emit(Output::EventRejected {
                token: event.request.token.clone(),
                req: event.req.clone(),
            });
            return;
        }
        let request = Request {
            token: token.clone(),
            ..event.request.clone()
        };
        let reply = self.state.table.transition(&request, self.table_flaws());
        self.emit(Output::Applied {
            worker: event.worker.clone(),
            token: token.clone(),
            req: req.clone(),
            action: request.action,
            outcome: request.outcome,
            expected_generation: request.expected_generation,
            reply: reply.clone(),
        });
        self.prune_acks();
        if lose_ack {
            self.emit(Output::AckLost { token, req });
            return;
        }
        let key = self.ack_key(&token, &req);
        self.state.mailbox.insert(
            key,
            Ack {
                token: token.clone(),
                req: req.clone(),
                reply: reply.clone(),
                written_at: self.state.now,
            },
        );
        self.emit(Output::AckWritten {
            token,
            req,
            status: reply.status,
        });
        let waiting: Vec<WorkerId> = self
            .state
            .workers
            .iter()
            .filter(|(_, w)| w.waiting.is_some())
            .map(|(id, _)| id.clone())
            .collect();
        for w in waiting {
            self.poll(&w);
        }
    }

    /// Removes acks older than an hour, then the oldest beyond 255, making room for one more.
    fn prune_acks(&mut self) {
        let now = self.state.now;
        let before = self.state.mailbox.len();
        self.state
            .mailbox
            .retain(|_, a| now.saturating_sub(a.written_at) <= ACK_TTL_MS);
        if self.state.mailbox.len() >= ACK_KEEP {
            let mut by_age: Vec<((Token, Req), Millis)> = self
                .state
                .mailbox
                .iter()
                .map(|(k, a)| (k.clone(), a.written_at))
                .collect();
            by_age.sort_by_key(|(k, t)| (*t, k.clone()));
            let excess = self.state.mailbox.len() + 1 - ACK_KEEP;
            for (k, _) in by_age.into_iter().take(excess) {
                self.state.mailbox.remove(&k);
            }
        }
        let count = before - self.state.mailbox.len();
        if count > 0 {
            self.emit(Output::AcksPruned {
                count: count as u32,
            });
        }
    }

    /// Waits that ran out: a transition is re-sent once, identical; then the outcome is unknown.
    fn expire_waits(&mut self) {
        let now = self.state.now;
        let due: Vec<WorkerId> = self
            .state
            .workers
            .iter()
            .filter(|(_, w)| w.waiting.as_ref().is_some_and(|x| x.deadline_at <= now))
            .map(|(id, _)| id.clone())
            .collect();
        for worker in due {
            while let Some(wait) = self
                .state
                .workers
                .get(&worker)
                .and_then(|w| w.waiting.clone())
                .filter(|w| w.deadline_at <= now)
            {
                let resend =
                    wait.attempt == 1 && (wait.action.is_transition() || flawed!(self, ResendRead));
                if resend {
                    self.resend(&worker, wait);
                } else {
                    if let Some(w) = self.state.workers.get_mut(&worker) {
                        w.waiting = None;
                    }
                    self.conclude(&worker, &wait.request, &wait.req, None);
                }
            }
        }
    }

    fn resend(&mut self, worker: &str, wait: Wait) {
        self.state.queue.push_back(Event {
            worker: worker.to_owned(),
            req: wait.req.clone(),
            request: wait.request.clone(),
        });
        self.emit(Output::Resent {
            worker: worker.to_owned(),
            token: wait.token.clone(),
            req: wait.req.clone(),
        });
        self.emit(Output::EventQueued {
            worker: worker.to_owned(),
            token: wait.token.clone(),
            req: wait.req.clone(),
            action: wait.action,
            attempt: 2,
        });
        if let Some(w) = self.state.workers.get_mut(worker) {
            w.waiting = Some(Wait {
                attempt: 2,
                deadline_at: wait.deadline_at.saturating_add(ACK_WAIT_MS),
                ..wait
            });
        }
    }

    /// The loop layer (SPEC §3.4): the verdict, and what it does to the worker's binding.
    fn conclude(&mut self, worker: &str, request: &Request, req: &str, reply: Option<Reply>) {
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
            worker: worker.to_owned(),
            action: request.action,
            token: request.token.clone(),
            req: req.to_owned(),
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
                worker: worker.to_owned(),
                root,
                token,
            });
        }
    }

    fn owner_message(&mut self, root: &str) {
        match self.state.table.owner_message(root) {
            OwnerMessage::Refused => self.emit(Output::OwnerMessageRefused {
                root: root.to_owned(),
            }),
            OwnerMessage::Written { generation } => self.emit(Output::OwnerMessageWritten {
                root: root.to_owned(),
                generation,
            }),
        }
    }

    fn task_done(&mut self, task: &str) {
        if let Some((_, status)) = self.state.tasks.get_mut(task) {
            *status = TaskStatus::Done;
        }
        if self.state.table.task_done(task) {
            self.emit(Output::RowCleared {
                root: task.to_owned(),
            });
        }
    }

    fn enqueue(&mut self, task: &str, root: &str) {
        let blocked = self.state.table.blocks(root);
        match blocked {
            Some(status) if !flawed!(self, AdmitUnderFence) => {
                self.emit(Output::AdmissionBlocked {
                    task: task.to_owned(),
                    root: root.to_owned(),
                    status,
                });
            }
            _ => {
                self.state
                    .tasks
                    .insert(task.to_owned(), (root.to_owned(), TaskStatus::Pending));
                self.emit(Output::Admitted {
                    task: task.to_owned(),
                    root: root.to_owned(),
                });
            }
        }
    }

    /// A restart from a snapshot: rows are not reloaded, they only cancel the pending
    /// descendants of fenced roots; a malformed snapshot restores nothing.
    fn restore(&mut self, fences: &FenceSnapshot, pending: &[SnapshotTask]) {
        self.state.table = Table::default();
        self.state.queue.clear();
        let fenced: Option<Vec<&str>> = match fences {
            FenceSnapshot::Malformed(_) => None,
            FenceSnapshot::Rows(rows) if rows.iter().any(|r| r.root.is_empty()) => None,
            FenceSnapshot::Rows(rows) => Some(
                rows.iter()
                    .filter(|r| matches!(r.status, Status::Active | Status::Sealed))
                    .map(|r| r.root.as_str())
                    .collect(),
            ),
        };
        let ignore = flawed!(self, RestoreIgnoresFences);
        let (mut restored, mut cancelled) = (Vec::new(), Vec::new());
        for t in pending {
            let keep = match &fenced {
                None => ignore,
                Some(roots) => ignore || !roots.contains(&t.root.as_str()),
            };
            let status = if keep {
                restored.push(t.task.clone());
                TaskStatus::Pending
            } else {
                cancelled.push(t.task.clone());
                TaskStatus::Cancelled
            };
            self.state
                .tasks
                .insert(t.task.clone(), (t.root.clone(), status));
        }
        self.emit(Output::Restored {
            restored,
            cancelled,
            fail_closed: fenced.is_none(),
        });
    }
}

/// The token a worker's loop sends when the request names none: its bound token; for a
/// revision with none bound, the token of its last seal (an owner follow-up un-seals the root).
fn loop_token(w: &Worker, action: Action, outcome: Option<EndOutcome>) -> Option<Token> {
    match (action, &w.binding) {
        (Action::Begin, _) => None,
        (_, Some(b)) => Some(b.token.clone()),
        (Action::End, None) if outcome == Some(EndOutcome::Revision) => w.sealed_token.clone(),
        _ => None,
    }
}

fn limit(what: &'static str, len: usize, limit: usize) -> Result<(), Misuse> {
    if len >= limit {
        Err(Misuse::LimitReached { what, limit })
    } else {
        Ok(())
    }
}
