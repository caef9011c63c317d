//! The monitor's account of each worker's loop: its binding as its loop keeps it, its verdicts (a
//! gap is unknown), and its belief that it sealed its root (only after a sealed reply).

use super::memory::Monitor;
use super::Invariant;
use crate::fence::table::normalize;
use crate::fence::types::*;

impl Monitor {
    /// The worker's binding, as its loop keeps it (SPEC §3.4): bound by an ok begin, refreshed
    /// by an ok inspect, dropped by a refused inspect and by every end.
    pub(super) fn track_binding(
        &mut self,
        worker: &str,
        token: &str,
        action: Action,
        reply: &Reply,
    ) {
        let Some(w) = self.workers.get_mut(worker) else {
            return;
        };
        if reply.row_absent {
            // The worker now knows this token owns no row.
            w.gone.insert(token.into());
        }
        let ok = |accepted: &[Status]| reply.ok && accepted.contains(&reply.status);
        match action {
            Action::Begin if ok(&[Status::Active]) => {
                let bound = reply
                    .token
                    .as_deref()
                    .map_or_else(|| token.into(), normalize);
                w.known = Some((bound, reply.owner_message_generation.unwrap_or(0)));
            }
            Action::Inspect if ok(&[Status::Active, Status::Sealed]) => {
                if let Some((t, g)) = &mut w.known {
                    if t == token {
                        *g = reply.owner_message_generation.unwrap_or(*g);
                    }
                }
            }
            Action::Inspect => w.known = None,
            Action::End => w.known = None,
            _ => {}
        }
    }

    pub(super) fn on_verdict(
        &mut self,
        worker: &str,
        action: Action,
        token: &str,
        req: &str,
        verdict: &Verdict,
    ) {
        let Some(w) = self.workers.get_mut(worker) else {
            return;
        };
        let answered = w.direct || w.answered;
        w.waiting = None;
        w.answered = false;
        match verdict {
            Verdict::Unknown => {
                if action == Action::End {
                    w.unanswered_end = true;
                }
                self.reach(Invariant::GapIsUnknown);
            }
            Verdict::Ok { status } | Verdict::Refused { status } => {
                if *status == Status::Sealed {
                    if action == Action::End {
                        w.sealed_replies.insert(normalize(token));
                    } else if action == Action::Begin && w.unanswered_end {
                        w.refused_sealed_after_gap = true;
                    }
                }
                let ids = [worker, token, req];
                self.require(answered, Invariant::GapIsUnknown, &ids, || {
                    format!(
                        "{} request {req} ended {verdict} without an answer",
                        action.name()
                    )
                });
            }
        }
    }

    pub(super) fn on_seal_believed(&mut self, worker: &str, root: &str, token: &str) {
        self.reach(Invariant::OnlySealedIsSeal);
        let Some(w) = self.workers.get_mut(worker) else {
            return;
        };
        let earned = w.sealed_replies.contains(&normalize(token)) || w.refused_sealed_after_gap;
        w.refused_sealed_after_gap = false;
        let ids = [worker, root, token];
        self.require(earned, Invariant::OnlySealedIsSeal, &ids, || {
            format!("worker {worker} holds root {root} sealed without a sealed reply for {token}")
        });
    }
}
