//! The monitor's account of the transport: events queued (and how often per request), transitions
//! applied, acks written and consumed — by their own waiter, with valid ids, never on the direct
//! path.

use super::memory::{key, Monitor};
use super::Invariant;
use crate::fence::table::{normalize, valid_id};
use crate::fence::types::*;

impl Monitor {
    /// The token a worker's request went out with is now known.
    fn sent_with(&mut self, worker: &str, token: &str) {
        let Some(w) = self.workers.get_mut(worker) else {
            return;
        };
        if let Some((req, asked)) = w.pending_ask.take() {
            self.asked
                .insert((worker.into(), normalize(token), req), asked);
        }
    }

    pub(super) fn on_queued(&mut self, worker: &str, token: &str, req: &str, action: Action) {
        self.sent_with(worker, token);
        let Some(w) = self.workers.get_mut(worker) else {
            return;
        };
        let direct = w.direct;
        let loop_token = w.loop_token;
        let stale = loop_token && action == Action::Inspect && w.gone.contains(&normalize(token));
        w.waiting = Some(key(token, req));
        w.answered = false;
        let count = self
            .sends
            .entry((worker.into(), normalize(token), normalize(req)))
            .or_insert(0);
        *count += 1;
        let count = *count;
        if direct {
            self.violate(
                Invariant::DirectPathSilent,
                &[worker, token, req],
                format!(
                    "direct worker {worker} put a {} event on the supervisor's queue",
                    action.name()
                ),
            );
        }
        let bound = if action.is_transition() { 2 } else { 1 };
        if count > bound {
            self.violate(
                Invariant::ResendBounded,
                &[worker, token, req],
                format!(
                    "{} request {req} was sent {count} times (at most {bound})",
                    action.name()
                ),
            );
        }
        if stale {
            self.violate(
                Invariant::DeadTokenHarmless,
                &[worker, token],
                format!("worker {worker} keeps using token {token}, which owns no row"),
            );
        }
    }

    pub(super) fn on_applied(
        &mut self,
        worker: &str,
        token: &str,
        req: &str,
        action: Action,
        expected: Option<u64>,
        reply: &Reply,
    ) {
        let direct = self.workers.get(worker).is_some_and(|w| w.direct);
        if direct {
            self.reach(Invariant::DirectPathSilent);
            self.sent_with(worker, token);
            let stale = self.workers.get(worker).is_some_and(|x| {
                x.loop_token && action == Action::Inspect && x.gone.contains(&normalize(token))
            });
            if stale {
                self.violate(
                    Invariant::DeadTokenHarmless,
                    &[worker, token],
                    format!("worker {worker} keeps using token {token}, which owns no row"),
                );
            }
        } else if !(valid_id(token) && valid_id(req)) {
            self.violate(
                Invariant::IdsValidated,
                &[token, req],
                format!("an event with token {token:?} and req {req:?} reached a transition"),
            );
        }
        let asked = self
            .asked
            .get(&(worker.into(), normalize(token), normalize(req)))
            .cloned();
        let token = normalize(token);
        let Some(asked) = asked else { return };
        match action {
            Action::Begin => self.on_begin(&token, &asked, reply),
            Action::Inspect | Action::End => {
                let knew = self
                    .workers
                    .get(&asked.worker)
                    .and_then(|w| w.known.clone())
                    .filter(|(t, _)| *t == token)
                    .map(|(_, g)| g);
                self.on_inspect_or_end(&token, action, expected, knew, reply)
            }
            Action::Invalid => {}
        }

        // What the worker comes to know: at once on the direct path, from its ack otherwise.
        if direct {
            self.track_binding(&asked.worker, &token, action, reply);
        } else {
            // The same reply again leaves the replies as they are.
            insert_changed(
                &mut self.replies,
                (token.clone(), normalize(req)),
                (action, reply.clone()),
            );
        }
    }

    pub(super) fn on_ack_written(&mut self, token: &str, req: &str) {
        let valid = valid_id(token) && valid_id(req);
        self.require(valid, Invariant::IdsValidated, &[token, req], || {
            format!("an ack was written for token {token:?} and req {req:?}")
        });
    }

    pub(super) fn on_consumed(&mut self, worker: &str, token: &str, req: &str) {
        self.reach(Invariant::AckIdentity);
        if let Some((action, reply)) = self.replies.get(&key(token, req)).cloned() {
            self.track_binding(worker, &normalize(token), action, &reply);
        }
        let Some(w) = self.workers.get_mut(worker) else {
            return;
        };
        let own = w.waiting.as_ref() == Some(&key(token, req));
        let direct = w.direct;
        w.answered = true;
        let waited = w.waiting.clone().unwrap_or_default();
        if direct {
            self.violate(
                Invariant::DirectPathSilent,
                &[worker, token, req],
                format!("direct worker {worker} read an ack from the mailbox"),
            );
        }
        self.require(own, Invariant::AckIdentity, &[worker, token, req], || {
            format!(
                "worker {worker} waiting on {}.{} read the ack {token}.{req}",
                waited.0, waited.1
            )
        });
    }
}
