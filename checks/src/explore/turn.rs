//! The turn machine's alphabet for exploration, within named bounds, and its coverage points:
//! every (phase of the named turn, input kind) pair, and every session-level input kind.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use turnfence_model::prelude::*;
use turnfence_model::turn::state::{Child, ChildState, Phase, Turn};
use turnfence_model::turn::{
    ChildKind, Flaw, Input, InputKind, Mode, Output, Profile, TurnMachine,
};
use turnfence_model::Plant;

use super::{Coverage, Explore, Footprint};

/// How far the turn explorer goes.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct TurnBounds {
    pub turns: usize,
    pub children_per_turn: usize,
    pub deltas_per_turn: u64,
    pub deadline_ms: u64,
    /// Also explore the client side: receives, acks, disconnects, resumes.
    pub client: bool,
    /// The rule choices to explore under; by default the machine's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<Profile>,
    /// Explore up to respawns of each turn's children (symmetry reduction,
    /// `super::turn_symmetry`): one state per class. Off unless asked for, and then not written
    /// out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub symmetry: bool,
}

impl TurnBounds {
    /// A bound set under `profile`: so many turns, children and deltas (and the client side or
    /// not), a deadline of 100 ms.
    pub const fn under(
        profile: Profile,
        turns: usize,
        children_per_turn: usize,
        deltas_per_turn: u64,
        client: bool,
    ) -> TurnBounds {
        TurnBounds {
            turns,
            children_per_turn,
            deltas_per_turn,
            deadline_ms: 100,
            client,
            profile: Some(profile),
            symmetry: false,
        }
    }
}

/// A real stack's profile explored, as its folder declares it: the bound sets CI explores under
/// it (`ci`, and with `--deep`, `deep`), and the word its moments of truncation are named under,
/// where its profile truncates to what was heard.
pub struct ProfileBounds {
    pub profile: Profile,
    pub ci: &'static [(&'static str, TurnBounds)],
    pub deep: &'static [(&'static str, TurnBounds)],
    pub moments: Option<&'static str>,
}

/// The times an input may happen at: now, or the next instant something happens without one.
fn times(m: &TurnMachine<impl Plant<Flaw>>) -> Vec<u64> {
    let mut at = vec![m.session().now];
    at.extend(m.poll_timeout());
    // Under a profile that pauses: also the pause's resume, or the moment speech counts as an
    // interruption, when another timer comes first, so one step may pass both (the lab's times
    // are unchanged).
    let s = m.session();
    let resume = s.paused.as_ref().and_then(|(_, r)| *r);
    for r in resume.into_iter().chain(s.interruption_due) {
        if !at.contains(&r) {
            at.push(r);
        }
    }
    at
}

fn phase_name(p: &Phase) -> &'static str {
    match p {
        Phase::Running => "running",
        Phase::CancelRequested { .. } => "cancel_requested",
        Phase::Terminal { .. } => "terminal",
    }
}

/// Every input to try now, within the bounds (before choosing its time).
fn kinds(m: &TurnMachine<impl Plant<Flaw>>, b: &TurnBounds) -> Vec<InputKind> {
    let s = m.session();
    let mut out = Vec::new();
    if s.turns.len() < b.turns {
        let generation = match (s.max_generation, s.active_generation) {
            (Some(max), Some(active)) => max.max(active.saturating_sub(1)) + 1,
            _ => 1,
        };
        out.push(InputKind::Accept {
            turn: format!("t{}", s.turns.len()).into(),
            generation,
            mode: Mode::Audio,
            deadline_ms: Some(b.deadline_ms),
            budget: None,
            interruptible: true,
        });
    }
    for t in &s.turns {
        turn_kinds(t, b, &mut out);
        for c in &t.children {
            child_kinds(&t.id, c, &mut out);
        }
    }
    if !s.playback.is_empty() {
        out.push(InputKind::FRAME_PLAYED);
    }
    out.push(InputKind::SpeechStarted {
        confidence: 0.9,
        since: None,
    });
    if m.profile().pauses_on_speech() {
        pause_kinds(m, b, &mut out);
    }
    if m.profile().times_out_calls() {
        timeout_kinds(m, b, &mut out);
    }
    if b.client {
        client_kinds(m, &mut out);
    }
    out
}

/// A deadline long enough for a pause to be resumed before it (a profile that pauses on speech).
const LONG_DEADLINE_MS: u64 = 3 * turnfence_model::turn::FALSE_INTERRUPTION_TIMEOUT_MS;

/// Under a profile that pauses on speech: an uninterruptible turn, a transcript, the end of speech, a tool's
/// error.
fn pause_kinds(m: &TurnMachine<impl Plant<Flaw>>, b: &TurnBounds, out: &mut Vec<InputKind>) {
    let s = m.session();
    if s.turns.len() < b.turns {
        // Turns whose deadline lets speech count as an interruption and a pause outlast its
        // resume time (a deadline still bounds the time explored: each pause and resume moves
        // the clock on): one uninterruptible, one not.
        for interruptible in [false, true] {
            out.extend(accept_like(out, Some(LONG_DEADLINE_MS), interruptible));
        }
    }
    if s.paused.is_some() {
        out.push(InputKind::Transcribed);
    }
    if s.user_speaking {
        out.push(InputKind::SpeechStopped);
    }
    for t in &s.turns {
        for c in t.children.iter().filter(|c| c.kind.is_tool()) {
            let (turn, child) = (t.id.clone(), c.id.clone());
            if c.state == ChildState::Running {
                out.push(InputKind::ChildFailed { turn, child });
            } else if c.state.is_stopped() {
                // A result that comes after the call was cancelled.
                out.push(InputKind::ChildCompleted { turn, child });
            }
        }
    }
}

/// The next turn's accept (the first input offered, where one is), with this deadline and
/// interruptibility.
fn accept_like(
    out: &[InputKind],
    deadline_ms: Option<u64>,
    interruptible: bool,
) -> Option<InputKind> {
    let Some(InputKind::Accept {
        turn,
        generation,
        mode,
        ..
    }) = out.first()
    else {
        return None;
    };
    Some(InputKind::Accept {
        turn: turn.clone(),
        generation: *generation,
        mode: *mode,
        deadline_ms,
        budget: None,
        interruptible,
    })
}

/// Under a profile that times out calls: an uninterruptible turn, a cancellable tool call with a timeout (half the
/// turn's deadline), and a result that comes after its call was cancelled.
fn timeout_kinds(m: &TurnMachine<impl Plant<Flaw>>, b: &TurnBounds, out: &mut Vec<InputKind>) {
    let s = m.session();
    if s.turns.len() < b.turns {
        out.extend(accept_like(out, Some(b.deadline_ms), false));
    }
    for t in &s.turns {
        if t.children.len() < b.children_per_turn {
            out.push(InputKind::Spawn {
                turn: t.id.clone(),
                child: format!("c{}", t.children.len()).into(),
                kind: ChildKind::Tool {
                    name: "tool".into(),
                    cancellable: true,
                },
                need_ms: None,
                timeout_ms: Some(b.deadline_ms / 2),
            });
        }
        for c in t.children.iter().filter(|c| c.kind.is_tool()) {
            if c.state.is_stopped() {
                out.push(InputKind::ChildCompleted {
                    turn: t.id.clone(),
                    child: c.id.clone(),
                });
            }
        }
    }
}

/// The inputs about one turn: a spawn of each kind, its next delta and a repeat, the model's
/// end, a stop.
fn turn_kinds(t: &Turn, b: &TurnBounds, out: &mut Vec<InputKind>) {
    let turn = t.id.clone();
    if t.children.len() < b.children_per_turn {
        for kind in [
            ChildKind::Model,
            ChildKind::Tool {
                name: "tool".into(),
                cancellable: true,
            },
            ChildKind::Tool {
                name: "tool".into(),
                cancellable: false,
            },
        ] {
            let child = format!("c{}", t.children.len());
            out.push(InputKind::Spawn {
                turn: turn.clone(),
                child: child.into(),
                kind,
                need_ms: None,
                timeout_ms: None,
            });
        }
    }
    if t.last_delivered_seq < b.deltas_per_turn {
        let seq = t.last_delivered_seq + 1;
        let text = Some("x".to_owned());
        out.push(InputKind::Delta {
            turn: turn.clone(),
            generation: t.generation,
            seq,
            text,
            frames: 1,
        });
    }
    if t.last_delivered_seq > 0 {
        let seq = t.last_delivered_seq;
        out.push(InputKind::Delta {
            turn: turn.clone(),
            generation: t.generation,
            seq,
            text: None,
            frames: 1,
        });
    }
    if !t.model_done {
        out.push(InputKind::ModelDone { turn: turn.clone() });
    }
    out.push(InputKind::Stop {
        turn: turn.clone(),
        request_id: "r".into(),
    });
}

/// The inputs about one child, by its state.
fn child_kinds(turn: &str, c: &Child, out: &mut Vec<InputKind>) {
    let turn = turn.to_owned();
    let child = c.id.clone();
    match &c.state {
        ChildState::Running => {
            out.push(InputKind::Checkpoint {
                turn: turn.clone().into(),
                child: child.clone(),
                phase: "p".into(),
                temporary_outputs: 0,
            });
            if c.kind.is_cancellable_tool() && c.temporary_outputs == 0 {
                out.push(InputKind::Checkpoint {
                    turn: turn.clone().into(),
                    child: child.clone(),
                    phase: "w".into(),
                    temporary_outputs: 1,
                });
            }
            out.push(InputKind::ChildCompleted {
                turn: turn.clone().into(),
                child: child.clone(),
            });
            if c.kind.is_noncancellable_tool() {
                out.push(InputKind::CommitSent {
                    turn: turn.clone().into(),
                    child,
                    idempotency_key: "k".into(),
                });
            }
        }
        ChildState::CommitSent { .. } | ChildState::CommitUnknown { .. } => {
            out.push(InputKind::CommitAcked {
                turn: turn.clone().into(),
                child: child.clone(),
            });
            out.push(InputKind::CommitFailed {
                turn: turn.clone().into(),
                child,
            });
        }
        _ => {}
    }
}

/// The client's inputs: receives, acks and a disconnect, or a resume.
fn client_kinds(m: &TurnMachine<impl Plant<Flaw>>, out: &mut Vec<InputKind>) {
    let s = m.session();
    let c = &s.client;
    if c.connected {
        if c.received < s.last_persisted() {
            out.push(InputKind::ClientReceive {
                seq: c.received + 1,
            });
        }
        if c.received > 0 {
            out.push(InputKind::ClientReceive { seq: c.received });
            out.push(InputKind::ClientAck { seq: c.received });
        }
        out.push(InputKind::Disconnect);
    } else {
        out.push(InputKind::Resume {
            after_seq: c.received,
        });
        // A cursor the client did not reach: the store's last event.
        if s.last_persisted() != c.received {
            out.push(InputKind::Resume {
                after_seq: s.last_persisted(),
            });
        }
    }
}

impl<P: Plant<Flaw>> Explore for TurnMachine<P> {
    type Bounds = TurnBounds;

    /// The bounds CI explores exhaustively, each exhaustive, coverage and reached invariants
    /// their union: two turns (successors, barge-in, refusal, deadlines) with one child and one
    /// delta each; one turn with two children (every kind of child, commits, temporaries); one
    /// turn streaming two deltas to a client that acks, drops and resumes; two turns streaming
    /// two deltas each beside a child; then each real stack's profile's own sets, in its folder
    /// ([`crate::dialect::EXPLORED`]).
    fn ci_bounds() -> Vec<(&'static str, TurnBounds)> {
        let b = |turns, children_per_turn, deltas_per_turn, client| TurnBounds {
            turns,
            children_per_turn,
            deltas_per_turn,
            deadline_ms: 100,
            client,
            profile: None,
            symmetry: false,
        };
        let mut sets = vec![
            ("turns", b(2, 1, 1, false)),
            ("children", b(1, 2, 1, false)),
            ("stream", b(1, 0, 2, true)),
            // Two turns each streaming two deltas beside a child: the deeper set the explorer's
            // speed allows (778 161 states, depth 18).
            ("streams", b(2, 1, 2, false)),
        ];
        sets.extend(crate::dialect::EXPLORED.iter().flat_map(|e| e.ci).cloned());
        sets
    }

    /// Three turns: one delta each, streamed to a client that acks, drops and resumes across
    /// all three (208 660 states, depth 22); then each real stack's profile's deeper sets.
    fn deep_bounds() -> Vec<(&'static str, TurnBounds)> {
        let three = TurnBounds {
            turns: 3,
            children_per_turn: 0,
            deltas_per_turn: 1,
            deadline_ms: 100,
            client: true,
            profile: None,
            symmetry: false,
        };
        let mut sets = vec![("three", three)];
        sets.extend(
            crate::dialect::EXPLORED
                .iter()
                .flat_map(|e| e.deep)
                .cloned(),
        );
        sets
    }

    /// Larger, for hunting a flaw (not exhaustive: it stops at the first violation).
    fn hunt_bounds() -> TurnBounds {
        TurnBounds {
            turns: 2,
            children_per_turn: 2,
            deltas_per_turn: 2,
            deadline_ms: 100,
            client: true,
            profile: None,
            symmetry: false,
        }
    }

    fn bounded(self, bounds: &TurnBounds) -> Self {
        match bounds.profile {
            Some(profile) => self.profiled(profile),
            None => self,
        }
    }

    fn alphabet(&self, bounds: &TurnBounds) -> Vec<Input> {
        let at = times(self);
        let mut out = Vec::new();
        for kind in kinds(self, bounds) {
            for t in &at {
                out.push(Input::new(*t, kind.clone()));
            }
        }
        if let Some(next) = at.get(1) {
            out.push(Input::new(*next, InputKind::Tick));
        }
        out
    }

    fn covered(&self, input: &Input, outputs: &[Output], point: &mut dyn FnMut(&[&str])) {
        let subject = match input.turn() {
            Some(t) => self
                .session()
                .turn(t)
                .map_or("new", |turn| phase_name(&turn.phase)),
            None => "session",
        };
        // Pieces, not a formatted string: the explorer's hot path (every transition).
        point(&[subject, "/", input.kind.name()]);
        // The moments of truncation are looked for under a profile that truncates only (the
        // explorer's hot path: every transition), each named under its profile's own word.
        if self.profile().truncates_to_heard() {
            let profile = self.profile();
            let word = crate::dialect::EXPLORED
                .iter()
                .find(|e| e.profile == profile)
                .and_then(|e| e.moments);
            if let Some(word) = word {
                for p in truncation_points(self, input, outputs) {
                    point(&[word, "/", p]);
                }
            }
        }
    }

    fn coverage() -> Coverage {
        coverage()
    }

    fn symmetry(bounds: &TurnBounds) -> bool {
        bounds.symmetry
    }

    fn with_symmetry(bounds: &TurnBounds) -> Option<TurnBounds> {
        Some(TurnBounds {
            symmetry: true,
            ..bounds.clone()
        })
    }

    fn canonical_fingerprint(&self, monitor: &turnfence_model::turn::Monitor) -> u64 {
        super::turn_symmetry::canonical_fingerprint(self, monitor)
    }

    fn footprint(&self, input: &Input, _: &TurnBounds) -> Footprint {
        super::turn_footprint::footprint(self, input)
    }
}

/// The moments of a profile that truncates to what was heard, from the state before the input
/// and its outputs: a turn truncated to what was heard, speech over a turn that had ended while its audio still played,
/// a create refused while the active turn was only cancelling, a stop naming a turn that had
/// ended while another ran.
fn truncation_points(
    m: &TurnMachine<impl Plant<Flaw>>,
    input: &Input,
    outputs: &[Output],
) -> Vec<&'static str> {
    let s = m.session();
    let mut points = Vec::new();
    if outputs
        .iter()
        .any(|o| matches!(o, Output::Truncated { .. }))
    {
        points.push("truncated");
    }
    let ended_audible = s
        .turns
        .iter()
        .any(|t| t.phase.is_terminal() && s.playback.holds(&t.id));
    match &input.kind {
        InputKind::SpeechStarted { .. } if ended_audible => {
            points.push("speech_over_an_ended_turn");
        }
        InputKind::Accept { .. }
            if outputs
                .iter()
                .any(|o| matches!(o, Output::TurnRefused { .. }))
                && !s.turns.iter().any(|t| t.phase.is_running()) =>
        {
            points.push("refused_while_cancelling");
        }
        InputKind::Stop { turn, .. }
            if s.turn(turn).is_some_and(|t| t.phase.is_terminal())
                && s.turns.iter().any(|t| !t.phase.is_terminal()) =>
        {
            points.push("stale_stop");
        }
        _ => {}
    }
    points
}

/// What the turn explorer must reach: every input kind naming a turn in every phase, every
/// session-level input kind — less the pairs that cannot happen, each with its reason.
pub fn coverage() -> Coverage {
    let turn_kinds = [
        "spawn",
        "child_completed",
        "checkpoint",
        "delta",
        "model_done",
        "stop",
        "commit_sent",
        "commit_acked",
        "commit_failed",
    ];
    let mut required: Vec<String> = vec!["new/accept".into()];
    for phase in ["running", "cancel_requested", "terminal"] {
        for k in turn_kinds {
            required.push(format!("{phase}/{k}"));
        }
    }
    // The moments of truncation, under the word of each profile that names them (reached by its
    // bounds).
    for word in crate::dialect::EXPLORED.iter().filter_map(|e| e.moments) {
        for k in [
            "truncated",
            "speech_over_an_ended_turn",
            "refused_while_cancelling",
            "stale_stop",
        ] {
            required.push(format!("{word}/{k}"));
        }
    }
    for k in [
        "frame_played",
        "speech_started",
        "tick",
        "client_ack",
        "disconnect",
        "resume",
        "client_receive",
    ] {
        required.push(format!("session/{k}"));
    }
    let no_child = "a terminal turn has no running child and no commit in flight: every child was resolved before it ended";
    // (`terminal/child_completed` is reached: where tools run through an interruption a
    // cancelled tool's result comes late, after its turn ended.)
    let impossible: BTreeMap<String, &'static str> = [
        ("terminal/checkpoint", no_child),
        ("terminal/commit_sent", no_child),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    Coverage {
        required,
        impossible,
    }
}

/// The distinct coverage points (for the pinned snapshot).
pub fn points(reached: &BTreeSet<String>) -> Vec<String> {
    reached.iter().cloned().collect()
}
