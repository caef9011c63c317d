//! Random inputs for the fence machine, chosen against its state: begin/inspect/end from several
//! workers and tasks, direct and pooled, owner messages, task_done, enqueues, restores,
//! supervisor steps and faults (lost acks, dropped events, stalls around the 10 s wait).

use std::collections::BTreeMap;

use turnfence_model::fence;
use turnfence_model::fence::{
    Action, EndOutcome, FenceMachine, FenceSnapshot, Flaw, Path, SnapshotRow, SnapshotTask, Status,
};
use turnfence_model::{Millis, Plant};

use super::{FaultMix, Fuzz, Gen};

const WORKERS: [(&str, &str, &str); 4] = [
    ("w0", "root-a", "root-a"),
    ("w1", "root-a", "root-a"),
    ("w2", "helper-a", "root-a"),
    ("w3", "root-c", "root-c"),
];

impl<P: Plant<Flaw>> Fuzz for FenceMachine<P> {
    fn next_input(&self, g: &mut Gen, mix: &FaultMix, at: &mut Millis) -> fence::Input {
        let m = self;
        let s = m.state();
        // Start the workers first, each direct or pooled.
        if let Some((w, task, root)) = WORKERS.iter().find(|(w, _, _)| !s.workers.contains_key(*w))
        {
            let path = if g.chance(25) {
                Path::Direct
            } else {
                Path::Pooled
            };
            return fence::Input::new(
                *at,
                fence::InputKind::WorkerStart {
                    worker: (*w).into(),
                    path,
                    task: (*task).into(),
                    root: (*root).into(),
                },
            );
        }
        let stalled = g.chance(mix.stall_pct);
        *at += if stalled {
            g.range(mix.stall_ms / 2, mix.stall_ms + 1)
        } else {
            g.range(0, 40)
        };
        let queued = !s.queue.is_empty();
        let weights = [
            12,                                          // request
            if queued { 14 } else { 0 },                 // supervisor step
            if queued { mix.event_drop_pct } else { 0 }, // drop
            3 + mix.stall_pct,                           // tick
            mix.owner_message_pct,                       // owner message
            2,                                           // task done
            4,                                           // enqueue
            1,                                           // restore
        ];
        let kind = match g.weighted(&weights) {
            0 => request(m, g),
            1 => Some(fence::InputKind::SupervisorStep {
                lose_ack: g.chance(mix.ack_loss_pct),
            }),
            2 => Some(fence::InputKind::DropEvent),
            4 => g
                .pick(&["root-a", "root-c"])
                .map(|r| fence::InputKind::OwnerMessage { root: (*r).into() }),
            5 => g
                .pick(&["root-a", "root-c", "helper-a"])
                .map(|t| fence::InputKind::TaskDone { task: (*t).into() }),
            6 => enqueue(m, g),
            7 => restore(g),
            _ => Some(fence::InputKind::Tick),
        };
        fence::Input::new(*at, kind.unwrap_or(fence::InputKind::Tick))
    }

    fn faults(m: &FaultMix) -> String {
        format!(
            "ack loss {} %, event drop {} %, stalls {} % of {} ms, owner messages {} %",
            m.ack_loss_pct, m.event_drop_pct, m.stall_pct, m.stall_ms, m.owner_message_pct
        )
    }

    fn summary(&self) -> BTreeMap<String, String> {
        let m = self;
        let s = m.state();
        let mut out = BTreeMap::new();
        for (root, row) in &s.table.rows {
            let token: String = row.token.chars().take(8).collect();
            out.insert(
                format!("row {root}"),
                format!(
                    "{:?} token {token}… owner {} gen {}",
                    row.status, row.task, row.owner_message_generation
                ),
            );
        }
        out.insert("queue".into(), format!("{} events", s.queue.len()));
        out.insert("mailbox".into(), format!("{} acks", s.mailbox.len()));
        for (id, w) in &s.workers {
            let bound = w.binding.as_ref().map_or_else(
                || "unbound".to_owned(),
                |b| {
                    format!(
                        "bound {}… gen {}",
                        b.token.chars().take(8).collect::<String>(),
                        b.generation
                    )
                },
            );
            let waiting = w.waiting.as_ref().map_or_else(String::new, |x| {
                format!(
                    ", waiting {:?} attempt {} until {}",
                    x.action, x.attempt, x.deadline_at
                )
            });
            out.insert(format!("worker {id}"), format!("{bound}{waiting}"));
        }
        out
    }
}

fn request(m: &FenceMachine<impl Plant<Flaw>>, g: &mut Gen) -> Option<fence::InputKind> {
    let s = m.state();
    let idle: Vec<&str> = s
        .workers
        .iter()
        .filter(|(_, w)| w.waiting.is_none())
        .map(|(id, _)| id.as_str())
        .collect();
    let worker: fence::Id = (*g.pick(&idle)?).into();
    let w = s.workers.get(&worker)?;
    let bound = w.binding.is_some();
    let action = match g.range(0, 10) {
        0..=3 => Action::Begin,
        4..=5 if bound => Action::Inspect,
        _ if bound || w.sealed_token.is_some() => Action::End,
        _ => Action::Begin,
    };
    // Rarely a malformed id, so the supervisor's validation is exercised.
    let req: fence::Id = if g.chance(3) {
        "../escape".into()
    } else {
        g.hex().into()
    };
    // A begin has a fresh token; now and then it repeats the worker's own (a re-send by hand,
    // as the transport tests do).
    let own = w
        .binding
        .as_ref()
        .map(|b| b.token.clone())
        .or_else(|| w.sealed_token.clone());
    let token = match action {
        Action::Begin if own.is_some() && g.chance(20) => own,
        Action::Begin => Some(g.hex().into()),
        _ => None,
    };
    let outcome = (action == Action::End).then(|| match g.range(0, 4) {
        0 => EndOutcome::Revision,
        1 => EndOutcome::AuthorStop,
        _ => EndOutcome::Terminal,
    });
    // A revision with nothing bound uses the worker's last seal: only if it has one.
    let token = match (token, action, outcome) {
        (None, Action::End, Some(EndOutcome::Revision)) if !bound && w.sealed_token.is_none() => {
            return None
        }
        (None, Action::End, Some(o)) if !bound && o != EndOutcome::Revision => return None,
        (t, _, _) => t,
    };
    Some(fence::InputKind::request(
        worker, action, token, req, outcome,
    ))
}

fn enqueue(m: &FenceMachine<impl Plant<Flaw>>, g: &mut Gen) -> Option<fence::InputKind> {
    let n = m.state().tasks.len();
    let root = *g.pick(&["root-a", "root-c"])?;
    Some(fence::InputKind::Enqueue {
        task: format!("child-{n}").into(),
        root: root.into(),
    })
}

fn restore(g: &mut Gen) -> Option<fence::InputKind> {
    let fences = if g.chance(30) {
        FenceSnapshot::Malformed("not a list".into())
    } else {
        FenceSnapshot::Rows(vec![SnapshotRow {
            root: "root-a".into(),
            status: if g.chance(50) {
                Status::Active
            } else {
                Status::Sealed
            },
        }])
    };
    let pending = vec![
        SnapshotTask {
            task: format!("restored-{}", g.range(0, 1_000_000)).into(),
            root: "root-a".into(),
        },
        SnapshotTask {
            task: format!("restored-{}", g.range(1_000_000, 2_000_000)).into(),
            root: "root-b".into(),
        },
    ];
    Some(fence::InputKind::Restore { fences, pending })
}
