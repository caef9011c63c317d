//! Random inputs for the turn machine, chosen against its state: accepts (with deadlines and
//! budgets), spawns of every kind, checkpoints, deltas (late and out-of-generation ones too),
//! frames played, stops (repeated, racing completion, before any output), speech, commits, ticks
//! across deadlines, acks, disconnects, resumes and duplicate receives.

use std::collections::BTreeMap;

use turnfence_model::turn::state::{ChildState, Phase};
use turnfence_model::turn::{
    Budget, ChildId, ChildKind, Flaw, Input, InputKind, Mode, TurnId, TurnMachine,
};
use turnfence_model::{Millis, Plant};

use super::{FaultMix, Fuzz, Gen};

/// The kinds of step, by weight (adjusted by the fault mix).
#[derive(Clone, Copy)]
enum Pick {
    Accept,
    Spawn,
    Delta,
    Checkpoint,
    Complete,
    ModelDone,
    FramePlayed,
    Stop,
    Speech,
    Commit,
    Tick,
    Client,
}

const PICKS: [Pick; 12] = [
    Pick::Accept,
    Pick::Spawn,
    Pick::Delta,
    Pick::Checkpoint,
    Pick::Complete,
    Pick::ModelDone,
    Pick::FramePlayed,
    Pick::Stop,
    Pick::Speech,
    Pick::Commit,
    Pick::Tick,
    Pick::Client,
];

fn weights(m: &TurnMachine<impl Plant<Flaw>>, mix: &FaultMix) -> [u32; 12] {
    let s = m.session();
    let running = s.turns.iter().any(|t| !t.phase.is_terminal());
    let live = |w: u32| if running { w } else { 0 };
    [
        if running { 2 } else { 20 },
        live(10),
        live(20),
        live(12),
        live(5),
        live(4),
        if s.playback.is_empty() { 0 } else { 8 },
        3 + mix.stop_pct,
        1 + mix.barge_in_pct,
        live(4),
        4 + mix.stall_pct,
        6 + mix.duplicate_pct / 2 + mix.disconnect_pct,
    ]
}

impl<P: Plant<Flaw>> Fuzz for TurnMachine<P> {
    fn profile_name(&self) -> Option<&'static str> {
        Some(self.profile())
            .filter(|p| !p.is_lab())
            .map(|p| p.name())
    }

    fn next_input(&self, g: &mut Gen, mix: &FaultMix, at: &mut Millis) -> Input {
        let m = self;
        *at += if g.chance(mix.stall_pct) {
            g.range(20, 200)
        } else {
            g.range(0, 15)
        };
        // A profile's own inputs, drawn only under it: the lab's draws stay as they were.
        if m.profile().pauses_on_speech() && g.chance(20) {
            // Or the silence after a pause, long enough for its resume to fall due.
            let s = m.session();
            let due = s
                .paused
                .as_ref()
                .and_then(|(_, r)| *r)
                .or(s.interruption_due);
            if let Some(due) = due.filter(|_| g.chance(30)) {
                *at = (*at).max(due);
                return Input::new(*at, InputKind::Tick);
            }
            return Input::new(*at, pause_input(m, g).unwrap_or(InputKind::Tick));
        }
        if m.profile().times_out_calls() && g.chance(20) {
            return Input::new(*at, timeout_input(m, g).unwrap_or(InputKind::Tick));
        }
        let kind = match PICKS[g.weighted(&weights(m, mix))] {
            Pick::Accept => accept(m, g),
            Pick::Spawn => spawn(m, g),
            Pick::Delta => delta(m, g, mix),
            Pick::Checkpoint => child_input(m, g, true),
            Pick::Complete => child_input(m, g, false),
            Pick::ModelDone => {
                some_turn(m, g).map(|turn| InputKind::ModelDone { turn: turn.into() })
            }
            Pick::FramePlayed => Some(InputKind::FRAME_PLAYED),
            Pick::Stop => stop(m, g),
            Pick::Speech => Some(InputKind::SpeechStarted {
                confidence: g.range(50, 100) as f64 / 100.0,
                since: None,
            }),
            Pick::Commit => commit(m, g),
            Pick::Tick => {
                *at += g.range(0, 120);
                Some(InputKind::Tick)
            }
            Pick::Client => client(m, g, mix),
        };
        Input::new(*at, kind.unwrap_or(InputKind::Tick))
    }

    fn faults(m: &FaultMix) -> String {
        format!(
            "pauses of 20–200 ms {} %, stops {} %, barge-ins {} %, late deltas {} %, disconnects {} %, duplicates {} %",
            m.stall_pct, m.stop_pct, m.barge_in_pct, m.late_delta_pct, m.disconnect_pct, m.duplicate_pct
        )
    }

    fn summary(&self) -> BTreeMap<String, String> {
        let m = self;
        let s = m.session();
        let mut out = BTreeMap::new();
        if let Some(g) = s.active_generation {
            out.insert("active_generation".into(), g.to_string());
        }
        for t in &s.turns {
            out.insert(format!("turn {}", t.id), phase(&t.phase));
            for c in &t.children {
                out.insert(
                    format!("child {}/{}", t.id, c.id),
                    c.state.name().to_owned(),
                );
            }
        }
        out.insert("playback".into(), format!("{} frames", s.playback.len()));
        out.insert("store".into(), format!("{} events", s.store.len()));
        let c = &s.client;
        let link = if c.connected {
            "connected"
        } else {
            "disconnected"
        };
        out.insert(
            "client".into(),
            format!("{link}, received {}, acked {}", c.received, c.acked),
        );
        out
    }
}

fn phase(p: &Phase) -> String {
    match p {
        Phase::Running => "running".into(),
        Phase::CancelRequested { cause } => format!("cancel_requested({cause:?})"),
        Phase::Terminal { state } => state.label().to_owned(),
    }
}

fn some_turn(m: &TurnMachine<impl Plant<Flaw>>, g: &mut Gen) -> Option<String> {
    let ids: Vec<&str> = m.session().turns.iter().map(|t| t.id.as_str()).collect();
    g.pick(&ids).map(|s| (*s).to_owned())
}

fn live_turn(m: &TurnMachine<impl Plant<Flaw>>, g: &mut Gen) -> Option<String> {
    let ids: Vec<&str> = m
        .session()
        .turns
        .iter()
        .filter(|t| !t.phase.is_terminal())
        .map(|t| t.id.as_str())
        .collect();
    g.pick(&ids).map(|s| (*s).to_owned())
}

fn accept(m: &TurnMachine<impl Plant<Flaw>>, g: &mut Gen) -> Option<InputKind> {
    let s = m.session();
    let n = s.turns.len();
    let generation = match (s.max_generation, s.active_generation) {
        (Some(max), Some(active)) => max.max(active.saturating_sub(1)) + 1,
        _ => 1,
    };
    let deadline_ms = g.chance(70).then(|| g.range(40, 400));
    let budget = deadline_ms.filter(|_| g.chance(40)).map(|d| Budget {
        retrieval_ms: d / 4,
        model_ms: d / 2,
        reserve_ms: d / 8,
    });
    Some(InputKind::Accept {
        turn: format!("t{n}").into(),
        generation,
        mode: if g.chance(50) {
            Mode::Audio
        } else {
            Mode::Text
        },
        deadline_ms,
        budget,
        interruptible: true,
    })
}

/// An accept of an uninterruptible audio turn.
fn uninterruptible_accept(m: &TurnMachine<impl Plant<Flaw>>, g: &mut Gen) -> Option<InputKind> {
    match accept(m, g)? {
        InputKind::Accept {
            turn,
            generation,
            deadline_ms,
            budget,
            ..
        } => Some(InputKind::Accept {
            turn,
            generation,
            mode: Mode::Audio,
            deadline_ms,
            budget,
            interruptible: false,
        }),
        other => Some(other),
    }
}

/// Under a profile that times out calls: an uninterruptible audio turn (one spoken as
/// uninterruptible, or a pipeline without interruptions), a tool call with a timeout (cancelled
/// by an interruption or not), a result after its call was stopped, or speech.
fn timeout_input(m: &TurnMachine<impl Plant<Flaw>>, g: &mut Gen) -> Option<InputKind> {
    match g.range(0, 4) {
        0 => uninterruptible_accept(m, g),
        1 => match spawn(m, g)? {
            InputKind::Spawn {
                turn,
                child,
                need_ms,
                ..
            } => Some(InputKind::Spawn {
                turn,
                child,
                kind: ChildKind::Tool {
                    name: "tool".into(),
                    cancellable: g.chance(70),
                },
                need_ms,
                timeout_ms: Some(g.range(0, 200)),
            }),
            other => Some(other),
        },
        2 => {
            let turn = some_turn(m, g)?;
            let t = m.session().turn(&turn)?;
            let stopped: Vec<&str> = t
                .children
                .iter()
                .filter(|c| c.kind.is_tool() && c.state.is_stopped())
                .map(|c| c.id.as_str())
                .collect();
            let child = g.pick(&stopped)?.to_string();
            Some(InputKind::ChildCompleted {
                turn: turn.into(),
                child: child.into(),
            })
        }
        _ => Some(InputKind::SpeechStarted {
            confidence: 0.9,
            since: None,
        }),
    }
}

/// Under a profile that pauses on speech: a transcript confirming a pause, a tool's error, an uninterruptible
/// turn, the end of speech, or more speech.
fn pause_input(m: &TurnMachine<impl Plant<Flaw>>, g: &mut Gen) -> Option<InputKind> {
    match g.range(0, 5) {
        3 => Some(InputKind::SpeechStopped),
        0 => Some(InputKind::Transcribed),
        1 => {
            let turn = live_turn(m, g)?;
            let t = m.session().turn(&turn)?;
            let tools: Vec<&str> = t
                .children
                .iter()
                .filter(|c| c.kind.is_tool())
                .map(|c| c.id.as_str())
                .collect();
            let child = g.pick(&tools)?.to_string();
            Some(InputKind::ChildFailed {
                turn: turn.into(),
                child: child.into(),
            })
        }
        2 => uninterruptible_accept(m, g),
        _ => Some(InputKind::SpeechStarted {
            confidence: 0.9,
            since: None,
        }),
    }
}

fn spawn(m: &TurnMachine<impl Plant<Flaw>>, g: &mut Gen) -> Option<InputKind> {
    let turn = live_turn(m, g)?;
    let n = m.session().turn(&turn).map_or(0, |t| t.children.len());
    let kind = match g.range(0, 5) {
        0 => ChildKind::Retrieval,
        1 => ChildKind::Model,
        2 => ChildKind::Tts,
        k => ChildKind::Tool {
            name: "tool".into(),
            cancellable: k == 3,
        },
    };
    let need_ms = g.chance(30).then(|| g.range(0, 150));
    Some(InputKind::Spawn {
        turn: turn.into(),
        child: format!("c{n}").into(),
        kind,
        need_ms,
        timeout_ms: None,
    })
}

fn delta(m: &TurnMachine<impl Plant<Flaw>>, g: &mut Gen, mix: &FaultMix) -> Option<InputKind> {
    let s = m.session();
    let turn = if g.chance(mix.late_delta_pct) {
        some_turn(m, g)?
    } else {
        live_turn(m, g)?
    };
    let t = s.turn(&turn)?;
    let late = g.chance(mix.late_delta_pct);
    let generation = if late && g.chance(50) {
        t.generation.saturating_sub(1)
    } else {
        t.generation
    };
    let seq = if late {
        g.range(1, t.last_delivered_seq + 2)
    } else {
        t.last_delivered_seq + 1
    };
    let frames = if t.mode == Mode::Audio {
        g.range(1, 3) as u32
    } else {
        0
    };
    let words = ["the ", "disk ", "is ", "fine", "."];
    let text = g.pick(&words).map(|w| (*w).to_owned());
    Some(InputKind::Delta {
        turn: turn.into(),
        generation,
        seq,
        text,
        frames,
    })
}

/// A checkpoint (with `checkpoint`) or a completion of a running child.
fn child_input(
    m: &TurnMachine<impl Plant<Flaw>>,
    g: &mut Gen,
    checkpoint: bool,
) -> Option<InputKind> {
    let running: Vec<(TurnId, ChildId, bool)> = m
        .session()
        .turns
        .iter()
        .flat_map(|t| {
            t.children
                .iter()
                .filter(|c| c.state == ChildState::Running)
                .map(|c| (t.id.clone(), c.id.clone(), c.kind.is_cancellable_tool()))
        })
        .collect();
    let (turn, child, cancellable) = g.pick(&running)?.clone();
    if !checkpoint {
        return Some(InputKind::ChildCompleted { turn, child });
    }
    let phases = [
        "before_merge",
        "before_decode",
        "write_temporary",
        "before_publish",
    ];
    Some(InputKind::Checkpoint {
        turn,
        child,
        phase: (*g.pick(&phases)?).to_owned(),
        temporary_outputs: if cancellable { g.range(0, 2) as u32 } else { 0 },
    })
}

fn stop(m: &TurnMachine<impl Plant<Flaw>>, g: &mut Gen) -> Option<InputKind> {
    let turn = some_turn(m, g)?;
    let request_id = format!("r{}", g.range(0, 3));
    Some(InputKind::Stop {
        turn: turn.into(),
        request_id,
    })
}

fn commit(m: &TurnMachine<impl Plant<Flaw>>, g: &mut Gen) -> Option<InputKind> {
    let s = m.session();
    let mut options = Vec::new();
    for t in &s.turns {
        for c in &t.children {
            match &c.state {
                ChildState::Running if c.kind.is_noncancellable_tool() => {
                    options.push((t.id.clone(), c.id.clone(), true))
                }
                ChildState::CommitSent { .. } | ChildState::CommitUnknown { .. } => {
                    options.push((t.id.clone(), c.id.clone(), false))
                }
                _ => {}
            }
        }
    }
    let (turn, child, send) = g.pick(&options)?.clone();
    Some(if send {
        InputKind::CommitSent {
            idempotency_key: format!("key-{turn}-{child}"),
            turn,
            child,
        }
    } else if g.chance(70) {
        InputKind::CommitAcked { turn, child }
    } else {
        InputKind::CommitFailed { turn, child }
    })
}

fn client(m: &TurnMachine<impl Plant<Flaw>>, g: &mut Gen, mix: &FaultMix) -> Option<InputKind> {
    let s = m.session();
    let c = &s.client;
    let last = s.last_persisted();
    if !c.connected {
        let after = if g.chance(80) {
            c.received
        } else {
            g.range(0, last + 3)
        };
        return Some(InputKind::Resume { after_seq: after });
    }
    if g.chance(mix.disconnect_pct) {
        return Some(InputKind::Disconnect);
    }
    if c.received < last && !g.chance(mix.duplicate_pct) {
        return Some(if g.chance(80) {
            InputKind::ClientReceive {
                seq: c.received + 1,
            }
        } else {
            InputKind::ClientAck { seq: c.received }
        });
    }
    (c.received > 0).then(|| InputKind::ClientReceive {
        seq: g.range(1, c.received + 1),
    })
}
