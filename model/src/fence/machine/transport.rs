//! The worker↔supervisor transport: the direct path (a call), and the pooled path's event queue,
//! supervisor steps, the ack mailbox keyed by (token, req), waits, the one re-send of a
//! transition and the pruning of old acks.

use super::{Ack, Event, FenceMachine, Wait, ACK_KEEP, ACK_TTL_MS, ACK_WAIT_MS};
use std::borrow::Cow;

use crate::fence::table::{normalize, normalized, valid_id, Request};
use crate::fence::types::*;
use crate::fence::Flaw;
use crate::Millis;
use crate::Plant;

impl<P: Plant<Flaw>> FenceMachine<P> {
    pub(super) fn send(&mut self, worker: &str, request: Request, req: &str) {
        // The worker was validated: it exists.
        let Some(w) = self.state.workers.get_mut(worker) else {
            return;
        };
        w.used_reqs.insert(normalize(req));
        let path = w.path;
        if path == Path::Direct && !flawed!(self, DirectUsesTransport) {
            let flaws = self.table_flaws();
            let reply = self.state.table.transition(&request, flaws);
            self.emit(Output::applied(
                worker,
                &request.token,
                req,
                &request,
                &reply,
            ));
            self.conclude(worker, &request, req, Some(reply));
            return;
        }
        let (token, action) = (request.token.clone(), request.action);
        self.state.queue.push_back(Event {
            worker: worker.into(),
            req: req.into(),
            request: request.clone(),
        });
        self.emit(Output::EventQueued {
            worker: worker.into(),
            token: token.clone(),
            req: req.into(),
            action,
            attempt: 1,
        });
        if let Some(w) = self.state.workers.get_mut(worker) {
            w.waiting = Some(Wait {
                action,
                token,
                req: req.into(),
                request,
                attempt: 1,
                deadline_at: self.state.now.saturating_add(ACK_WAIT_MS),
            });
            // The worker waits on a req it has spent: no later request of its own shares the key.
            debug_assert!(
                w.used_reqs.contains(&normalize(req)),
                "a waiting worker has spent its req"
            );
        }
        self.poll(worker);
        // It looked for its ack as it began to wait: no waiter's ack lies unread.
        debug_assert!(
            self.no_waiter_has_an_unread_ack(),
            "a waiter's ack never lies unread"
        );
    }

    /// The mailbox key of an ack. Per (token, req); the flaw keys it by token alone.
    fn ack_key(&self, token: &str, req: &str) -> (Token, Req) {
        let (token, req) = self.ack_key_of(token, req);
        (token.as_ref().into(), req.as_ref().into())
    }

    /// The mailbox key of an ack, borrowed where the ids are normalized already: to look with.
    fn ack_key_of<'a>(&self, token: &'a str, req: &'a str) -> (Cow<'a, str>, Cow<'a, str>) {
        if flawed!(self, AckPerToken) {
            (normalized(token), Cow::Borrowed(""))
        } else {
            (normalized(token), normalized(req))
        }
    }

    /// A waiting worker looks for its ack and, if it is there, takes it.
    fn poll(&mut self, worker: &str) {
        let Some(wait) = self
            .state
            .workers
            .get(worker)
            .and_then(|w| w.waiting.as_ref())
        else {
            return;
        };
        // Looked for by the borrowed key: most polls find nothing, and make no key.
        let (token, req) = self.ack_key_of(&wait.token, &wait.req);
        let by_key =
            |(t, r): &(Token, Req)| t.as_str().cmp(&token).then_with(|| r.as_str().cmp(&req));
        if self.state.mailbox.get_by(by_key).is_none() {
            return;
        }
        let key: (Token, Req) = (token.as_ref().into(), req.as_ref().into());
        let Some(ack) = self.state.mailbox.remove(&key) else {
            return;
        };
        let Some(wait) = self
            .state
            .workers
            .get_mut(worker)
            .and_then(|w| w.waiting.take())
        else {
            return;
        };
        // The ack answers this very request: the worker spent the req on it, so the key is its own.
        debug_assert!(
            self.state
                .workers
                .get(worker)
                .is_some_and(|w| w.used_reqs.contains(&normalize(&wait.req))),
            "a waiting worker has spent its req"
        );
        self.emit(Output::AckConsumed {
            worker: worker.into(),
            token: ack.token.clone(),
            req: ack.req.clone(),
        });
        self.conclude(worker, &wait.request, &wait.req, Some(ack.reply));
    }

    pub(super) fn supervisor_step(&mut self, lose_ack: bool) {
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
        let flaws = self.table_flaws();
        let reply = self.state.table.transition(&request, flaws);
        self.emit(Output::applied(
            &event.worker,
            &token,
            &req,
            &request,
            &reply,
        ));
        self.prune_acks();
        if lose_ack {
            self.emit(Output::AckLost { token, req });
            return;
        }
        // Pruning made room, so the mailbox keeps at most ACK_KEEP acks with this one.
        debug_assert!(
            self.state.mailbox.len() < ACK_KEEP,
            "the mailbox has room for one more ack"
        );
        let key = self.ack_key(&token, &req);
        let ack = Ack {
            token: token.clone(),
            req: req.clone(),
            reply: reply.clone(),
            written_at: self.state.now,
        };
        // The same ack written again at the same time leaves the mailbox as it is.
        insert_changed(&mut self.state.mailbox, key, ack);
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
        // Every waiter looked at once: the ack just written is read if anyone waits on it.
        debug_assert!(
            self.no_waiter_has_an_unread_ack(),
            "a waiter's ack never lies unread"
        );
    }

    /// Removes acks older than an hour, then the oldest beyond 255, making room for one more.
    fn prune_acks(&mut self) {
        let now = self.state.now;
        let before = self.state.mailbox.len();
        let fresh = |a: &Ack| now.saturating_sub(a.written_at) <= ACK_TTL_MS;
        // Read first: a mailbox with nothing to prune is not borrowed mutably (nor, shared with
        // another state, copied).
        if !self.state.mailbox.values().all(fresh) {
            self.state.mailbox.retain(|_, a| fresh(a));
        }
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
        debug_assert!(
            self.state.mailbox.len() < ACK_KEEP,
            "the mailbox has room for one more ack"
        );
        let count = before - self.state.mailbox.len();
        if count > 0 {
            self.emit(Output::AcksPruned {
                count: count as u32,
            });
        }
    }

    /// Waits that ran out: a transition is re-sent once, identical; then the outcome is unknown.
    pub(super) fn expire_waits(&mut self) {
        let now = self.state.now;
        let due: Vec<WorkerId> = self
            .state
            .workers
            .iter()
            .filter(|(_, w)| w.waiting.as_ref().is_some_and(|x| x.deadline_at <= now))
            .map(|(id, _)| id.clone())
            .collect();
        // A wait that runs out ends without a look in the mailbox: a waiter reads its ack at once
        // when it is written, so none lies there unread.
        debug_assert!(
            self.no_waiter_has_an_unread_ack(),
            "a waiter's ack never lies unread"
        );
        for worker in due {
            // The wait is taken out: a re-send puts its next attempt back, an end leaves none.
            while let Some(wait) = self
                .state
                .workers
                .get_mut(&worker)
                .and_then(|w| w.waiting.take_if(|w| w.deadline_at <= now))
            {
                // Not at attempt 1 means at attempt 2: the one re-send is spent.
                debug_assert!(
                    self.attempt_in_bounds(&wait),
                    "a wait is at attempt 1, or at 2 after a transition's one re-send"
                );
                let resend =
                    wait.attempt == 1 && (wait.action.is_transition() || flawed!(self, ResendRead));
                if resend {
                    self.resend(&worker, wait);
                } else {
                    self.conclude(&worker, &wait.request, &wait.req, None);
                }
            }
        }
    }

    fn resend(&mut self, worker: &str, wait: Wait) {
        self.state.queue.push_back(Event {
            worker: worker.into(),
            req: wait.req.clone(),
            request: wait.request.clone(),
        });
        self.emit(Output::Resent {
            worker: worker.into(),
            token: wait.token.clone(),
            req: wait.req.clone(),
        });
        self.emit(Output::EventQueued {
            worker: worker.into(),
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
        debug_assert!(
            self.state
                .workers
                .get(worker)
                .and_then(|w| w.waiting.as_ref())
                .is_none_or(|w| self.attempt_in_bounds(w)),
            "a wait is at attempt 1, or at 2 after a transition's one re-send"
        );
    }

    /// No waiting worker's ack lies unread in the mailbox: a waiter looks for its ack when it
    /// starts to wait and whenever an ack is written. Checked by debug assertions only.
    fn no_waiter_has_an_unread_ack(&self) -> bool {
        self.state
            .workers
            .values()
            .filter_map(|w| w.waiting.as_ref())
            .all(|wait| {
                !self
                    .state
                    .mailbox
                    .contains_key(&self.ack_key(&wait.token, &wait.req))
            })
    }

    /// A wait is at attempt 1, or at attempt 2 after the one re-send of a transition (of a read
    /// too, with its flaw planted). Checked by debug assertions only.
    fn attempt_in_bounds(&self, wait: &Wait) -> bool {
        let resent = wait.action.is_transition() || flawed!(self, ResendRead);
        wait.attempt == 1 || (wait.attempt == 2 && resent)
    }
}
