//! The fence transport over threads: pooled workers that put events on a queue and poll a
//! mailbox for their own ack, a direct turn that calls the table in-process, and supervisor
//! threads that take events, apply the table's transition and write acks — with the faults of
//! SPEC §3.3 (a dropped event, a lost ack, a stall past the wait). Everything shared is behind
//! one lock; what each thread did and was told is recorded as the fence machine's inputs and
//! observed outputs, and checked against the model.
//!
//! Time: a wait is `POLLS_PER_WAIT` polls of the mailbox (they stand for the 10 000 ms wait).
//! A worker that gives up records a `tick` to its deadline, under the lock and after one last
//! look, so the record and the model agree on whether the ack came in time.

use std::collections::{BTreeMap, VecDeque};

use turnfence_model::fence;
use turnfence_model::fence::table::{normalize, valid_id, Request, Table, TableFlaws};
use turnfence_model::fence::{Action, EndOutcome, Id, Path, Reply, Status, Verdict, ACK_WAIT_MS};

use turnfence_model::fence::FenceMachine;

use super::record::Record;
use crate::sync::{thread, Arc, AtomicBool, Mutex, Ordering};
use crate::trace;

/// How many polls of the mailbox stand for one 10 000 ms wait.
pub const POLLS_PER_WAIT: usize = 2;

/// How the adapter is built: correctly, or with one mistake real transports made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FenceVariant {
    Correct,
    /// A waiter reads any ack of its token, not only its own request's.
    WaiterReadsAnyAckOfToken,
    /// A read (inspect) is re-sent like a transition.
    ResendRead,
    /// A supervisor handler decides a re-adoption under the lock and writes the new token in a
    /// second acquisition, without looking again.
    RebindFromStaleRead,
    /// The direct turn goes through the queue and the mailbox.
    DirectThroughQueue,
}

/// What the supervisor does to the event it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    None,
    Drop,
    LoseAck,
    /// Waits until the worker gave up on this request, then handles it.
    StallPastTheWait,
}

#[derive(Clone, Debug)]
struct Ev {
    worker: Id,
    req: Id,
    request: Request,
}

struct Shared {
    table: Table,
    queue: VecDeque<Ev>,
    mailbox: BTreeMap<(Id, Id), (Id, Reply)>,
    record: Record<FenceMachine>,
    clock: u64,
}

impl Shared {
    fn input(&mut self, at: u64, kind: fence::InputKind) {
        self.clock = self.clock.max(at);
        let input = fence::Input::new(self.clock, kind);
        self.record.input(input);
    }

    fn told(&mut self, output: fence::Output) {
        self.record.told(output);
    }
}

/// The supervisor side and everything shared.
#[derive(Clone)]
pub struct FenceAdapter {
    shared: Arc<Mutex<Shared>>,
    variant: FenceVariant,
    gave_up: Arc<AtomicBool>,
}

/// A worker: its id, path, task and root, and its binding as its loop keeps it.
pub struct Worker {
    adapter: FenceAdapter,
    pub id: Id,
    path: Path,
    task: Id,
    root: Id,
    binding: Option<(Id, u64)>,
    /// The request in flight, re-sent identical.
    in_flight: Option<Request>,
}

fn accepted(action: Action) -> &'static [Status] {
    match action {
        Action::Begin => &[Status::Active],
        Action::Inspect => &[Status::Active, Status::Sealed],
        _ => &[Status::Released, Status::Sealed],
    }
}

fn verdict(action: Action, reply: Option<&Reply>) -> Verdict {
    match reply {
        None => Verdict::Unknown,
        Some(r) if r.ok && accepted(action).contains(&r.status) => Verdict::Ok { status: r.status },
        Some(r) => Verdict::Refused { status: r.status },
    }
}

impl FenceAdapter {
    pub fn new(variant: FenceVariant) -> FenceAdapter {
        FenceAdapter {
            shared: Arc::new(Mutex::new(Shared {
                table: Table::default(),
                queue: VecDeque::new(),
                mailbox: BTreeMap::new(),
                record: Record::default(),
                clock: 0,
            })),
            variant,
            gave_up: Arc::new(AtomicBool::new(false)),
        }
    }

    fn lock(&self) -> crate::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts a worker.
    pub fn worker(&self, id: &str, path: Path, task: &str, root: &str) -> Worker {
        let mut s = self.lock();
        s.input(
            0,
            fence::InputKind::WorkerStart {
                worker: id.into(),
                path,
                task: task.into(),
                root: root.into(),
            },
        );
        Worker {
            adapter: self.clone(),
            id: id.into(),
            path,
            task: task.into(),
            root: root.into(),
            binding: None,
            in_flight: None,
        }
    }

    /// One supervisor handler: takes the head event (if any) and handles it with `fault`.
    /// Returns whether there was an event.
    pub fn handle_one(&self, fault: Fault) -> bool {
        if fault == Fault::StallPastTheWait {
            while !self.gave_up.load(Ordering::SeqCst) {
                thread::yield_now();
            }
        }
        let mut s = self.lock();
        let Some(ev) = s.queue.pop_front() else {
            return false;
        };
        if fault == Fault::Drop {
            s.input(0, fence::InputKind::DropEvent);
            s.told(fence::Output::EventDropped {
                token: ev.request.token,
                req: ev.req,
            });
            return true;
        }
        let lose_ack = fault == Fault::LoseAck;
        s.input(0, fence::InputKind::SupervisorStep { lose_ack });
        let (token, req) = (normalize(&ev.request.token), normalize(&ev.req));
        if !valid_id(&token) || !valid_id(&req) {
            s.told(fence::Output::EventRejected {
                token: ev.request.token,
                req: ev.req,
            });
            return true;
        }
        let request = Request {
            token: token.clone(),
            ..ev.request.clone()
        };
        let stale_rebind = self.variant == FenceVariant::RebindFromStaleRead
            && request.action == Action::Begin
            && s.table
                .rows
                .get(&request.root)
                .is_some_and(|r| r.token != token);
        let reply = if stale_rebind {
            // Decide now on what the row looks like, write the new token later.
            let mut copy = s.table.clone();
            let reply = copy.transition(&request, TableFlaws::default());
            drop(s);
            thread::yield_now();
            s = self.lock();
            if let Some(row) = s.table.rows.get_mut(&request.root) {
                row.token = token.clone();
            }
            reply
        } else {
            s.table.transition(&request, TableFlaws::default())
        };
        s.told(fence::Output::applied(
            &ev.worker, &token, &req, &request, &reply,
        ));
        if lose_ack {
            s.told(fence::Output::AckLost { token, req });
        } else {
            let status = reply.status;
            s.mailbox
                .insert((token.clone(), req.clone()), (ev.worker, reply));
            s.told(fence::Output::AckWritten { token, req, status });
        }
        true
    }

    /// The record, checked against the fence machine.
    pub fn conformance(&self) -> trace::Verdict {
        self.lock().record.verdict()
    }

    /// The record, for messages.
    pub fn record(&self) -> Vec<String> {
        self.lock()
            .record
            .observations()
            .iter()
            .map(|o| format!("{o:?}"))
            .collect()
    }
}

impl Worker {
    /// Sends a request and waits for its verdict (the direct path applies it at once).
    pub fn request(
        &mut self,
        action: Action,
        token: &str,
        req: &str,
        outcome: Option<EndOutcome>,
    ) -> Verdict {
        self.send(action, token, req, outcome);
        self.wait(action, token, req)
    }

    fn request_of(&self, action: Action, token: &str, outcome: Option<EndOutcome>) -> Request {
        let known = self
            .binding
            .as_ref()
            .filter(|(t, _)| normalize(t) == normalize(token))
            .map(|(_, g)| *g);
        Request {
            action,
            token: token.into(),
            root: self.root.clone(),
            task: self.task.clone(),
            outcome,
            expected_generation: if action == Action::End { known } else { None },
        }
    }

    /// Puts the request on its way (records the input); the direct path is answered here.
    pub fn send(
        &mut self,
        action: Action,
        token: &str,
        req: &str,
        outcome: Option<EndOutcome>,
    ) -> Option<Verdict> {
        let request = self.request_of(action, token, outcome);
        let a = self.adapter.clone();
        let mut s = a.lock();
        let at = s.clock;
        s.input(
            at,
            fence::InputKind::request(
                self.id.clone(),
                action,
                Some(token.into()),
                req.into(),
                outcome,
            ),
        );
        let direct = self.path == Path::Direct && a.variant != FenceVariant::DirectThroughQueue;
        if direct {
            let reply = s.table.transition(&request, TableFlaws::default());
            s.told(fence::Output::applied(
                &self.id, token, req, &request, &reply,
            ));
            return Some(self.conclude(&mut s, action, token, req, Some(&reply)));
        }
        s.queue.push_back(Ev {
            worker: self.id.clone(),
            req: req.into(),
            request: request.clone(),
        });
        s.told(fence::Output::EventQueued {
            worker: self.id.clone(),
            token: token.into(),
            req: req.into(),
            action,
            attempt: 1,
        });
        drop(s);
        self.in_flight = Some(request);
        None
    }

    /// Waits for the request's ack: polls, gives up at the deadline (one last look under the
    /// lock), re-sends a transition once, and ends `unknown` on silence.
    pub fn wait(&mut self, action: Action, token: &str, req: &str) -> Verdict {
        let a = self.adapter.clone();
        if self.path == Path::Direct && a.variant != FenceVariant::DirectThroughQueue {
            // Answered in `send`; nothing to wait for.
            return Verdict::Unknown;
        }
        let start = a.lock().clock;
        let mut deadline = start + ACK_WAIT_MS;
        for attempt in 1..=2u8 {
            for _ in 0..POLLS_PER_WAIT {
                if let Some(v) = self.take(action, token, req) {
                    return v;
                }
                thread::yield_now();
            }
            let mut s = a.lock();
            if let Some(v) = self.take_locked(&mut s, action, token, req) {
                return v;
            }
            s.input(deadline, fence::InputKind::Tick);
            a.gave_up.store(true, Ordering::SeqCst);
            let resend = action.is_transition() || a.variant == FenceVariant::ResendRead;
            if attempt == 1 && resend {
                let Some(request) = self.in_flight.clone() else {
                    break;
                };
                s.queue.push_back(Ev {
                    worker: self.id.clone(),
                    req: req.into(),
                    request,
                });
                s.told(fence::Output::Resent {
                    worker: self.id.clone(),
                    token: token.into(),
                    req: req.into(),
                });
                s.told(fence::Output::EventQueued {
                    worker: self.id.clone(),
                    token: token.into(),
                    req: req.into(),
                    action,
                    attempt: 2,
                });
                deadline += ACK_WAIT_MS;
                continue;
            }
            return self.conclude(&mut s, action, token, req, None);
        }
        Verdict::Unknown
    }

    fn take(&mut self, action: Action, token: &str, req: &str) -> Option<Verdict> {
        let a = self.adapter.clone();
        let mut s = a.lock();
        self.take_locked(&mut s, action, token, req)
    }

    fn take_locked(
        &mut self,
        s: &mut Shared,
        action: Action,
        token: &str,
        req: &str,
    ) -> Option<Verdict> {
        let key = match self.adapter.variant {
            FenceVariant::WaiterReadsAnyAckOfToken => s
                .mailbox
                .keys()
                .find(|(t, _)| *t == normalize(token))
                .cloned(),
            _ => Some((normalize(token), normalize(req))).filter(|k| s.mailbox.contains_key(k)),
        }?;
        let (_, reply) = s.mailbox.remove(&key)?;
        s.told(fence::Output::AckConsumed {
            worker: self.id.clone(),
            token: key.0,
            req: key.1,
        });
        Some(self.conclude(s, action, token, req, Some(&reply)))
    }

    /// The worker's verdict on `reply` (`None`: silence), recorded as told and learnt by its
    /// loop layer. The learning is the worker's own state: holding the lock for it changes no
    /// interleaving.
    fn conclude(
        &mut self,
        s: &mut Shared,
        action: Action,
        token: &str,
        req: &str,
        reply: Option<&Reply>,
    ) -> Verdict {
        let v = verdict(action, reply);
        s.told(fence::Output::Verdict {
            worker: self.id.clone(),
            action,
            token: token.into(),
            req: req.into(),
            verdict: v.clone(),
        });
        self.learn(action, token, reply);
        v
    }

    /// The loop layer's binding (SPEC §3.4).
    fn learn(&mut self, action: Action, token: &str, reply: Option<&Reply>) {
        let ok = |r: &Reply| r.ok && accepted(action).contains(&r.status);
        match (action, reply) {
            (Action::Begin, Some(r)) if ok(r) => {
                self.binding = Some((
                    r.token.clone().unwrap_or_else(|| token.into()),
                    r.owner_message_generation.unwrap_or(0),
                ));
            }
            (Action::Inspect, Some(r)) if ok(r) => {
                if let Some((_, g)) = &mut self.binding {
                    *g = r.owner_message_generation.unwrap_or(*g);
                }
            }
            (Action::Inspect, Some(_)) | (Action::End, _) => self.binding = None,
            _ => {}
        }
    }
}
