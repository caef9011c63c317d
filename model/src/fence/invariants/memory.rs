//! What the fence monitor remembers of a run: the rows as the replies showed them, dead tokens,
//! each worker as its replies taught it, what each request asked and how often it was sent, the
//! reply each ack carries, a pending restore; the [`crate::Monitor`] interface over them.

use super::Invariant;
use crate::fence::table::normalize;
use crate::fence::types::*;
use crate::{Findings, Hashed, Millis};

#[derive(Clone, Debug, PartialEq, Hash)]
pub(super) struct RowSeen {
    pub(super) token: Token,
    pub(super) task: TaskId,
    pub(super) sealed: bool,
    pub(super) generation: u64,
}

#[derive(Debug, Default, Hash)]
pub(super) struct WorkerSeen {
    pub(super) direct: bool,
    pub(super) root: RootId,
    pub(super) task: TaskId,
    /// The (token, req) the worker waits on, normalized.
    pub(super) waiting: Option<(Token, Req)>,
    pub(super) answered: bool,
    /// Tokens the supervisor told this worker own no row (or that its end gave up).
    pub(super) gone: Set<Token>,
    /// Tokens answered `sealed` to this worker; an end of it went unanswered.
    pub(super) sealed_replies: Set<Token>,
    pub(super) unanswered_end: bool,
    pub(super) refused_sealed_after_gap: bool,
    /// The last request's token was chosen by the loop (the input named none).
    pub(super) loop_token: bool,
    /// The last request, until the token it went out with is seen.
    pub(super) pending_ask: Option<(Req, Asked)>,
    /// The token the worker's loop is bound to and the generation it knows (its binding).
    pub(super) known: Option<(Token, u64)>,
}

clone_in_place!(WorkerSeen {
    direct,
    root,
    task,
    waiting,
    answered,
    gone,
    sealed_replies,
    unanswered_end,
    refused_sealed_after_gap,
    loop_token,
    pending_ask,
    known
});

/// What a request asked, by (worker, token, req), normalized.
#[derive(Clone, Debug, Hash)]
pub(super) struct Asked {
    pub(super) worker: WorkerId,
    pub(super) root: RootId,
    pub(super) task: TaskId,
}

#[derive(Debug, Default)]
pub struct Monitor {
    pub(super) now: Millis,
    pub(super) rows: Hashed<Map<RootId, RowSeen>>,
    pub(super) dead: Hashed<Set<Token>>,
    pub(super) workers: Hashed<Map<WorkerId, WorkerSeen>>,
    pub(super) asked: Hashed<Map<(WorkerId, Token, Req), Asked>>,
    /// Sends per request: (worker, token, req); a worker's reqs are fresh per request.
    pub(super) sends: Hashed<Map<(WorkerId, Token, Req), u32>>,
    /// The last reply applied per (token, req): what an ack carries.
    pub(super) replies: Hashed<Map<(Token, Req), (Action, Reply)>>,
    pub(super) restore: Option<(Option<Vec<RootId>>, Vec<SnapshotTask>)>,
    pub(super) findings: Findings<Invariant>,
}

clone_in_place!(Monitor { now, restore, findings } parts { rows, dead, workers, asked, sends, replies });

pub(super) fn key(token: &str, req: &str) -> (Token, Req) {
    (normalize(token), normalize(req))
}

monitor! {
    fingerprint: now, rows, dead, workers, asked, sends, replies, restore;
}

impl Monitor {
    /// A violation of `invariant` unless `holds`, with the message `why` writes.
    pub(super) fn require(
        &mut self,
        holds: bool,
        invariant: Invariant,
        ids: &[&str],
        why: impl FnOnce() -> String,
    ) {
        if !holds {
            self.violate(invariant, ids, why());
        }
    }
}
