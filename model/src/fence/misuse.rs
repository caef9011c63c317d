//! A caller's mistake with the fence machine: the input is refused, nothing changes but time.

use super::types::{Req, TaskId, WorkerId};

misuse! {
    UnknownWorker { worker: WorkerId } => "unknown worker {worker:?}",
    DuplicateWorker { worker: WorkerId } => "worker {worker:?} already started",
    DuplicateTask { task: TaskId } => "task {task:?} already exists",
    /// A worker sends one request at a time: it is still waiting for the last one.
    WorkerBusy { worker: WorkerId } => "worker {worker:?} is still waiting for its last request",
    /// The supervisor was asked to take an event from an empty queue.
    NothingQueued => "the supervisor's queue is empty",
    /// Each request has a fresh `req`; this worker used this one before.
    ReqReused { worker: WorkerId, req: Req } => "worker {worker:?} already used req {req:?}",
    /// The worker's loop has no token to send: a begin names a fresh one; nothing is bound.
    NoToken { worker: WorkerId } => "worker {worker:?} has no token to send",
}
