//! The fence machine's alphabet for exploration, within named bounds, and its coverage points:
//! every transition case of the table (T0–E3) and every loop verdict.

use std::collections::BTreeMap;

use serde::Serialize;
use turnfence_model::fence;
use turnfence_model::fence::table::normalize;
use turnfence_model::fence::{
    Action, EndOutcome, FenceMachine, FenceSnapshot, FenceState, Flaw, Path, Reply, SnapshotRow,
    SnapshotTask, Status, TaskStatus, Verdict,
};
use turnfence_model::prelude::*;
use turnfence_model::Plant;

use super::{Coverage, Explore, Footprint};

/// How far the fence explorer goes.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct FenceBounds {
    /// Requests over all workers.
    pub requests: usize,
    /// Owner messages per root.
    pub owner_messages: u64,
    /// Also explore the queue side: an enqueue, a task_done, a restore.
    pub queue: bool,
    /// Also send the malformed requests (bad req, invalid action).
    pub malformed: bool,
    /// Explore up to a renaming of tokens and request ids (symmetry reduction, `super::symmetry`):
    /// one state per class. Off unless asked for, and then not written out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub symmetry: bool,
}

/// The workers every exploration starts with: two pooled tasks of one root (its owner and a
/// helper, so a begin can be foreign) and a direct turn of another root.
pub const WORKERS: [(&str, Path, &str, &str); 3] = [
    ("w0", Path::Pooled, "root-a", "root-a"),
    ("w1", Path::Pooled, "helper-a", "root-a"),
    ("w2", Path::Direct, "root-c", "root-c"),
];

/// The inputs that start the explorer's workers.
pub fn start_inputs() -> Vec<fence::Input> {
    WORKERS
        .iter()
        .map(|(worker, path, task, root)| {
            let start = fence::InputKind::WorkerStart {
                worker: (*worker).into(),
                path: *path,
                task: (*task).into(),
                root: (*root).into(),
            };
            fence::Input::new(0, start)
        })
        .collect()
}

fn kinds(s: &FenceState, b: &FenceBounds) -> Vec<fence::InputKind> {
    let mut out = Vec::new();
    let sent: usize = s.workers.values().map(|w| w.used_reqs.len()).sum();
    if sent < b.requests {
        let req = fence::Id::format(format_args!("{:x}", sent + 1));
        let fresh = fence::Id::format(format_args!("{:02x}", 0xa0 + sent));
        for (id, w) in s.workers.iter().filter(|(_, w)| w.waiting.is_none()) {
            let mut push =
                |a, t, o| out.push(fence::InputKind::request(id.clone(), a, t, req.clone(), o));
            push(Action::Begin, Some(fresh.clone()), None);
            let own = w
                .binding
                .as_ref()
                .map(|x| x.token.clone())
                .or_else(|| w.sealed_token.clone());
            if let Some(own) = own {
                push(Action::Begin, Some(own), None);
            }
            if w.binding.is_some() {
                push(Action::Inspect, None, None);
                push(Action::End, None, Some(EndOutcome::Terminal));
            }
            if w.binding.is_some() || w.sealed_token.is_some() {
                push(Action::End, None, Some(EndOutcome::Revision));
            }
        }
        if b.malformed && !s.workers.values().any(|w| w.used_reqs.contains("../x")) {
            if let Some((id, _)) = s
                .workers
                .iter()
                .find(|(_, w)| w.path == Path::Pooled && w.waiting.is_none())
            {
                out.push(fence::InputKind::request(
                    id.clone(),
                    Action::Begin,
                    Some(fresh.clone()),
                    "../x".into(),
                    None,
                ));
                out.push(fence::InputKind::request(
                    id.clone(),
                    Action::Invalid,
                    Some(fresh.clone()),
                    fence::Id::format(format_args!("e{req}")),
                    None,
                ));
            }
        }
    }
    if !s.queue.is_empty() {
        out.push(fence::InputKind::SupervisorStep { lose_ack: false });
        out.push(fence::InputKind::SupervisorStep { lose_ack: true });
        out.push(fence::InputKind::DropEvent);
    }
    let gen = s
        .table
        .rows
        .get("root-a")
        .map_or(0, |r| r.owner_message_generation);
    if gen < b.owner_messages {
        out.push(fence::InputKind::OwnerMessage {
            root: "root-a".into(),
        });
    }
    if !b.queue {
        return out;
    }
    if s.tasks
        .get("root-a")
        .is_some_and(|(_, st)| *st == TaskStatus::Running)
    {
        out.push(fence::InputKind::TaskDone {
            task: "root-a".into(),
        });
    }
    if !s.tasks.contains_key("child") {
        out.push(fence::InputKind::Enqueue {
            task: "child".into(),
            root: "root-a".into(),
        });
    }
    if !s.tasks.contains_key("restored") {
        for fences in [
            FenceSnapshot::Malformed("not a list".into()),
            FenceSnapshot::Rows(vec![SnapshotRow {
                root: "root-a".into(),
                status: Status::Sealed,
            }]),
        ] {
            let pending = vec![SnapshotTask {
                task: "restored".into(),
                root: "root-a".into(),
            }];
            out.push(fence::InputKind::Restore { fences, pending });
        }
    }
    out
}

impl<P: Plant<Flaw>> Explore for FenceMachine<P> {
    type Bounds = FenceBounds;

    /// The bounds CI explores exhaustively — two, each exhaustive, coverage their union: the
    /// transport (three requests among the workers, with every fault, an owner message and the
    /// malformed requests), and the queue (two requests beside an enqueue, a task_done and a
    /// restore).
    fn ci_bounds() -> Vec<(&'static str, FenceBounds)> {
        vec![
            (
                "transport",
                FenceBounds {
                    requests: 3,
                    owner_messages: 1,
                    queue: false,
                    malformed: true,
                    symmetry: false,
                },
            ),
            (
                "queue",
                FenceBounds {
                    requests: 2,
                    owner_messages: 1,
                    queue: true,
                    malformed: false,
                    symmetry: false,
                },
            ),
        ]
    }

    /// The queue with three requests (no owner message: with one, 9.5 M states and 14 GB):
    /// 2 136 596 states, depth 18.
    fn deep_bounds() -> Vec<(&'static str, FenceBounds)> {
        vec![(
            "queue-three",
            FenceBounds {
                requests: 3,
                owner_messages: 0,
                queue: true,
                malformed: false,
                symmetry: false,
            },
        )]
    }

    /// Everything on, for hunting a flaw (not exhaustive: it stops at the first violation).
    fn hunt_bounds() -> FenceBounds {
        FenceBounds {
            requests: 4,
            owner_messages: 1,
            queue: true,
            malformed: true,
            symmetry: false,
        }
    }

    /// The explorer's workers start first.
    fn prelude() -> Vec<fence::Input> {
        start_inputs()
    }

    fn alphabet(&self, bounds: &FenceBounds) -> Vec<fence::Input> {
        let s = self.state();
        let now = s.now;
        let mut out: Vec<fence::Input> = kinds(s, bounds)
            .into_iter()
            .map(|k| fence::Input::new(now, k))
            .collect();
        // Time moves only to the next wait's end, the one point where something happens.
        if let Some(at) = self.poll_timeout() {
            out.push(fence::Input::new(at, fence::InputKind::Tick));
        }
        out
    }

    fn coverage() -> Coverage {
        coverage()
    }

    fn symmetry(bounds: &FenceBounds) -> bool {
        bounds.symmetry
    }

    fn with_symmetry(bounds: &FenceBounds) -> Option<FenceBounds> {
        Some(FenceBounds {
            symmetry: true,
            ..bounds.clone()
        })
    }

    fn canonical_fingerprint(&self, monitor: &fence::Monitor) -> u64 {
        super::symmetry::canonical_fingerprint(self, monitor)
    }

    fn footprint(&self, input: &fence::Input, _: &FenceBounds) -> Footprint {
        footprint(self.state(), input)
    }

    fn covered(
        &self,
        input: &fence::Input,
        outputs: &[fence::Output],
        point: &mut dyn FnMut(&[&str]),
    ) {
        let before = self;
        for o in outputs {
            match o {
                fence::Output::Applied {
                    action,
                    reply,
                    token,
                    ..
                } => {
                    let head = before.state().queue.front();
                    let (root, task, outcome) = match (&input.kind, head) {
                        (
                            fence::InputKind::Request {
                                worker,
                                outcome,
                                root,
                                task,
                                ..
                            },
                            _,
                        ) => {
                            let w = &before.state().workers[worker];
                            (
                                root.clone().unwrap_or(w.root.clone()),
                                task.clone().unwrap_or(w.task.clone()),
                                *outcome,
                            )
                        }
                        (_, Some(e)) => (
                            e.request.root.clone(),
                            e.request.task.clone(),
                            e.request.outcome,
                        ),
                        _ => continue,
                    };
                    point(&[
                        "reply/",
                        case(before.state(), *action, token, &root, &task, outcome, reply),
                    ]);
                }
                fence::Output::Verdict { verdict, .. } => point(&[
                    "verdict/",
                    match verdict {
                        Verdict::Ok { .. } => "ok",
                        Verdict::Refused { .. } => "refused",
                        Verdict::Unknown => "unknown",
                    },
                ]),
                _ => {}
            }
        }
    }
}

/// The parts of a fence state an input may read or write (bits of a [`Footprint`]).
const TABLE: u64 = 1;
const QUEUE: u64 = 1 << 1;
const MAILBOX: u64 = 1 << 2;
const WORKER_PART: u64 = 1 << 3;
const TASKS: u64 = 1 << 4;

/// What an input reads and writes of a fence state, by its parts (the table, the queue, the
/// mailbox, the workers, the tasks; the monitor's memory and the alphabet's reads of each go with
/// it). A request touches the workers (every request reads how many were sent, for its req and
/// token) and, from a pooled worker, the queue it joins and the mailbox it looks in; from the
/// direct one, the table. A dropped event touches the queue; an owner message the table; a task's
/// end its task and the table; an enqueue reads the table and writes the tasks. Every other input
/// (a supervisor's step, a restore, time moving) is taken to touch everything.
fn footprint(s: &FenceState, input: &fence::Input) -> Footprint {
    if input.at != s.now {
        return Footprint::ALL;
    }
    match &input.kind {
        fence::InputKind::Request { worker, .. } => match s.workers.get(worker).map(|w| w.path) {
            Some(Path::Pooled) => Footprint::new(0, WORKER_PART | QUEUE | MAILBOX),
            Some(Path::Direct) => Footprint::new(0, WORKER_PART | TABLE),
            None => Footprint::ALL,
        },
        fence::InputKind::DropEvent => Footprint::new(0, QUEUE),
        fence::InputKind::OwnerMessage { .. } => Footprint::new(0, TABLE),
        fence::InputKind::TaskDone { .. } => Footprint::new(0, TASKS | TABLE),
        fence::InputKind::Enqueue { .. } => Footprint::new(TABLE, TASKS),
        _ => Footprint::ALL,
    }
}

/// Which transition of SPEC §3.2 a reply is.
fn case(
    s: &FenceState,
    action: Action,
    token: &str,
    root: &str,
    task: &str,
    outcome: Option<EndOutcome>,
    reply: &Reply,
) -> &'static str {
    if reply.status == Status::Error {
        return if reply.error.as_deref() == Some("missing root_task_id") {
            "B0_missing_root"
        } else {
            "T0_invalid"
        };
    }
    if reply.row_absent {
        return "A0_row_absent";
    }
    let root = if root.is_empty() { task } else { root };
    let row = s.table.rows.get(root);
    match action {
        Action::Begin => match row {
            None => "B1_new",
            Some(r) if r.token == normalize(token) => "B2_same_token",
            Some(_) if reply.ok => "B3_readopt",
            Some(_) if reply.status == Status::Sealed => "B4_sealed",
            Some(_) => "B5_foreign",
        },
        Action::Inspect => "I1_inspect",
        _ if outcome == Some(EndOutcome::Revision) => "E1_revision",
        _ if reply.generation_mismatch => "E2_mismatch",
        _ => "E3_seal",
    }
}

/// What the fence explorer must reach: every transition case and every verdict.
pub fn coverage() -> Coverage {
    let required = [
        "T0_invalid",
        "B0_missing_root",
        "B1_new",
        "B2_same_token",
        "B3_readopt",
        "B4_sealed",
        "B5_foreign",
        "A0_row_absent",
        "I1_inspect",
        "E1_revision",
        "E2_mismatch",
        "E3_seal",
    ]
    .iter()
    .map(|c| format!("reply/{c}"))
    .chain(
        ["verdict/ok", "verdict/refused", "verdict/unknown"]
            .iter()
            .map(|v| (*v).to_owned()),
    )
    .collect();
    let impossible: BTreeMap<String, &'static str> = [(
        "reply/B0_missing_root".to_owned(),
        "every worker the explorer starts has a root, and its requests never override it",
    )]
    .into_iter()
    .collect();
    Coverage {
        required,
        impossible,
    }
}
