//! The twelve fence invariants of SPEC §3.5, as a monitor over the fence machine's inputs and
//! outputs. Like the turn monitor, it never looks inside a machine: it keeps its own account of
//! the rows from the replies it sees. Each invariant is paired with a `sometimes`
//! ([`Invariant::reached`]).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::table::{normalize, valid_id};
use super::types::*;
use super::FenceMachine;
use crate::Millis;
use crate::Monitor as _;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Invariant {
    SealedNeverReadopted,
    ForeignBeginRefused,
    DeadTokenHarmless,
    CompareAndSeal,
    AckIdentity,
    ResendBounded,
    GapIsUnknown,
    OnlySealedIsSeal,
    FencedRootAdmitsNothing,
    IdsValidated,
    DirectPathSilent,
    RestoreFailsClosed,
}

impl crate::Invariant for Invariant {
    const ALL: &'static [Invariant] = &[
        Invariant::SealedNeverReadopted,
        Invariant::ForeignBeginRefused,
        Invariant::DeadTokenHarmless,
        Invariant::CompareAndSeal,
        Invariant::AckIdentity,
        Invariant::ResendBounded,
        Invariant::GapIsUnknown,
        Invariant::OnlySealedIsSeal,
        Invariant::FencedRootAdmitsNothing,
        Invariant::IdsValidated,
        Invariant::DirectPathSilent,
        Invariant::RestoreFailsClosed,
    ];

    fn name(self) -> &'static str {
        match self {
            Invariant::SealedNeverReadopted => "sealed_never_readopted",
            Invariant::ForeignBeginRefused => "foreign_begin_refused",
            Invariant::DeadTokenHarmless => "dead_token_harmless",
            Invariant::CompareAndSeal => "compare_and_seal",
            Invariant::AckIdentity => "ack_identity",
            Invariant::ResendBounded => "resend_bounded",
            Invariant::GapIsUnknown => "gap_is_unknown",
            Invariant::OnlySealedIsSeal => "only_sealed_is_seal",
            Invariant::FencedRootAdmitsNothing => "fenced_root_admits_nothing",
            Invariant::IdsValidated => "ids_validated",
            Invariant::DirectPathSilent => "direct_path_silent",
            Invariant::RestoreFailsClosed => "restore_fails_closed",
        }
    }

    /// What a run must show for the invariant to have been put to the test.
    fn reached(self) -> &'static str {
        match self {
            Invariant::SealedNeverReadopted => "a begin met a sealed row",
            Invariant::ForeignBeginRefused => "a foreign begin was refused, or a begin re-adopted",
            Invariant::DeadTokenHarmless => "a dead token was answered row_absent",
            Invariant::CompareAndSeal => "an end released on a generation mismatch",
            Invariant::AckIdentity => "a waiter consumed an ack",
            Invariant::ResendBounded => "a transition was re-sent",
            Invariant::GapIsUnknown => "a request ended unknown",
            Invariant::OnlySealedIsSeal => "a worker came to hold its root sealed",
            Invariant::FencedRootAdmitsNothing => "an admission was blocked",
            Invariant::IdsValidated => "an event with bad ids was rejected",
            Invariant::DirectPathSilent => "a direct turn applied a transition",
            Invariant::RestoreFailsClosed => {
                "a restore cancelled a fenced descendant or failed closed"
            }
        }
    }
}

/// A broken invariant of this machine.
pub type Violation = crate::Violation<Invariant>;

/// One input and the outputs it caused.
pub type Step = crate::Step<Input, Output>;

#[derive(Clone, Debug, PartialEq, Hash)]
struct RowSeen {
    token: Token,
    task: TaskId,
    sealed: bool,
    generation: u64,
}

#[derive(Clone, Debug, Default, Hash)]
struct WorkerSeen {
    direct: bool,
    root: RootId,
    task: TaskId,
    /// The (token, req) the worker waits on, normalized.
    waiting: Option<(Token, Req)>,
    answered: bool,
    /// Tokens the supervisor told this worker own no row (or that its end gave up).
    gone: BTreeSet<Token>,
    /// Tokens answered `sealed` to this worker; an end of it went unanswered.
    sealed_replies: BTreeSet<Token>,
    unanswered_end: bool,
    refused_sealed_after_gap: bool,
    /// The last request's token was chosen by the loop (the input named none).
    loop_token: bool,
    /// The last request, until the token it went out with is seen.
    pending_ask: Option<(Req, Asked)>,
    /// The token the worker's loop is bound to and the generation it knows (its binding).
    known: Option<(Token, u64)>,
}

/// What a request asked, by (worker, token, req), normalized.
#[derive(Clone, Debug, Hash)]
struct Asked {
    worker: WorkerId,
    root: RootId,
    task: TaskId,
}

#[derive(Clone, Debug, Default)]
pub struct Monitor {
    only: Option<Invariant>,
    step: usize,
    now: Millis,
    rows: BTreeMap<RootId, RowSeen>,
    dead: BTreeSet<Token>,
    workers: BTreeMap<WorkerId, WorkerSeen>,
    asked: BTreeMap<(WorkerId, Token, Req), Asked>,
    /// Sends per request: (worker, token, req); a worker's reqs are fresh per request.
    sends: BTreeMap<(WorkerId, Token, Req), u32>,
    /// The last reply applied per (token, req): what an ack carries.
    replies: BTreeMap<(Token, Req), (Action, Reply)>,
    restore: Option<(Option<Vec<RootId>>, Vec<SnapshotTask>)>,
    violations: Vec<Violation>,
    reached: BTreeSet<Invariant>,
}

fn key(token: &str, req: &str) -> (Token, Req) {
    (normalize(token), normalize(req))
}

impl crate::Monitor<FenceMachine> for Monitor {
    fn only(invariant: Invariant) -> Monitor {
        Monitor {
            only: Some(invariant),
            ..Monitor::default()
        }
    }

    fn input(&mut self, input: &Input) {
        self.on_input(input);
    }

    fn output(&mut self, output: &Output) {
        self.on_output(output);
    }

    fn end_step(&mut self) {
        self.on_end_step();
    }

    fn take_violations(&mut self) -> Vec<Violation> {
        std::mem::take(&mut self.violations)
    }

    fn reached(&self) -> &BTreeSet<Invariant> {
        &self.reached
    }

    fn fingerprint<H: std::hash::Hasher>(&self, h: &mut H) {
        use std::hash::Hash;
        self.now.hash(h);
        self.rows.hash(h);
        self.dead.hash(h);
        self.workers.hash(h);
        self.asked.hash(h);
        self.sends.hash(h);
        self.replies.hash(h);
        self.restore.hash(h);
    }
}

impl Monitor {
    fn violate(&mut self, invariant: Invariant, ids: &[&str], message: String) {
        if self.only.is_some_and(|o| o != invariant) {
            return;
        }
        self.violations.push(Violation {
            invariant,
            step: self.step,
            at: self.now,
            ids: ids.iter().map(|s| (*s).to_owned()).collect(),
            message,
        });
    }

    fn reach(&mut self, i: Invariant) {
        self.reached.insert(i);
    }

    fn on_input(&mut self, input: &Input) {
        self.now = self.now.max(input.at);
        match &input.kind {
            InputKind::WorkerStart {
                worker,
                path,
                task,
                root,
            } => {
                self.workers.insert(
                    worker.clone(),
                    WorkerSeen {
                        direct: *path == Path::Direct,
                        root: root.clone(),
                        task: task.clone(),
                        ..WorkerSeen::default()
                    },
                );
            }
            InputKind::Request {
                worker,
                token,
                req,
                root,
                task,
                ..
            } => {
                let Some(w) = self.workers.get_mut(worker) else {
                    return;
                };
                w.loop_token = token.is_none();
                let asked = Asked {
                    worker: worker.clone(),
                    root: root.clone().unwrap_or_else(|| w.root.clone()),
                    task: task.clone().unwrap_or_else(|| w.task.clone()),
                };
                w.pending_ask = Some((normalize(req), asked));
            }
            InputKind::Restore { fences, pending } => {
                let roots = match fences {
                    FenceSnapshot::Rows(rows) if rows.iter().all(|r| !r.root.is_empty()) => Some(
                        rows.iter()
                            .filter(|r| matches!(r.status, Status::Active | Status::Sealed))
                            .map(|r| r.root.clone())
                            .collect(),
                    ),
                    _ => None,
                };
                self.restore = Some((roots, pending.clone()));
            }
            _ => {}
        }
    }

    fn on_output(&mut self, output: &Output) {
        match output {
            Output::EventQueued {
                worker,
                token,
                req,
                action,
                attempt: _,
            } => self.on_queued(worker, token, req, *action),
            Output::EventRejected { .. } => self.reach(Invariant::IdsValidated),
            Output::Applied {
                token,
                req,
                action,
                reply,
                worker,
                expected_generation,
                ..
            } => self.on_applied(worker, token, req, *action, *expected_generation, reply),
            Output::AckWritten { token, req, .. } => self.on_ack_written(token, req),
            Output::AckConsumed { worker, token, req } => self.on_consumed(worker, token, req),
            Output::Resent { .. } => self.reach(Invariant::ResendBounded),
            Output::Verdict {
                worker,
                action,
                token,
                req,
                verdict,
            } => self.on_verdict(worker, *action, token, req, verdict),
            Output::SealBelieved {
                worker,
                root,
                token,
                ..
            } => self.on_seal_believed(worker, root, token),
            Output::OwnerMessageWritten {
                root,
                generation: Some(g),
            } => {
                if let Some(r) = self.rows.get_mut(root) {
                    r.generation = *g;
                }
            }
            Output::RowCleared { root } => {
                if let Some(r) = self.rows.remove(root) {
                    self.dead.insert(r.token);
                }
            }
            Output::Admitted { task, root } => {
                if let Some(r) = self.rows.get(root) {
                    let status = if r.sealed { "sealed" } else { "active" };
                    self.violate(
                        Invariant::FencedRootAdmitsNothing,
                        &[task, root],
                        format!(
                            "task {task} was admitted under root {root} whose fence is {status}"
                        ),
                    );
                }
            }
            Output::AdmissionBlocked { .. } => self.reach(Invariant::FencedRootAdmitsNothing),
            Output::Restored {
                restored,
                cancelled,
                ..
            } => self.on_restored(restored, cancelled),
            _ => {}
        }
    }

    /// The token a worker's request went out with is now known.
    fn sent_with(&mut self, worker: &str, token: &str) {
        let Some(w) = self.workers.get_mut(worker) else {
            return;
        };
        if let Some((req, asked)) = w.pending_ask.take() {
            self.asked
                .insert((worker.to_owned(), normalize(token), req), asked);
        }
    }

    fn on_queued(&mut self, worker: &str, token: &str, req: &str, action: Action) {
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
            .entry((worker.to_owned(), normalize(token), normalize(req)))
            .or_insert(0);
        *count += 1;
        let count = *count;
        if direct {
            self.violate(
                Invariant::DirectPathSilent,
                &[worker, token, req],
                format!("direct worker {worker} put a {action:?} event on the supervisor's queue"),
            );
        }
        let bound = if action.is_transition() { 2 } else { 1 };
        if count > bound {
            self.violate(
                Invariant::ResendBounded,
                &[worker, token, req],
                format!("{action:?} request {req} was sent {count} times (at most {bound})"),
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

    fn on_applied(
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
            .get(&(worker.to_owned(), normalize(token), normalize(req)))
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
            self.replies
                .insert((token.clone(), normalize(req)), (action, reply.clone()));
        }
    }

    /// The worker's binding, as its loop keeps it (SPEC §3.4): bound by an ok begin, refreshed
    /// by an ok inspect, dropped by a refused inspect and by every end.
    fn track_binding(&mut self, worker: &str, token: &str, action: Action, reply: &Reply) {
        let Some(w) = self.workers.get_mut(worker) else {
            return;
        };
        if reply.row_absent {
            // The worker now knows this token owns no row.
            w.gone.insert(token.to_owned());
        }
        let ok = |accepted: &[Status]| reply.ok && accepted.contains(&reply.status);
        match action {
            Action::Begin if ok(&[Status::Active]) => {
                let bound = reply
                    .token
                    .as_deref()
                    .map_or_else(|| token.to_owned(), normalize);
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

    fn on_begin(&mut self, token: &str, asked: &Asked, reply: &Reply) {
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
                .unwrap_or_else(|| token.to_owned());
            // A token that owns a row again is alive again.
            self.dead.remove(&new_token);
            if let Some(w) = self.workers.get_mut(&asked.worker) {
                w.gone.remove(&new_token);
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
            self.rows.insert(
                root.clone(),
                RowSeen {
                    token: new_token,
                    task,
                    sealed: false,
                    generation: reply.owner_message_generation.unwrap_or(0),
                },
            );
        }
    }

    fn on_inspect_or_end(
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
                        "an end with dead token {token} changed a row ({:?})",
                        reply.status
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
                    let sent = expected.map_or_else(|| "none".to_owned(), |e| e.to_string());
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

    fn on_ack_written(&mut self, token: &str, req: &str) {
        if !(valid_id(token) && valid_id(req)) {
            self.violate(
                Invariant::IdsValidated,
                &[token, req],
                format!("an ack was written for token {token:?} and req {req:?}"),
            );
        }
    }

    fn on_consumed(&mut self, worker: &str, token: &str, req: &str) {
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
        if !own {
            self.violate(
                Invariant::AckIdentity,
                &[worker, token, req],
                format!(
                    "worker {worker} waiting on {}.{} read the ack {token}.{req}",
                    waited.0, waited.1
                ),
            );
        }
    }

    fn on_verdict(
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
                if !answered {
                    self.violate(
                        Invariant::GapIsUnknown,
                        &[worker, token, req],
                        format!("{action:?} request {req} ended {verdict:?} without an answer"),
                    );
                }
            }
        }
    }

    fn on_seal_believed(&mut self, worker: &str, root: &str, token: &str) {
        self.reach(Invariant::OnlySealedIsSeal);
        let Some(w) = self.workers.get_mut(worker) else {
            return;
        };
        let earned = w.sealed_replies.contains(&normalize(token)) || w.refused_sealed_after_gap;
        w.refused_sealed_after_gap = false;
        if !earned {
            self.violate(
                Invariant::OnlySealedIsSeal,
                &[worker, root, token],
                format!(
                    "worker {worker} holds root {root} sealed without a sealed reply for {token}"
                ),
            );
        }
    }

    fn on_restored(&mut self, restored: &[TaskId], cancelled: &[TaskId]) {
        self.rows.clear();
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

    fn on_end_step(&mut self) {
        self.step += 1;
    }
}

macro_rules! named {
    ($($(#[$doc:meta])* $name:ident => $inv:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name(steps: &[Step]) -> Vec<Violation> {
            Monitor::only(Invariant::$inv).check(steps)
        }
    )*};
}

named! {
    /// No begin succeeds as active on a sealed row (with a new token, or the same one).
    sealed_never_readopted => SealedNeverReadopted;
    /// A row's owner task never changes, and only a foreign begin is refused as `active`.
    foreign_begin_refused => ForeignBeginRefused;
    /// After a rebind or a release, requests with the old token change nothing, and a worker's
    /// loop stops using a token it was told owns no row.
    dead_token_harmless => DeadTokenHarmless;
    /// A row seals only at the generation the worker sent (none only while no owner spoke).
    compare_and_seal => CompareAndSeal;
    /// Every reply a waiter acts on is the ack of its own (token, req).
    ack_identity => AckIdentity;
    /// A transition is sent at most twice, a read exactly once.
    resend_bounded => ResendBounded;
    /// A request without an answer ends `unknown`, never `ok` or `refused`.
    gap_is_unknown => GapIsUnknown;
    /// A worker holds its root sealed only after a `sealed` reply for its token.
    only_sealed_is_seal => OnlySealedIsSeal;
    /// No descendant is admitted while its root's row is active or sealed.
    fenced_root_admits_nothing => FencedRootAdmitsNothing;
    /// A malformed token or req never reaches a transition or the mailbox.
    ids_validated => IdsValidated;
    /// A direct turn produces no event and no ack.
    direct_path_silent => DirectPathSilent;
    /// After a restore no descendant of a fenced root is pending; a malformed snapshot restores
    /// nothing.
    restore_fails_closed => RestoreFailsClosed;
}
