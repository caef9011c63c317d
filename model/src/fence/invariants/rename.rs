//! The monitor's memory under a renaming of tokens and request ids (`crate::fence::rename`), and
//! the requests it saw, by (worker, token, req): what a symmetry reduction orders names by.

use std::hash::{Hash, Hasher};

use super::memory::{Monitor, RowSeen, WorkerSeen};
use crate::fence::rename::Renaming;
use crate::fence::types::*;

impl WorkerSeen {
    fn renamed(&self, r: &Renaming) -> WorkerSeen {
        WorkerSeen {
            waiting: self.waiting.as_ref().map(|k| r.key(k)),
            gone: r.token_set(&self.gone),
            sealed_replies: r.token_set(&self.sealed_replies),
            pending_ask: self
                .pending_ask
                .as_ref()
                .map(|(req, asked)| (r.req(req), asked.clone())),
            known: self.known.as_ref().map(|(t, g)| (r.token(t), *g)),
            ..self.clone()
        }
    }
}

impl Monitor {
    /// The monitor's memory with every token and request id renamed; its findings and
    /// reachability as they were.
    pub fn renamed(&self, r: &Renaming) -> Monitor {
        let triple = |(w, t, q): &(WorkerId, Token, Req)| (w.clone(), r.token(t), r.req(q));
        Monitor {
            now: self.now,
            rows: self
                .rows
                .iter()
                .map(|(root, row)| {
                    let row = RowSeen {
                        token: r.token(&row.token),
                        ..row.clone()
                    };
                    (root.clone(), row)
                })
                .collect(),
            dead: r.token_set(&self.dead).into(),
            workers: self
                .workers
                .iter()
                .map(|(id, w)| (id.clone(), w.renamed(r)))
                .collect(),
            asked: self
                .asked
                .iter()
                .map(|(k, a)| (triple(k), a.clone()))
                .collect(),
            sends: self.sends.iter().map(|(k, n)| (triple(k), *n)).collect(),
            replies: self
                .replies
                .iter()
                .map(|(k, (action, reply))| (r.key(k), (*action, reply.renamed(r))))
                .collect(),
            restore: self.restore.clone(),
            findings: self.findings.clone(),
        }
    }

    /// Hashes the memory [`crate::Monitor::fingerprint`] hashes, as [`Monitor::renamed`] would
    /// make it, without making it (maps keyed by names in the order of their new names).
    pub fn hash_renamed<H: Hasher>(&self, r: &Renaming, h: &mut H) {
        self.now.hash(h);
        self.rows.len().hash(h);
        for (root, row) in &self.rows {
            let token = r.token_ref(&row.token);
            (root, token, &row.task, row.sealed, row.generation).hash(h);
        }
        Renaming::hash_set(self.dead.iter().map(|t| r.token_ref(t)), h);
        self.workers.len().hash(h);
        for (id, w) in &self.workers {
            (id, w.direct, &w.root, &w.task, w.answered, w.unanswered_end).hash(h);
            (w.refused_sealed_after_gap, w.loop_token).hash(h);
            let waiting = w.waiting.as_ref();
            waiting.map(|(t, q)| (r.token_ref(t), r.req_ref(q))).hash(h);
            Renaming::hash_set(w.gone.iter().map(|t| r.token_ref(t)), h);
            Renaming::hash_set(w.sealed_replies.iter().map(|t| r.token_ref(t)), h);
            let ask = w.pending_ask.as_ref();
            ask.map(|(q, asked)| (r.req_ref(q), asked)).hash(h);
            w.known.as_ref().map(|(t, g)| (r.token_ref(t), g)).hash(h);
        }
        let asked = self.asked.iter().map(|(k, a)| (renamed(r, k), a));
        Renaming::hash_entries(asked.collect(), h, |a, h| a.hash(h));
        let sends = self.sends.iter().map(|(k, n)| (renamed(r, k), n));
        Renaming::hash_entries(sends.collect(), h, |n, h| n.hash(h));
        let replies = self.replies.iter();
        let replies = replies.map(|((t, q), v)| ((r.token_ref(t), r.req_ref(q)), v));
        Renaming::hash_entries(replies.collect(), h, |(action, reply), h| {
            action.hash(h);
            r.hash_reply(reply, h);
        });
        self.restore.hash(h);
    }

    /// Every request the monitor saw go out, as (worker, token, req), normalized: each request
    /// once, whether it went through the queue or was a direct call.
    pub fn requests(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.asked
            .keys()
            .map(|(w, t, q)| (w.as_str(), t.as_str(), q.as_str()))
    }
}

/// A (worker, token, req) key, renamed, borrowed.
fn renamed<'a>(
    r: &'a Renaming,
    (w, t, q): &'a (WorkerId, Token, Req),
) -> (&'a str, &'a str, &'a str) {
    (w, r.token_ref(t), r.req_ref(q))
}
