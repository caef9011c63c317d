//! A caller's mistake with the fence machine: the input is refused, nothing changes but time.

use std::fmt;

use serde::Serialize;

use super::types::{TaskId, WorkerId};
use crate::machine::said;
use crate::Millis;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "misuse", rename_all = "snake_case")]
pub enum Misuse {
    TimeWentBackwards {
        expected_at_least: Millis,
        got: Millis,
    },
    UnknownWorker {
        worker: WorkerId,
    },
    DuplicateWorker {
        worker: WorkerId,
    },
    DuplicateTask {
        task: TaskId,
    },
    /// A worker sends one request at a time: it is still waiting for the last one.
    WorkerBusy {
        worker: WorkerId,
    },
    /// The supervisor was asked to take an event from an empty queue.
    NothingQueued,
    /// Each request has a fresh `req`; this worker used this one before.
    ReqReused {
        worker: WorkerId,
        req: String,
    },
    /// The worker's loop has no token to send: a begin names a fresh one; nothing is bound.
    NoToken {
        worker: WorkerId,
    },
    LimitReached {
        what: &'static str,
        limit: usize,
    },
}

impl fmt::Display for Misuse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Misuse::TimeWentBackwards {
                expected_at_least,
                got,
            } => said::time_went_backwards(f, *expected_at_least, *got),
            Misuse::UnknownWorker { worker } => write!(f, "unknown worker {worker:?}"),
            Misuse::DuplicateWorker { worker } => {
                write!(f, "worker {worker:?} already started")
            }
            Misuse::DuplicateTask { task } => write!(f, "task {task:?} already exists"),
            Misuse::WorkerBusy { worker } => {
                write!(f, "worker {worker:?} is still waiting for its last request")
            }
            Misuse::NothingQueued => write!(f, "the supervisor's queue is empty"),
            Misuse::ReqReused { worker, req } => {
                write!(f, "worker {worker:?} already used req {req:?}")
            }
            Misuse::NoToken { worker } => write!(f, "worker {worker:?} has no token to send"),
            Misuse::LimitReached { what, limit } => said::limit_reached(f, what, *limit),
        }
    }
}

impl std::error::Error for Misuse {}
