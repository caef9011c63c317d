//! The monitor's own account of the rows, from the replies it sees: begins (sealed rows never
//! re-adopted, foreign begins refused), inspects and ends (dead tokens harmless, seals compared),
//! and a restore (failing closed).

use super::memory::{Asked, Monitor, RowSeen, WorkerSeen};
use super::Invariant;
use crate::fence::table::normalize;
use crate::fence::types::*;

impl Monitor {
    pub(super) fn on_begin(&mut self, token: &str, asked: &Asked, reply: &Reply) {
        let root = if asked.root.is_empty() {
            &asked.task
        } else {
            &asked.root
        };
        let requester = if asked.task.is_empty() {
            root
        } else {
            &asked.task
        };
        let row = self.rows.get(root).cloned();
        match (&row, reply.ok, reply.status) {
            (Some(r), true, Status::Active) if r.sealed => self.violate(
                Invariant::SealedNeverReadopted,
                &[root, token],
                format!("a begin with token {token} succeeded as active on sealed root {root}"),
            ),
            (Some(r), true, Status::Active) if r.task != *requester && r.token != token => self
                .violate(
                    Invariant::ForeignBeginRefused,
                    &[root, requester],
                    format!(
                        "task {requester} took over root {root}, owned by {}",
                        r.task
                    ),
                ),
            (Some(r), false, Status::Active) if r.task == *requester && !r.sealed => self.violate(
                Invariant::ForeignBeginRefused,
                &[root, requester],
                format!("the root's own task {requester} was refused as foreign"),
            ),
            (Some(_), false, Status::Active) => self.reach(Invariant::ForeignBeginRefused),
            (Some(r), _, Status::Sealed) if r.sealed => self.reach(Invariant::SealedNeverReadopted),
            _ => {}
        }
        if reply.ok && reply.status == Status::Active {
            let new_token = reply
                .token
                .as_deref()
                .map(normalize)
                .unwrap_or_else(|| token.into());
            // A token that owns a row again is alive again.
            // (Each set is borrowed mutably, and copied if shared, only when it holds the token.)
            if self.dead.contains(&new_token) {
                self.dead.remove(&new_token);
            }
            let gone = |w: &WorkerSeen| w.gone.contains(&new_token);
            if self.workers.get(&asked.worker).is_some_and(gone) {
                if let Some(w) = self.workers.get_mut(&asked.worker) {
                    w.gone.remove(&new_token);
                }
            }
            if let Some(r) = &row {
                if r.token != token && r.task == *requester {
                    // Re-adoption: from here on the old token is dead, whatever the table kept.
                    self.dead.insert(r.token.clone());
                    self.reach(Invariant::ForeignBeginRefused);
                }
            }
            // The owner: a new row's requester; a re-send (same token) keeps the row's; a begin
            // that got through with a new token (re-adoption, or a takeover) is the requester's.
            let task = match &row {
                Some(r) if r.token == token => r.task.clone(),
                _ => requester.clone(),
            };
            let seen = RowSeen {
                token: new_token,
                task,
                sealed: false,
                generation: reply.owner_message_generation.unwrap_or(0),
            };
            // The row as it was remembered already (a re-send) leaves the rows as they are.
            insert_changed(&mut self.rows, root.clone(), seen);
        }
    }

    pub(super) fn on_inspect_or_end(
        &mut self,
        token: &str,
        action: Action,
        expected: Option<u64>,
        knew: Option<u64>,
        reply: &Reply,
    ) {
        let root = self
            .rows
            .iter()
            .find(|(_, r)| r.token == token)
            .map(|(root, _)| root.clone());
        if self.dead.contains(token) {
            if reply.row_absent {
                self.reach(Invariant::DeadTokenHarmless);
            } else if action == Action::End {
                self.violate(
                    Invariant::DeadTokenHarmless,
                    &[token],
                    format!(
                        "an end with dead token {token} changed a row ({})",
                        reply.status.name()
                    ),
                );
            }
        }
        if action != Action::End || !reply.ok {
            return;
        }
        match reply.status {
            Status::Sealed => {
                let generation = root
                    .as_ref()
                    .and_then(|r| self.rows.get(r))
                    .map_or(0, |r| r.generation);
                // An end carries the generation its worker knows; sending none while knowing one
                // is a blind seal. (A caller that knows none may send none.)
                let blind = expected.is_none() && knew.is_some();
                let stale = expected.is_some_and(|e| e != generation);
                if blind || stale {
                    let sent = expected.map_or_else(|| "none".into(), |e| e.to_string());
                    self.violate(
                        Invariant::CompareAndSeal,
                        &[root.as_deref().unwrap_or("?"), token],
                        format!("the row sealed at generation {generation} though the end carried {sent}"),
                    );
                }
                if let Some(r) = root.and_then(|r| self.rows.get_mut(&r)) {
                    r.sealed = true;
                }
            }
            Status::Released if !reply.row_absent => {
                if reply.generation_mismatch {
                    self.reach(Invariant::CompareAndSeal);
                }
                if let Some(root) = root {
                    if let Some(r) = self.rows.remove(&root) {
                        self.dead.insert(r.token);
                    }
                }
            }
            _ => {}
        }
    }

    pub(super) fn on_restored(&mut self, restored: &[TaskId], cancelled: &[TaskId]) {
        if !self.rows.is_empty() {
            self.rows.clear();
        }
        let Some((roots, pending)) = self.restore.take() else {
            return;
        };
        match roots {
            None => {
                self.reach(Invariant::RestoreFailsClosed);
                if !restored.is_empty() {
                    self.violate(
                        Invariant::RestoreFailsClosed,
                        &[],
                        format!("a malformed snapshot restored {}", restored.join(", ")),
                    );
                }
            }
            Some(roots) => {
                if !cancelled.is_empty() {
                    self.reach(Invariant::RestoreFailsClosed);
                }
                for t in pending.iter().filter(|t| roots.contains(&t.root)) {
                    if restored.contains(&t.task) {
                        self.violate(
                            Invariant::RestoreFailsClosed,
                            &[&t.task, &t.root],
                            format!(
                                "task {} of fenced root {} came back pending",
                                t.task, t.root
                            ),
                        );
                    }
                }
            }
        }
    }
}
