//! The eleven turn invariants of SPEC §2.5, as a monitor over what happened: inputs and the
//! outputs each one caused. The monitor never looks inside a machine, so it judges the model, a
//! flawed model and a real system's trace alike.
//!
//! Each invariant is an `always` property with a paired `sometimes` ([`Invariant::reached`]): a
//! run in which an invariant was never put to the test proves nothing about it.
//!
//! Feed the monitor `input`, then that input's outputs, then `end_step`; call `finish` at the end.
//! The named functions ([`one_terminal_state`], …) run it over a recorded [`Step`] sequence.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::machine::RESUME_TTL_MS;
use super::types::*;
use super::TurnMachine;
use crate::Millis;
use crate::Monitor as _;

/// The turn invariants. Their names are fixed (SPEC §2.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Invariant {
    OneTerminalState,
    IdempotentStop,
    NoLateDelivery,
    CancelTreeDrained,
    DeadlineRespected,
    NoFalseCancelClaim,
    CancelledToolLeavesNothing,
    ReplayExactlyOnce,
    SeqMonotonic,
    SingleRunningTurn,
    QuiescentTurnsTerminal,
}

impl crate::Invariant for Invariant {
    const ALL: &'static [Invariant] = &[
        Invariant::OneTerminalState,
        Invariant::IdempotentStop,
        Invariant::NoLateDelivery,
        Invariant::CancelTreeDrained,
        Invariant::DeadlineRespected,
        Invariant::NoFalseCancelClaim,
        Invariant::CancelledToolLeavesNothing,
        Invariant::ReplayExactlyOnce,
        Invariant::SeqMonotonic,
        Invariant::SingleRunningTurn,
        Invariant::QuiescentTurnsTerminal,
    ];

    fn name(self) -> &'static str {
        match self {
            Invariant::OneTerminalState => "one_terminal_state",
            Invariant::IdempotentStop => "idempotent_stop",
            Invariant::NoLateDelivery => "no_late_delivery",
            Invariant::CancelTreeDrained => "cancel_tree_drained",
            Invariant::DeadlineRespected => "deadline_respected",
            Invariant::NoFalseCancelClaim => "no_false_cancel_claim",
            Invariant::CancelledToolLeavesNothing => "cancelled_tool_leaves_nothing",
            Invariant::ReplayExactlyOnce => "replay_exactly_once",
            Invariant::SeqMonotonic => "seq_monotonic",
            Invariant::SingleRunningTurn => "single_running_turn",
            Invariant::QuiescentTurnsTerminal => "quiescent_turns_terminal",
        }
    }

    /// What a run must show for this invariant to have been put to the test (its `sometimes`).
    fn reached(self) -> &'static str {
        match self {
            Invariant::OneTerminalState => "a turn reached a terminal state",
            Invariant::IdempotentStop => "a stop was answered for a turn already stopping or ended",
            Invariant::NoLateDelivery => "the gate dropped a delta, or playback was cleared",
            Invariant::CancelTreeDrained => "a turn with a stopped child ended cancelled or failed",
            Invariant::DeadlineRespected => "a deadline fired",
            Invariant::NoFalseCancelClaim => "a turn ended reconcile_required",
            Invariant::CancelledToolLeavesNothing => {
                "a cancelled tool's temporary outputs were removed"
            }
            Invariant::ReplayExactlyOnce => "a resume replayed and the client rendered a turn",
            Invariant::SeqMonotonic => "a second delta of one generation was delivered",
            Invariant::SingleRunningTurn => "a turn was accepted or refused beside another",
            Invariant::QuiescentTurnsTerminal => "a turn past its deadline ended",
        }
    }
}

/// A broken invariant of this machine.
pub type Violation = crate::Violation<Invariant>;

/// One input and the outputs it caused.
pub type Step = crate::Step<Input, Output>;

#[derive(Clone, Debug, PartialEq, Hash)]
enum ChildObs {
    Running,
    Resolved,
    InFlight(String),
    Effect { key: String, uncertain: bool },
}

#[derive(Clone, Debug, Hash)]
struct ChildSeen {
    kind: ChildKind,
    state: ChildObs,
    cancel_requested: bool,
    temporaries: u32,
    enqueued: bool,
    cancelled: bool,
}

#[derive(Clone, Debug, Default, Hash)]
struct TurnSeen {
    generation: Generation,
    deadline_at: Option<Millis>,
    budget: Option<Budget>,
    /// Cancel requested by a stop, a barge-in or the deadline.
    cancelled: bool,
    by_deadline: bool,
    cancel_effects: u32,
    terminal: Option<Terminal>,
    children: BTreeMap<ChildId, ChildSeen>,
    last_seq: BTreeMap<Generation, Seq>,
}

impl TurnSeen {
    fn stopping(&self) -> bool {
        self.cancelled || self.terminal.is_some()
    }

    fn pending_children(&self) -> Vec<&str> {
        self.children
            .iter()
            .filter(|(_, c)| matches!(c.state, ChildObs::Running | ChildObs::InFlight(_)))
            .map(|(id, _)| id.as_str())
            .collect()
    }
}

/// Expectations an input sets for its own step's outputs.
#[derive(Clone, Debug, Default)]
struct StepExpect {
    stop: Option<(TurnId, String)>,
    spawn: Option<(TurnId, ChildId, &'static str)>,
    accept: Option<TurnId>,
    receive_dup: Option<Seq>,
    resume: Option<Seq>,
    answered: bool,
    not_started: bool,
    refused: bool,
    duplicate_ignored: bool,
    resume_answered: bool,
}

/// The monitor: feed it a run, collect the violations.
#[derive(Clone, Debug, Default)]
pub struct Monitor {
    only: Option<Invariant>,
    step: usize,
    now: Millis,
    active_generation: Option<Generation>,
    turns: BTreeMap<TurnId, TurnSeen>,
    /// The persisted events: (turn, text, terminal). Index i has seq i + 1.
    store: Vec<(TurnId, Option<String>, bool)>,
    client_received: Seq,
    client_text: BTreeMap<TurnId, String>,
    disconnected_at: Option<Millis>,
    /// A resume was served by a replay.
    replayed: bool,
    /// Standing conditions already reported, so each is reported once.
    reported: BTreeSet<(Invariant, String)>,
    expect: StepExpect,
    violations: Vec<Violation>,
    reached: BTreeSet<Invariant>,
}

impl crate::Monitor<TurnMachine> for Monitor {
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

    fn finish(&mut self) {
        self.on_finish();
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
        self.active_generation.hash(h);
        self.turns.hash(h);
        self.store.hash(h);
        self.client_received.hash(h);
        self.client_text.hash(h);
        self.disconnected_at.hash(h);
        self.replayed.hash(h);
        self.reported.hash(h);
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

    fn reach(&mut self, invariant: Invariant) {
        self.reached.insert(invariant);
    }

    /// An input happened.
    fn on_input(&mut self, input: &Input) {
        self.now = self.now.max(input.at);
        self.expect = StepExpect::default();
        match &input.kind {
            InputKind::Accept {
                turn,
                generation,
                deadline_ms,
                budget,
                ..
            } => self.on_accept(turn, *generation, *deadline_ms, *budget),
            InputKind::Spawn {
                turn,
                child,
                kind,
                need_ms,
            } => self.on_spawn(turn, child, kind, *need_ms),
            InputKind::ChildCompleted { turn, child } => {
                self.set_child(turn, child, |c| c.state = ChildObs::Resolved)
            }
            InputKind::Checkpoint {
                turn,
                child,
                temporary_outputs,
                ..
            } => {
                let stopping = self.turns.get(turn).is_some_and(TurnSeen::stopping);
                self.set_child(turn, child, |c| {
                    if !stopping && !c.cancel_requested && c.state == ChildObs::Running {
                        c.temporaries = c.temporaries.saturating_add(*temporary_outputs);
                    }
                })
            }
            InputKind::ModelDone { turn } => {
                if let Some(t) = self.turns.get_mut(turn) {
                    for c in t.children.values_mut() {
                        if c.kind == ChildKind::Model && c.state == ChildObs::Running {
                            c.state = ChildObs::Resolved;
                        }
                    }
                }
            }
            InputKind::Stop { turn, request_id } => {
                self.expect.stop = Some((turn.clone(), request_id.clone()));
            }
            InputKind::CommitSent {
                turn,
                child,
                idempotency_key,
            } => self.set_child(turn, child, |c| {
                c.state = ChildObs::InFlight(idempotency_key.clone())
            }),
            InputKind::CommitAcked { turn, child } | InputKind::CommitFailed { turn, child } => {
                let uncertain = matches!(input.kind, InputKind::CommitFailed { .. });
                self.set_child(turn, child, |c| {
                    if let ChildObs::InFlight(key) | ChildObs::Effect { key, .. } = &c.state {
                        let was_uncertain = matches!(
                            c.state,
                            ChildObs::Effect {
                                uncertain: true,
                                ..
                            }
                        );
                        c.state = ChildObs::Effect {
                            key: key.clone(),
                            uncertain: uncertain || was_uncertain,
                        };
                    }
                })
            }
            InputKind::Disconnect => self.disconnected_at = Some(self.now),
            InputKind::Resume { after_seq } => self.expect.resume = Some(*after_seq),
            InputKind::ClientReceive { seq } => self.on_receive(*seq),
            InputKind::Delta { .. }
            | InputKind::FramePlayed
            | InputKind::SpeechStarted { .. }
            | InputKind::Tick
            | InputKind::ClientAck { .. } => {}
        }
    }

    fn set_child(&mut self, turn: &str, child: &str, f: impl FnOnce(&mut ChildSeen)) {
        if let Some(c) = self
            .turns
            .get_mut(turn)
            .and_then(|t| t.children.get_mut(child))
        {
            f(c);
        }
    }

    fn on_accept(
        &mut self,
        turn: &str,
        generation: Generation,
        deadline_ms: Option<u64>,
        budget: Option<Budget>,
    ) {
        if self.turns.values().any(|t| t.terminal.is_none()) {
            self.reach(Invariant::SingleRunningTurn);
        }
        self.expect.accept = Some(turn.to_owned());
        self.turns.insert(
            turn.to_owned(),
            TurnSeen {
                generation,
                deadline_at: deadline_ms.map(|d| self.now.saturating_add(d)),
                budget,
                ..TurnSeen::default()
            },
        );
    }

    fn on_spawn(&mut self, turn: &str, child: &str, kind: &ChildKind, need_ms: Option<u64>) {
        let now = self.now;
        let Some(t) = self.turns.get_mut(turn) else {
            return;
        };
        let need = need_ms.unwrap_or(match (kind, t.budget) {
            (ChildKind::Retrieval, Some(b)) => b.retrieval_ms,
            (ChildKind::Model, Some(b)) => b.model_ms,
            _ => 0,
        });
        let late = t
            .deadline_at
            .is_some_and(|d| now >= d || d.saturating_sub(now) < need);
        let why = if late {
            Some("it had less time left than it needs")
        } else if t.stopping() {
            Some("its turn was already cancelled")
        } else {
            None
        };
        if let Some(why) = why {
            self.expect.spawn = Some((turn.to_owned(), child.to_owned(), why));
        }
        t.children.insert(
            child.to_owned(),
            ChildSeen {
                kind: kind.clone(),
                state: ChildObs::Running,
                cancel_requested: false,
                temporaries: 0,
                enqueued: false,
                cancelled: false,
            },
        );
    }

    fn on_receive(&mut self, seq: Seq) {
        if seq <= self.client_received {
            self.expect.receive_dup = Some(seq);
            return;
        }
        self.client_received = seq;
        if let Some((turn, text, _)) = self.store.get((seq as usize).wrapping_sub(1)) {
            let rendered = self.client_text.entry(turn.clone()).or_default();
            if let Some(text) = text {
                rendered.push_str(text);
            }
        }
    }

    /// An output of the current step happened.
    fn on_output(&mut self, output: &Output) {
        match output {
            Output::TurnRefused { turn, .. } => {
                if self.expect.accept.as_deref() == Some(turn) {
                    self.expect.refused = true;
                    self.turns.remove(turn);
                }
            }
            Output::Delivered {
                turn,
                generation,
                seq,
            } => self.on_delivered(turn, *generation, *seq),
            Output::Played {
                turn, generation, ..
            } => self.on_played(turn, *generation),
            Output::LateDropped { reason, .. } => {
                if *reason != DropReason::OutOfOrder {
                    self.reach(Invariant::NoLateDelivery);
                }
            }
            Output::PlaybackCleared { frames, .. } => {
                if *frames > 0 {
                    self.reach(Invariant::NoLateDelivery);
                }
            }
            Output::ChildCancelRequested { turn, child }
            | Output::CancelDeferred { turn, child, .. } => {
                self.set_child(turn, child, |c| c.cancel_requested = true)
            }
            Output::ChildCancelled { turn, child, .. } => self.on_child_cancelled(turn, child),
            Output::TemporaryOutputRemoved { turn, child, count } => {
                self.reach(Invariant::CancelledToolLeavesNothing);
                self.set_child(turn, child, |c| {
                    c.temporaries = c.temporaries.saturating_sub(*count)
                })
            }
            Output::ToolNotStarted { turn, child, .. } => {
                if let Some((t, c, _)) = &self.expect.spawn {
                    if t == turn && c == child {
                        self.expect.not_started = true;
                    }
                }
                self.set_child(turn, child, |c| c.state = ChildObs::Resolved)
            }
            Output::ReconcileEnqueued { turn, child, .. } => self.set_child(turn, child, |c| {
                c.enqueued = true;
                if let ChildObs::InFlight(key) = &c.state {
                    c.state = ChildObs::Effect {
                        key: key.clone(),
                        uncertain: true,
                    };
                }
            }),
            Output::StopAnswered {
                turn,
                request_id,
                answer,
            } => self.on_stop_answered(turn, request_id, *answer),
            Output::GenerationFenced { turn, generation } => {
                self.active_generation = Some(generation.saturating_add(1));
                if let Some(t) = self.turns.get_mut(turn) {
                    t.cancelled = true;
                }
            }
            Output::DeadlineExceeded { turn } => self.on_deadline(turn),
            Output::Persisted {
                turn,
                text,
                terminal,
                ..
            } => self.store.push((turn.clone(), text.clone(), *terminal)),
            Output::ResumeRefused { after_seq, reason } => {
                self.on_resume_refused(*after_seq, *reason)
            }
            Output::Replayed { from, to } => self.on_replayed(*from, *to),
            Output::DuplicateIgnored { seq } => {
                if self.expect.receive_dup == Some(*seq) {
                    self.expect.duplicate_ignored = true;
                }
            }
            Output::Rendered { turn, text } => self.on_rendered(turn, text),
            Output::Terminal { turn, state } => self.on_terminal(turn, *state),
        }
    }

    fn on_delivered(&mut self, turn: &str, generation: Generation, seq: Seq) {
        let active = self.active_generation;
        let Some(t) = self.turns.get_mut(turn) else {
            return;
        };
        let last = t.last_seq.entry(generation).or_insert(0);
        let expected = last.saturating_add(1);
        *last = seq;
        let stopping = t.stopping();
        let stale = generation != t.generation || Some(generation) != active;
        if seq >= 2 {
            self.reach(Invariant::SeqMonotonic);
        }
        let (g, s) = (generation.to_string(), seq.to_string());
        if seq != expected {
            self.violate(
                Invariant::SeqMonotonic,
                &[turn, &g, &s],
                format!("delivered seq {seq} of generation {generation} where {expected} was next"),
            );
        }
        if stopping || stale {
            let why = if stale {
                "a generation other than the active one"
            } else {
                "a turn already cancelled or ended"
            };
            self.violate(
                Invariant::NoLateDelivery,
                &[turn, &g, &s],
                format!("delta seq {seq} of generation {generation} was delivered for {why}"),
            );
        }
    }

    fn on_played(&mut self, turn: &str, generation: Generation) {
        let active = self.active_generation;
        let Some(t) = self.turns.get(turn) else {
            return;
        };
        let late = t.cancelled || matches!(t.terminal, Some(s) if s != Terminal::Completed);
        if late || Some(generation) != active {
            let g = generation.to_string();
            self.violate(
                Invariant::NoLateDelivery,
                &[turn, &g],
                format!("a frame of generation {generation} was played after its turn was stopped or fenced"),
            );
        }
    }

    fn on_child_cancelled(&mut self, turn: &str, child: &str) {
        let Some(c) = self
            .turns
            .get_mut(turn)
            .and_then(|t| t.children.get_mut(child))
        else {
            return;
        };
        let was_effect = matches!(c.state, ChildObs::Effect { .. });
        c.cancelled = true;
        if !was_effect {
            c.state = ChildObs::Resolved;
        }
        let (cancellable, left) = (c.kind.is_cancellable_tool(), c.temporaries);
        if cancellable && (left > 0 || was_effect) {
            self.violate(
                Invariant::CancelledToolLeavesNothing,
                &[turn, child],
                format!(
                    "cancelled tool left {left} temporary outputs and {} committed effects",
                    u8::from(was_effect)
                ),
            );
        }
    }

    fn on_stop_answered(&mut self, turn: &str, request_id: &str, answer: StopAnswer) {
        if self
            .expect
            .stop
            .as_ref()
            .is_some_and(|(t, r)| t == turn && r == request_id)
        {
            self.expect.answered = true;
        }
        let Some(t) = self.turns.get_mut(turn) else {
            return;
        };
        let (was_cancelled, terminal) = (t.cancelled, t.terminal);
        let problem = match (answer, terminal) {
            (StopAnswer::Requested, _) => {
                t.cancel_effects += 1;
                t.cancelled = true;
                (was_cancelled || terminal.is_some()).then(|| {
                    format!(
                        "stop {request_id} caused cancel effect #{} of the turn",
                        t.cancel_effects
                    )
                })
            }
            (StopAnswer::AlreadyTerminal { state }, Some(actual)) if state != actual => {
                Some(format!(
                    "stop {request_id} answered already_terminal {} but the turn ended {}",
                    state.label(),
                    actual.label()
                ))
            }
            (StopAnswer::AlreadyTerminal { .. }, None) => Some(format!(
                "stop {request_id} answered already_terminal for a turn that has not ended"
            )),
            (StopAnswer::AlreadyRequested, Some(actual)) => Some(format!(
                "stop {request_id} answered already_requested for a turn that ended {}",
                actual.label()
            )),
            (StopAnswer::AlreadyRequested, None) if !was_cancelled => Some(format!(
                "stop {request_id} answered already_requested but nothing had cancelled the turn"
            )),
            _ => None,
        };
        if answer != StopAnswer::Requested {
            self.reach(Invariant::IdempotentStop);
        }
        if let Some(message) = problem {
            self.violate(Invariant::IdempotentStop, &[turn, request_id], message);
        }
    }

    fn on_deadline(&mut self, turn: &str) {
        self.reach(Invariant::DeadlineRespected);
        let Some(t) = self.turns.get_mut(turn) else {
            return;
        };
        let twice = t.by_deadline;
        t.by_deadline = true;
        t.cancelled = true;
        if twice {
            self.violate(
                Invariant::DeadlineRespected,
                &[turn],
                "the deadline was reported exceeded twice".to_owned(),
            );
        }
    }

    fn on_resume_refused(&mut self, after_seq: Seq, reason: ResumeRefusal) {
        self.expect.resume_answered = true;
        let last = self.store.len() as Seq;
        let expired = self
            .disconnected_at
            .is_some_and(|d| self.now.saturating_sub(d) > RESUME_TTL_MS);
        let fair = match reason {
            ResumeRefusal::UnknownCursor => after_seq > last,
            ResumeRefusal::Expired => expired,
        };
        if !fair {
            let a = after_seq.to_string();
            self.violate(
                Invariant::ReplayExactlyOnce,
                &[&a],
                format!("resume after seq {after_seq} was refused ({reason:?}) though it could be served"),
            );
        }
    }

    fn on_replayed(&mut self, from: Seq, to: Seq) {
        self.expect.resume_answered = true;
        self.replayed = true;
        self.disconnected_at = None;
        let last = self.store.len() as Seq;
        let Some(after) = self.expect.resume else {
            return;
        };
        let problem = if after > last {
            Some(format!(
                "resume after unknown seq {after} replayed instead of being refused: a silent gap"
            ))
        } else if from != after + 1 || to != last {
            Some(format!(
                "resume after seq {after} replayed {from}..{to}; expected {}..{last}",
                after + 1
            ))
        } else {
            None
        };
        if let Some(message) = problem {
            let (f, t) = (from.to_string(), to.to_string());
            self.violate(Invariant::ReplayExactlyOnce, &[&f, &t], message);
        }
    }

    fn on_rendered(&mut self, turn: &str, text: &str) {
        if self.replayed {
            self.reach(Invariant::ReplayExactlyOnce);
        }
        let persisted: String = self
            .store
            .iter()
            .filter(|(t, _, _)| t == turn)
            .filter_map(|(_, text, _)| text.as_deref())
            .collect();
        if text != persisted {
            self.violate(
                Invariant::ReplayExactlyOnce,
                &[turn],
                format!("the client rendered {text:?} but the store persisted {persisted:?}"),
            );
        }
    }

    fn on_terminal(&mut self, turn: &str, state: Terminal) {
        self.reach(Invariant::OneTerminalState);
        let Some(t) = self.turns.get_mut(turn) else {
            return;
        };
        let first = t.terminal;
        if first.is_none() {
            t.terminal = Some(state);
        }
        let t = &self.turns[turn];
        let pending: Vec<String> = t
            .pending_children()
            .into_iter()
            .map(str::to_owned)
            .collect();
        let stopped_some = t.children.values().any(|c| c.cancelled);
        let by_deadline = t.by_deadline;
        let effects: Vec<(String, String, bool, bool)> = t
            .children
            .iter()
            .filter_map(|(id, c)| match &c.state {
                ChildObs::Effect { key, uncertain } => {
                    Some((id.clone(), key.clone(), *uncertain, c.enqueued))
                }
                _ => None,
            })
            .collect();
        let deadline_passed = t.deadline_at.is_some_and(|d| self.now >= d);
        if let Some(first) = first {
            self.violate(
                Invariant::OneTerminalState,
                &[turn],
                format!(
                    "a second terminal state {} after {}",
                    state.label(),
                    first.label()
                ),
            );
        }
        self.check_drained(turn, state, &pending, stopped_some);
        self.check_deadline_terminal(turn, state, by_deadline, deadline_passed);
        self.check_claim(turn, state, &effects);
    }

    fn check_drained(
        &mut self,
        turn: &str,
        state: Terminal,
        pending: &[String],
        stopped_some: bool,
    ) {
        let cancelled = matches!(state, Terminal::Cancelled | Terminal::Failed { .. });
        if cancelled && stopped_some {
            self.reach(Invariant::CancelTreeDrained);
        }
        for child in pending {
            self.violate(
                Invariant::CancelTreeDrained,
                &[turn, child],
                format!(
                    "the turn ended {} while child {child} was still running",
                    state.label()
                ),
            );
        }
    }

    fn check_deadline_terminal(
        &mut self,
        turn: &str,
        state: Terminal,
        by_deadline: bool,
        passed: bool,
    ) {
        if passed {
            self.reach(Invariant::QuiescentTurnsTerminal);
        }
        let fitting = matches!(state, Terminal::Failed { .. } | Terminal::ReconcileRequired);
        if by_deadline && !fitting {
            self.violate(
                Invariant::DeadlineRespected,
                &[turn],
                format!("the turn ended {} after its deadline fired", state.label()),
            );
        }
    }

    fn check_claim(
        &mut self,
        turn: &str,
        state: Terminal,
        effects: &[(String, String, bool, bool)],
    ) {
        if state == Terminal::ReconcileRequired {
            self.reach(Invariant::NoFalseCancelClaim);
        }
        for (child, key, uncertain, enqueued) in effects {
            let problem = match state {
                Terminal::Cancelled | Terminal::Failed { .. } => Some(format!(
                    "the turn claimed {} after side effect {key} was {}",
                    state.label(),
                    if *uncertain {
                        "possibly committed"
                    } else {
                        "committed"
                    }
                )),
                Terminal::Completed if *uncertain => Some(format!(
                    "the turn claimed COMPLETED with side effect {key} in doubt"
                )),
                Terminal::ReconcileRequired if !enqueued => Some(format!(
                    "the turn ended RECONCILE_REQUIRED without enqueuing {key}"
                )),
                _ => None,
            };
            if let Some(message) = problem {
                self.violate(Invariant::NoFalseCancelClaim, &[turn, child, key], message);
            }
        }
    }

    /// The current input's outputs are all in: check what the input demanded of them.
    fn on_end_step(&mut self) {
        let expect = std::mem::take(&mut self.expect);
        if let Some((turn, request_id)) = &expect.stop {
            if !expect.answered && self.turns.contains_key(turn) {
                self.violate(
                    Invariant::IdempotentStop,
                    &[turn, request_id],
                    format!("stop {request_id} was never answered"),
                );
            }
        }
        if let Some((turn, child, why)) = &expect.spawn {
            if !expect.not_started {
                let (invariant, what) = if why.starts_with("its turn") {
                    (Invariant::CancelTreeDrained, "after the cancel")
                } else {
                    (Invariant::DeadlineRespected, "without the time it needs")
                };
                self.violate(
                    invariant,
                    &[turn, child],
                    format!("child {child} started {what}: {why}"),
                );
            }
        }
        if let Some(seq) = expect.receive_dup {
            if !expect.duplicate_ignored {
                let s = seq.to_string();
                self.violate(
                    Invariant::ReplayExactlyOnce,
                    &[&s],
                    format!("the client took in seq {seq} a second time"),
                );
            }
        }
        if let Some(after) = expect.resume {
            if !expect.resume_answered {
                let a = after.to_string();
                self.violate(
                    Invariant::ReplayExactlyOnce,
                    &[&a],
                    format!("resume after seq {after} was neither replayed nor refused"),
                );
            }
        }
        if let Some(turn) = &expect.accept {
            if let Some(t) = self.turns.get(turn) {
                if !expect.refused {
                    self.active_generation = Some(t.generation);
                }
            }
        }
        self.check_running();
        self.check_deadlines();
        self.step += 1;
    }

    /// Reports a standing condition once per (invariant, subject), not at every step it persists.
    fn violate_once(&mut self, invariant: Invariant, ids: &[&str], message: String) {
        if self.reported.insert((invariant, ids.join(","))) {
            self.violate(invariant, ids, message);
        }
    }

    fn check_running(&mut self) {
        let running: Vec<String> = self
            .turns
            .iter()
            .filter(|(_, t)| !t.stopping())
            .map(|(id, _)| id.clone())
            .collect();
        if running.len() > 1 {
            let ids: Vec<&str> = running.iter().map(String::as_str).collect();
            let message = format!("{} turns are running at once", running.len());
            self.violate_once(Invariant::SingleRunningTurn, &ids, message);
        }
    }

    fn check_deadlines(&mut self) {
        let now = self.now;
        let mut found = Vec::new();
        for (id, t) in &self.turns {
            let Some(deadline) = t.deadline_at.filter(|d| now >= *d) else {
                continue;
            };
            if t.terminal.is_some() {
                continue;
            }
            if !t.cancelled {
                let message = format!(
                    "the turn is still running at {now} ms, past its deadline at {deadline} ms"
                );
                found.push((Invariant::DeadlineRespected, id.clone(), message));
            }
            if t.pending_children().is_empty() {
                let message = format!(
                    "every child is resolved and the deadline ({deadline} ms) has passed, yet the turn has not ended"
                );
                found.push((Invariant::QuiescentTurnsTerminal, id.clone(), message));
            }
        }
        for (invariant, turn, message) in found {
            self.violate_once(invariant, &[&turn], message);
        }
    }

    /// The run is over.
    fn on_finish(&mut self) {
        let now = self.now;
        let mut stuck = Vec::new();
        for (id, t) in &self.turns {
            let quiet = t.terminal.is_none() && t.pending_children().is_empty();
            if quiet && t.deadline_at.is_some_and(|d| now >= d) {
                stuck.push(id.clone());
            }
        }
        for turn in stuck {
            self.violate_once(
                Invariant::QuiescentTurnsTerminal,
                &[&turn],
                "the run ended with the turn quiescent past its deadline but not terminal"
                    .to_owned(),
            );
        }
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
    /// Every turn reaches at most one terminal state and never leaves it.
    one_terminal_state => OneTerminalState;
    /// Per turn at most one cancel effect; every stop is answered; later answers agree with the
    /// terminal state.
    idempotent_stop => IdempotentStop;
    /// Nothing is delivered or played for a generation other than the active one, or for a turn
    /// that is cancel-requested or terminal.
    no_late_delivery => NoLateDelivery;
    /// A turn ends only after every child stopped; a child spawned after the cancel never runs.
    cancel_tree_drained => CancelTreeDrained;
    /// Nothing starts after the deadline (or with less time left than it needs); a turn still
    /// running at its deadline ends `failed{DEADLINE_EXCEEDED}`.
    deadline_respected => DeadlineRespected;
    /// A committed or possibly-committed side effect means the turn ends `reconcile_required`
    /// with the key enqueued (or, for a known commit, `completed`) — never `cancelled`/`failed`.
    no_false_cancel_claim => NoFalseCancelClaim;
    /// A cancelled cancellable tool leaves no temporary output and no committed effect.
    cancelled_tool_leaves_nothing => CancelledToolLeavesNothing;
    /// A replay starts right after the cursor; rendered text equals persisted text, each piece
    /// once, in order.
    replay_exactly_once => ReplayExactlyOnce;
    /// Delivered seqs per (turn, generation) are 1, 2, 3…
    seq_monotonic => SeqMonotonic;
    /// At most one turn per session is running.
    single_running_turn => SingleRunningTurn;
    /// Once every child is resolved and the deadline has passed, the turn is terminal.
    quiescent_turns_terminal => QuiescentTurnsTerminal;
}
