//! Renaming the fence system's interchangeable names — tokens and request ids — consistently
//! through a state, a monitor's memory and an input.
//!
//! The model treats a token or a `req` only by equality and by its form (`valid_id`,
//! `normalize`): beyond that it never reads one, never compares one with a worker, task or root
//! id, and orders them only to choose which acks of one age to prune past 256 (more acks than
//! any explored bound set holds). So within those bounds a renaming that maps valid ids to valid
//! ids, keeps the malformed ones, and fixes every name still to be drawn, maps runs to runs:
//! the state the renamed inputs reach is the renamed state, the monitor remembers the renamed
//! facts and finds the same violations. The explorer's symmetry reduction rests on this
//! (`checks/src/explore/`), and fingerprints a state by hashing it as renamed
//! (`hash_renamed`), without building it.
//! Worker, task and root ids are not renamed: the machine processes waits that run out at one
//! instant in worker order, so two workers are not interchangeable even when they start alike.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

use super::flaw::Flaw;
use super::machine::{Ack, Binding, Event, FenceMachine, FenceState, Wait, Worker};
use super::table::{Request, Row, Table};
use super::types::*;
use crate::Plant;

/// A renaming of tokens and request ids; a name it does not mention stays as it is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Renaming {
    tokens: BTreeMap<Token, Token>,
    reqs: BTreeMap<Req, Req>,
}

impl Renaming {
    /// The renaming that maps each token and req to the one given.
    pub fn new(tokens: BTreeMap<Token, Token>, reqs: BTreeMap<Req, Req>) -> Renaming {
        Renaming { tokens, reqs }
    }

    /// The new name of a token.
    pub fn token(&self, token: &str) -> Token {
        self.tokens
            .get(token)
            .cloned()
            .unwrap_or_else(|| token.into())
    }

    /// The new name of a request id.
    pub fn req(&self, req: &str) -> Req {
        self.reqs.get(req).cloned().unwrap_or_else(|| req.into())
    }

    /// A set of tokens, renamed.
    pub fn token_set(&self, set: &Set<Token>) -> Set<Token> {
        set.iter().map(|t| self.token(t)).collect()
    }

    /// A (token, req) key, renamed.
    pub fn key(&self, (token, req): &(Token, Req)) -> (Token, Req) {
        (self.token(token), self.req(req))
    }

    /// The new name of a token, borrowed: for hashing a renamed value without building it.
    pub(crate) fn token_ref<'a>(&'a self, token: &'a str) -> &'a str {
        self.tokens.get(token).map_or(token, Id::as_str)
    }

    /// The new name of a request id, borrowed.
    pub(crate) fn req_ref<'a>(&'a self, req: &'a str) -> &'a str {
        self.reqs.get(req).map_or(req, Id::as_str)
    }

    /// Hashes a set of names, renamed, in the order of their new names.
    pub(crate) fn hash_set<'a, H: Hasher>(names: impl Iterator<Item = &'a str>, h: &mut H) {
        let mut names: Vec<&str> = names.collect();
        names.sort_unstable();
        names.hash(h);
    }

    /// Hashes a map's entries by their renamed keys, in the order of those keys.
    pub(crate) fn hash_entries<K: Ord + Hash, V, H: Hasher>(
        mut entries: Vec<(K, V)>,
        h: &mut H,
        mut value: impl FnMut(&V, &mut H),
    ) {
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        entries.len().hash(h);
        for (k, v) in &entries {
            k.hash(h);
            value(v, h);
        }
    }

    /// Hashes a reply as it is once renamed.
    pub(crate) fn hash_reply<H: Hasher>(&self, reply: &Reply, h: &mut H) {
        let token = reply.token.as_deref().map(|t| self.token_ref(t));
        (
            reply.ok,
            reply.status,
            token,
            reply.owner_message_generation,
        )
            .hash(h);
        (reply.row_absent, reply.generation_mismatch, &reply.error).hash(h);
    }

    /// Hashes a request as it is once renamed.
    pub(crate) fn hash_request<H: Hasher>(&self, r: &Request, h: &mut H) {
        let token = self.token_ref(&r.token);
        (
            r.action,
            token,
            &r.root,
            &r.task,
            r.outcome,
            r.expected_generation,
        )
            .hash(h);
    }
}

impl Reply {
    /// The reply with its token renamed (its error names a root, never a token).
    pub fn renamed(&self, r: &Renaming) -> Reply {
        Reply {
            token: self.token.as_deref().map(|t| r.token(t)),
            ..self.clone()
        }
    }
}

impl Request {
    /// The request with its token renamed.
    pub fn renamed(&self, r: &Renaming) -> Request {
        Request {
            token: r.token(&self.token),
            ..self.clone()
        }
    }
}

impl Table {
    /// The table with its rows' tokens renamed.
    pub fn renamed(&self, r: &Renaming) -> Table {
        let rows = self.rows.iter().map(|(root, row)| {
            let row = Row {
                token: r.token(&row.token),
                ..row.clone()
            };
            (root.clone(), row)
        });
        Table {
            rows: rows.collect(),
        }
    }
}

impl Worker {
    fn renamed(&self, r: &Renaming) -> Worker {
        Worker {
            path: self.path,
            task: self.task.clone(),
            root: self.root.clone(),
            binding: self.binding.as_ref().map(|b| Binding {
                token: r.token(&b.token),
                generation: b.generation,
            }),
            sealed_token: self.sealed_token.as_deref().map(|t| r.token(t)),
            unanswered_end: self.unanswered_end.as_deref().map(|t| r.token(t)),
            waiting: self.waiting.as_ref().map(|w| Wait {
                token: r.token(&w.token),
                req: r.req(&w.req),
                request: w.request.renamed(r),
                ..w.clone()
            }),
            used_reqs: self.used_reqs.iter().map(|q| r.req(q)).collect(),
        }
    }
}

impl<P: Plant<Flaw>> FenceMachine<P> {
    /// The machine with every token and request id renamed: its state, the outputs not yet
    /// drained (their ids unrenamed: drain first) and its plant.
    pub fn renamed(&self, r: &Renaming) -> FenceMachine<P> {
        self.with_state_from(|state| state.renamed(r))
    }
}

impl FenceState {
    /// The state with every token and request id renamed: the table's rows, the queued events,
    /// the mailbox (keys and acks), and each worker's binding, seal, wait and spent reqs.
    pub fn renamed(&self, r: &Renaming) -> FenceState {
        FenceState {
            now: self.now,
            table: self.table.renamed(r).into(),
            queue: self
                .queue
                .iter()
                .map(|e| Event {
                    worker: e.worker.clone(),
                    req: r.req(&e.req),
                    request: e.request.renamed(r),
                })
                .collect(),
            mailbox: self
                .mailbox
                .iter()
                .map(|(key, ack)| {
                    let ack = Ack {
                        token: r.token(&ack.token),
                        req: r.req(&ack.req),
                        reply: ack.reply.renamed(r),
                        written_at: ack.written_at,
                    };
                    (r.key(key), ack)
                })
                .collect(),
            workers: self
                .workers
                .iter()
                .map(|(id, w)| (id.clone(), w.renamed(r)))
                .collect(),
            tasks: self.tasks.clone(),
        }
    }
}

impl FenceState {
    /// Hashes the state as [`FenceState::renamed`] would make it, without making it (maps keyed
    /// by names in the order of their new names): what a symmetry reduction fingerprints, once
    /// per labeling tried. Equal renamed states hash equal; it is not `Hash` of the renamed one.
    pub fn hash_renamed<H: Hasher>(&self, r: &Renaming, h: &mut H) {
        self.now.hash(h);
        self.table.rows.len().hash(h);
        for (root, row) in &self.table.rows {
            let token = r.token_ref(&row.token);
            (root, token, &row.root, &row.task, row.status).hash(h);
            (row.owner_message_generation, row.outcome).hash(h);
        }
        self.queue.len().hash(h);
        for e in &self.queue {
            (&e.worker, r.req_ref(&e.req)).hash(h);
            r.hash_request(&e.request, h);
        }
        let mailbox = self.mailbox.iter();
        let mailbox = mailbox.map(|((t, q), a)| ((r.token_ref(t), r.req_ref(q)), a));
        Renaming::hash_entries(mailbox.collect(), h, |a, h| {
            (r.token_ref(&a.token), r.req_ref(&a.req), a.written_at).hash(h);
            r.hash_reply(&a.reply, h);
        });
        self.workers.len().hash(h);
        for (id, w) in &self.workers {
            (id, w.path, &w.task, &w.root).hash(h);
            let binding = w.binding.as_ref();
            binding
                .map(|b| (r.token_ref(&b.token), b.generation))
                .hash(h);
            w.sealed_token.as_deref().map(|t| r.token_ref(t)).hash(h);
            w.unanswered_end.as_deref().map(|t| r.token_ref(t)).hash(h);
            w.waiting.is_some().hash(h);
            if let Some(x) = &w.waiting {
                let (token, req) = (r.token_ref(&x.token), r.req_ref(&x.req));
                (x.action, token, req, x.attempt, x.deadline_at).hash(h);
                r.hash_request(&x.request, h);
            }
            Renaming::hash_set(w.used_reqs.iter().map(|q| r.req_ref(q)), h);
        }
        self.tasks.hash(h);
    }
}

impl InputKind {
    /// The input with the token and request id it names renamed.
    pub fn renamed(&self, r: &Renaming) -> InputKind {
        let mut input = self.clone();
        if let InputKind::Request { token, req, .. } = &mut input {
            *token = token.as_deref().map(|t| r.token(t));
            *req = r.req(req);
        }
        input
    }
}
