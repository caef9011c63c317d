//! The monitor's memory under a renaming of tokens and request ids (`crate::fence::rename`), and
//! the requests it saw, by (worker, token, req): what a symmetry reduction orders names by.

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
            dead: r.token_set(&self.dead),
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

    /// Every request the monitor saw go out, as (worker, token, req), normalized: each request
    /// once, whether it went through the queue or was a direct call.
    pub fn requests(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.asked
            .keys()
            .map(|(w, t, q)| (w.as_str(), t.as_str(), q.as_str()))
    }
}
