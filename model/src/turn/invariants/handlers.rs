//! The monitor's handlers: each input, each output and each end of step, dispatched by kind to the
//! handler of its subject; what the input demanded of its step's outputs; the end of the run.

use super::memory::{ChildObs, ChildSeen, Monitor, StepExpect, StoredSeen, TurnSeen};
use super::Invariant;
use crate::turn::output::*;
use crate::turn::types::*;

impl Monitor {
    /// An input happened.
    pub(super) fn on_input(&mut self, input: &Input) {
        self.now = self.now.max(input.at);
        self.expect = StepExpect::default();
        match &input.kind {
            InputKind::Accept {
                turn,
                generation,
                deadline_ms,
                budget,
                interruptible,
                ..
            } => {
                self.on_accept(turn, *generation, *deadline_ms, *budget);
                self.uninterruptible.remove(turn);
                if !interruptible && self.judges(Invariant::UninterruptibleOutputSurvives) {
                    self.uninterruptible.insert(turn.clone());
                }
            }
            InputKind::Spawn {
                turn,
                child,
                kind,
                need_ms,
                ..
            } => self.on_spawn(turn, child, kind, *need_ms),
            InputKind::ChildCompleted { turn, child } | InputKind::ChildFailed { turn, child } => {
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
                if self.profile.calls_outlive_generation() {
                    if let Some(t) = self.turns.get_mut(turn) {
                        t.generation_done = true;
                    }
                }
                let running =
                    |c: &ChildSeen| c.kind == ChildKind::Model && c.state == ChildObs::Running;
                // The turns are borrowed mutably (and, shared, copied) only where a model child
                // still runs.
                if self
                    .turns
                    .get(turn)
                    .is_some_and(|t| t.children.values().any(running))
                {
                    if let Some(t) = self.turns.get_mut(turn) {
                        for (_, c) in t.children.iter_mut() {
                            if running(c) {
                                c.state = ChildObs::Resolved;
                            }
                        }
                    }
                }
            }
            InputKind::Stop { turn, request_id } => {
                self.expect.stop = Some((turn.clone(), request_id.clone()));
                self.on_stop_named(turn, request_id);
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
                self.on_commit_settled(turn, child, !uncertain);
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
            InputKind::Delta { frames, .. } => self.expect.delta_frames = *frames,
            InputKind::SpeechStarted { .. } => {
                self.on_speech();
                self.on_speech_step(false);
            }
            InputKind::SpeechStopped => self.on_speech_stopped(),
            InputKind::Transcribed => self.on_speech_step(true),
            InputKind::FramePlayed { .. } | InputKind::Tick | InputKind::ClientAck { .. } => {}
        }
    }

    /// An output of the current step happened.
    pub(super) fn on_output(&mut self, output: &Output) {
        self.check_stop_target(output);
        match output {
            Output::TurnRefused { turn, .. } => {
                if self.expect.accept.as_deref() == Some(turn) {
                    self.expect.refused = true;
                    self.turns.remove(turn);
                    self.uninterruptible.remove(turn);
                }
            }
            Output::Delivered {
                turn,
                generation,
                seq,
            } => {
                self.count_delivered(turn);
                self.on_delivered(turn, *generation, *seq)
            }
            Output::Played {
                turn,
                generation,
                seq,
                frames,
            } => {
                self.on_played(turn, *generation, *seq);
                self.check_played_in_pause(turn);
                self.count_played(turn, *frames);
            }
            Output::PlaybackPaused { turn } => self.on_paused(turn),
            Output::PlaybackResumed { turn } => self.on_resumed(turn),
            Output::ToolAnswered {
                turn,
                child,
                answer,
            } => self.on_tool_answered(turn, child, *answer),
            Output::Truncated { turn, heard, .. } => self.on_truncated(turn, *heard),
            Output::LateDropped { reason, .. } => {
                if *reason != DropReason::OutOfOrder {
                    self.reach(Invariant::NoLateDelivery);
                }
            }
            Output::PlaybackCleared { turn, frames } => {
                if *frames > 0 {
                    self.reach(Invariant::NoLateDelivery);
                }
                self.check_uninterruptible(turn, "cleared the output of");
                if *frames > 0 {
                    self.expect.dropped = Some(turn.clone());
                }
                self.count_cleared(turn, *frames);
            }
            Output::ChildCancelRequested { turn, child }
            | Output::CancelDeferred { turn, child, .. } => {
                self.set_child(turn, child, |c| c.cancel_requested = true)
            }
            Output::ChildCancelled { turn, child, .. } => self.on_child_cancelled(turn, child),
            // A stopped child's late report, dropped: nothing happened. What acts on it
            // afterwards (a delivery, a commit) is judged where it happens.
            Output::ReportIgnored { .. } => {}
            Output::TemporaryOutputRemoved { turn, child, count } => {
                self.reach(Invariant::CancelledToolLeavesNothing);
                self.set_child(turn, child, |c| {
                    c.temporaries = c.temporaries.saturating_sub(*count)
                })
            }
            Output::ChildStarted { turn, child } => {
                self.on_child_started(turn, child);
                self.on_call_started(turn, child);
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
            } => {
                if *answer == StopAnswer::Requested {
                    self.pause_decided(turn);
                }
                self.on_stop_answered(turn, request_id, *answer)
            }
            Output::GenerationFenced { turn, generation } => {
                self.check_uninterruptible(turn, "fenced");
                self.pause_decided(turn);
                self.on_fenced(*generation);
                self.moment(turn, super::memory::Moment::Stopped);
                // Never back: speech that fences an older generation (its audio still playing)
                // leaves a newer uninterruptible turn active (`pipecat`).
                let after = generation.saturating_add(1);
                self.active_generation =
                    Some(self.active_generation.map_or(after, |a| a.max(after)));
                if let Some(t) = self.turns.get_mut(turn) {
                    t.cancelled = true;
                }
            }
            Output::DeadlineExceeded { turn } => {
                self.pause_decided(turn);
                self.on_deadline(turn)
            }
            Output::Persisted {
                turn,
                text,
                terminal,
                ..
            } => self.store.push(StoredSeen {
                turn: turn.clone(),
                text: text.clone(),
                terminal: *terminal,
            }),
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
            Output::Terminal { turn, state } => {
                self.pause_decided(turn);
                self.check_calls_answered(turn);
                self.on_terminal(turn, *state)
            }
        }
    }

    /// The current input's outputs are all in: check what the input demanded of them.
    pub(super) fn on_end_step(&mut self) {
        self.check_realtime_step();
        self.check_pause_step();
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
            // Started anyway: judged at the start. Neither refused nor started: the spawn ran
            // all the same, unannounced.
            if !expect.not_started && !expect.started {
                self.spawn_violation(turn, child, *why);
            }
        }
        self.seq_unanswered(expect.receive_dup, expect.duplicate_ignored, |seq| {
            format!("the client took in seq {seq} a second time")
        });
        self.seq_unanswered(expect.resume, expect.resume_answered, |after| {
            format!("resume after seq {after} was neither replayed nor refused")
        });
        if let Some(turn) = &expect.accept {
            if let Some(t) = self.turns.get(turn) {
                if !expect.refused {
                    self.active_generation = Some(t.generation);
                }
            }
        }
        self.check_running();
        self.check_deadlines();
        self.findings.end_step();
    }

    /// A seq the step's input named and its outputs did not answer as they must: replay is not
    /// exactly once, about that seq.
    fn seq_unanswered(
        &mut self,
        seq: Option<Seq>,
        answered: bool,
        why: impl FnOnce(Seq) -> String,
    ) {
        if let Some(seq) = seq.filter(|_| !answered) {
            self.violate(Invariant::ReplayExactlyOnce, &[&seq.to_string()], why(seq));
        }
    }
}
