//! The fence table and its transitions (SPEC §3.2): at most one row per root task, the only
//! authority on a fence. Pure functions over the rows; every reply carries exactly the fields the
//! table names.
//!
//! ```text
//!   (absent) ──begin──► active ──end(other, gen ok)──► sealed
//!       ▲                 │ ▲                            │
//!       │   end(revision) │ │ begin(same task, new       │ end(revision) | end(gen mismatch)
//!       │   end(mismatch) │ │ token): rebind             │ task_done(root)
//!       └─────────────────┴─┴────────────────────────────┘
//! ```

use std::borrow::Cow;

use serde::Serialize;

use super::types::{Action, EndOutcome, Id, Map, Output, Reply, RootId, Status, TaskId, Token};
use crate::Hashed;

/// A row's stored status. "Released" is the row's absence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RowStatus {
    Active,
    Sealed,
}

impl RowStatus {
    pub fn status(self) -> Status {
        match self {
            RowStatus::Active => Status::Active,
            RowStatus::Sealed => Status::Sealed,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Row {
    pub token: Token,
    pub root: RootId,
    /// The owner task.
    pub task: TaskId,
    pub status: RowStatus,
    pub owner_message_generation: u64,
    pub outcome: Option<EndOutcome>,
}

/// A request as the table sees it (after the transport).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Request {
    pub action: Action,
    pub token: Token,
    pub root: RootId,
    pub task: TaskId,
    pub outcome: Option<EndOutcome>,
    pub expected_generation: Option<u64>,
}

/// Rule changes the flaw switch may plant in the table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TableFlaws {
    /// A same-token begin answers `active` whatever the row's status.
    pub same_token_answers_active: bool,
    /// A new token from the row's own task is refused as if foreign.
    pub no_readoption: bool,
    /// Re-adoption keeps the old token in the row and returns it.
    pub readopt_keeps_token: bool,
    /// A foreign begin takes the row over.
    pub dead_owner_takeover: bool,
}

/// The table: rows by root.
#[derive(Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Table {
    pub rows: Map<RootId, Row>,
}

clone_in_place!(Table {} maps { rows });

fn error(message: &str) -> Reply {
    Reply {
        error: Some(message.into()),
        ..Reply::new(false, Status::Error)
    }
}

fn about(row: &Row, ok: bool) -> Reply {
    Reply {
        token: Some(row.token.clone()),
        owner_message_generation: Some(row.owner_message_generation),
        ..Reply::new(ok, row.status.status())
    }
}

impl Table {
    /// The status that blocks admission under `root`, if any.
    pub fn blocks(&self, root: &str) -> Option<Status> {
        self.rows.get(root).map(|r| r.status.status())
    }

    fn root_of_token(&self, token: &str) -> Option<RootId> {
        self.rows
            .values()
            .find(|r| r.token == token)
            .map(|r| r.root.clone())
    }

    /// Applies one request (transitions T0–E3).
    pub fn transition(&mut self, r: &Request, flaws: TableFlaws) -> Reply {
        if r.token.trim().is_empty() || r.action == Action::Invalid {
            return error("invalid acceptance fence event");
        }
        match r.action {
            Action::Begin => self.begin(r, flaws),
            Action::Inspect | Action::End => self.inspect_or_end(r),
            Action::Invalid => error("invalid acceptance fence event"),
        }
    }

    fn begin(&mut self, r: &Request, flaws: TableFlaws) -> Reply {
        let root = if r.root.is_empty() { &r.task } else { &r.root };
        let requester = if r.task.is_empty() { root } else { &r.task };
        if root.is_empty() {
            return error("missing root_task_id");
        }
        let Some(row) = self.rows.get_mut(root) else {
            let row = Row {
                token: r.token.clone(),
                root: root.clone(),
                task: requester.clone(),
                status: RowStatus::Active,
                owner_message_generation: 0,
                outcome: None,
            };
            let reply = about(&row, true);
            self.rows.insert(root.clone(), row);
            return reply;
        };
        if row.token == r.token {
            // A re-send: the row's real status.
            let mut reply = about(row, true);
            if flaws.same_token_answers_active {
                reply.status = Status::Active;
            }
            return reply;
        }
        match row.status {
            RowStatus::Active if row.task == *requester && !flaws.no_readoption => {
                if !flaws.readopt_keeps_token {
                    row.token = r.token.clone();
                }
                about(row, true)
            }
            RowStatus::Active if flaws.dead_owner_takeover => {
                row.token = r.token.clone();
                row.task = requester.clone();
                about(row, true)
            }
            RowStatus::Sealed => Reply {
                error: Some(format!("acceptance fence already sealed for root {root}")),
                ..Reply::new(false, Status::Sealed)
            },
            RowStatus::Active => Reply {
                error: Some(format!("acceptance fence already active for root {root}")),
                ..Reply::new(false, Status::Active)
            },
        }
    }

    fn inspect_or_end(&mut self, r: &Request) -> Reply {
        let Some(root) = self.root_of_token(&r.token) else {
            return Reply {
                token: Some(r.token.clone()),
                row_absent: true,
                ..Reply::new(true, Status::Released)
            };
        };
        let Some(row) = self.rows.get_mut(&root) else {
            return error("row vanished");
        };
        if r.action == Action::Inspect {
            return about(row, true);
        }
        let released = |row: &Row| Reply {
            token: Some(row.token.clone()),
            ..Reply::new(true, Status::Released)
        };
        let outcome = r.outcome.unwrap_or(EndOutcome::Terminal);
        if outcome == EndOutcome::Revision {
            let reply = released(row);
            self.rows.remove(&root);
            return reply;
        }
        let gen = row.owner_message_generation;
        if r.expected_generation.is_some_and(|e| e != gen) {
            let reply = Reply {
                generation_mismatch: true,
                owner_message_generation: Some(gen),
                ..released(row)
            };
            self.rows.remove(&root);
            return reply;
        }
        row.status = RowStatus::Sealed;
        row.outcome = Some(outcome);
        Reply {
            token: Some(row.token.clone()),
            ..Reply::new(true, Status::Sealed)
        }
    }

    /// `task_done(task)` removes the row whose root is that task; a child never clears its root.
    pub fn task_done(&mut self, task: &str) -> bool {
        self.rows.remove(task).is_some()
    }

    /// An owner message to `root`: refused for a sealed row; otherwise written first, then the
    /// active row's generation moves. Returns the row's generation after, if there is a row.
    /// The table is borrowed mutably (and, shared with another state, copied) only where a
    /// generation moves.
    pub fn owner_message(table: &mut Hashed<Table>, root: &str) -> OwnerMessage {
        match table.rows.get(root) {
            Some(row) if row.status == RowStatus::Sealed => OwnerMessage::Refused,
            Some(_) => OwnerMessage::Written {
                generation: table.rows.get_mut(root).map(|row| {
                    row.owner_message_generation = row.owner_message_generation.saturating_add(1);
                    row.owner_message_generation
                }),
            },
            None => OwnerMessage::Written { generation: None },
        }
    }
}

/// What became of an owner message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnerMessage {
    /// Refused: the root's row is sealed.
    Refused,
    /// Written to the mailbox; `generation` is the active row's after it moved.
    Written { generation: Option<u64> },
}

/// A token or request id as the supervisor accepts it: 1–64 of `[0-9a-f]` after trimming and
/// lower-casing. Anything else never reaches a transition or the mailbox.
pub fn valid_id(id: &str) -> bool {
    let id = trimmed(id).as_bytes();
    !id.is_empty() && id.len() <= 64 && id.iter().all(u8::is_ascii_hexdigit)
}

/// The normalized form of an id (trimmed, lower-cased), owned: to be kept.
pub fn normalize(id: &str) -> Id {
    match normalized(id) {
        Cow::Borrowed(id) => id.into(),
        Cow::Owned(id) => id.into(),
    }
}

/// The normalized form of an id, borrowed when it is one already: to look up or compare with,
/// without making an id of it.
pub fn normalized(id: &str) -> Cow<'_, str> {
    let id = trimmed(id);
    // Every byte looked at, without an early exit: the loop is a few vector instructions.
    if id
        .bytes()
        .fold(false, |upper, b| upper | b.is_ascii_uppercase())
    {
        Cow::Owned(id.to_ascii_lowercase())
    } else {
        Cow::Borrowed(id)
    }
}

/// `id.trim()`, without its scan from both ends when there is nothing to trim: an id whose first
/// and last bytes are ASCII and not white space (a byte past ASCII may be part of a Unicode
/// space, which `trim` removes).
fn trimmed(id: &str) -> &str {
    let plain = |b: Option<&u8>| b.is_some_and(|&b| b.is_ascii() && !(b as char).is_whitespace());
    let bytes = id.as_bytes();
    if plain(bytes.first()) && plain(bytes.last()) {
        id
    } else {
        id.trim()
    }
}

/// The output of a request the table applied: made here, beside the request, so the types stand
/// below the table.
impl Output {
    /// The table applied `request`, sent by `worker` as (`token`, `req`), and replied `reply`.
    pub fn applied(
        worker: &str,
        token: &str,
        req: &str,
        request: &Request,
        reply: &Reply,
    ) -> Output {
        Output::Applied {
            worker: worker.into(),
            token: token.into(),
            req: req.into(),
            action: request.action,
            outcome: request.outcome,
            expected_generation: request.expected_generation,
            reply: reply.clone(),
        }
    }
}
