//! The turn machine for the conformance engine (`impl Conform`): its hidden steps (what a log may
//! leave out that the model can explain), the refusals that are evidence of a broken invariant,
//! and its invariants.

use serde::Deserializer;
use turnfence_model::said;
use turnfence_model::said::{Noun, Said};
use turnfence_model::turn::state::{ChildState, Phase, Session, Turn};
use turnfence_model::turn::{
    ChildKind, Input, InputKind, Invariant, Misuse, NotStartedReason, Output, Terminal, TurnMachine,
};
use turnfence_model::Millis;

use super::canonical::tagged;
use super::conform::{Conform, History, Judged};
use super::turn_facts::{judge, Fact};

impl Conform for TurnMachine {
    type Fact = Fact;

    fn for_profile(profile: turnfence_model::turn::Profile) -> Option<TurnMachine> {
        Some(TurnMachine::with_profile(profile))
    }

    fn input_kind_from_line<'de, D: Deserializer<'de>>(line: D) -> Result<InputKind, D::Error> {
        tagged::input_kind(line)
    }

    fn output_from_line<'de, D: Deserializer<'de>>(line: D) -> Result<Output, D::Error> {
        tagged::output(line)
    }

    fn is_bare(input: &Input) -> bool {
        matches!(
            input.kind,
            InputKind::Tick
                | InputKind::Disconnect
                | InputKind::SpeechStopped
                | InputKind::Transcribed
        )
    }

    fn subject(output: &Output) -> Option<&str> {
        output.turn()
    }

    fn input_subject(input: &Input) -> Option<&str> {
        input.turn()
    }

    /// Hidden inputs that make a refused input acceptable.
    fn explain_input(&self, input: &Input, misuse: &Misuse) -> Vec<Input> {
        let m = self;
        let at = input.at;
        match (misuse, &input.kind) {
            // A child the log first mentions when it reports on it: its start went unlogged.
            (
                Misuse::UnknownChild { turn, child },
                InputKind::ChildCompleted { .. } | InputKind::Checkpoint { .. },
            ) => {
                let kind = kind_from_name(child);
                vec![Input::new(
                    at,
                    InputKind::Spawn {
                        turn: turn.clone(),
                        child: child.clone(),
                        kind,
                        need_ms: None,
                        timeout_ms: None,
                    },
                )]
            }
            // The client received events the log does not show before this one.
            (Misuse::ReceiveGap { got, .. }, InputKind::ClientReceive { .. }) => {
                received_up_to(m.session(), got.saturating_sub(1))
                    .into_iter()
                    .map(|k| Input::new(at, k))
                    .collect()
            }
            _ => Vec::new(),
        }
    }

    /// Hidden inputs that would make the model produce an observed output the log shows without
    /// its cause. The complete list is in docs/DESIGN.md.
    fn explain_output(&self, output: &Output, at: Millis) -> Vec<Input> {
        hidden_before(self.session(), output)
            .into_iter()
            .map(|k| Input::new(at, k))
            .collect()
    }

    /// A turn that neither the model nor the trace ended, and what it waits for.
    fn left_open(&self, shown: &[&Output]) -> Vec<(String, Said)> {
        let s = self.session();
        let ended = |turn: &str| {
            shown
                .iter()
                .any(|o| matches!(o, Output::Terminal { turn: t, .. } if t == turn))
        };
        s.turns
            .iter()
            .filter(|t| !t.phase.is_terminal() && !ended(&t.id))
            .map(|t| (t.id.to_string(), waits_for(s, t)))
            .collect()
    }

    /// Some refusals are evidence of a broken invariant: work from something the model never
    /// let start.
    fn refusal_cause(&self, outputs: &[&Output], misuse: &Misuse) -> Option<(Invariant, Said)> {
        match misuse {
            Misuse::UnknownTurn { turn } if was_refused(outputs, turn) => {
                // Refused beside a turn that was only cancelling: one active turn until it ends.
                let running = self.session().turns.iter().any(|t| t.phase.is_running());
                Some(if running || !self.profile().active_until_terminal() {
                    (
                        Invariant::SingleRunningTurn,
                        said![
                            said::turn(turn),
                            " runs although it was accepted while another ",
                            Noun::Turn,
                            " was running"
                        ],
                    )
                } else {
                    (
                        Invariant::OneActiveResponse,
                        said![
                            said::turn(turn),
                            " runs although it was accepted before the ",
                            Noun::Turn,
                            " before it ended"
                        ],
                    )
                })
            }
            Misuse::ChildNotInState { turn, child, .. } => {
                let reason = outputs.iter().find_map(|o| match o {
                    Output::ToolNotStarted {
                        turn: t,
                        child: c,
                        reason,
                    } if t == turn && c == child => Some(*reason),
                    _ => None,
                })?;
                Some(match reason {
                    NotStartedReason::NoBudget => (
                        Invariant::DeadlineRespected,
                        said![
                            said::child(child),
                            " runs although it had less time left than it needs"
                        ],
                    ),
                    NotStartedReason::TurnCancelled => (
                        Invariant::CancelTreeDrained,
                        said![
                            said::child(child),
                            " runs although it was spawned after the cancel"
                        ],
                    ),
                })
            }
            _ => None,
        }
    }

    /// A detail the log states, held to the model where it is stated.
    fn judge_fact(
        &self,
        fact: &Fact,
        at: Millis,
        history: &History<'_, TurnMachine>,
    ) -> Option<Judged<Self>> {
        judge(self.session(), fact, at, history)
    }

    /// What the model did instead, for the explanation of an unexpected output.
    fn counterpart(outputs: &[&Output], output: &Output) -> String {
        let Output::Delivered { turn, seq, .. } = output else {
            return String::new();
        };
        for o in outputs.iter().rev() {
            if let Output::LateDropped {
                turn: t,
                seq: s,
                reason,
                ..
            } = o
            {
                if t == turn && s == seq {
                    return format!("; its delivery gate dropped seq {seq} ({})", reason.name());
                }
            }
        }
        String::new()
    }
}

fn was_refused(outputs: &[&Output], turn: &str) -> bool {
    outputs
        .iter()
        .any(|o| matches!(o, Output::TurnRefused { turn: t, .. } if t == turn))
}

/// A child's kind from its name, as logs name children.
pub fn kind_from_name(name: &str) -> ChildKind {
    if name.contains("retriev") {
        ChildKind::Retrieval
    } else if name.contains("tts") {
        ChildKind::Tts
    } else if name.contains("model") {
        ChildKind::Model
    } else {
        ChildKind::Tool {
            name: name.to_owned(),
            cancellable: true,
        }
    }
}

/// What must have happened, unlogged, for the session to produce `output` now.
fn hidden_before(s: &Session, output: &Output) -> Vec<InputKind> {
    match output {
        // A resume the log shows: time passed to it, unlogged (the pause's timer fired).
        Output::PlaybackResumed { turn } if s.paused.as_ref().is_some_and(|(p, _)| p == turn) => {
            vec![InputKind::Tick]
        }
        // A child stopped at a checkpoint the log names only in the stop.
        Output::ChildCancelled {
            turn,
            child,
            checkpoint,
        } => {
            let running = s
                .turn(turn)
                .and_then(|t| t.child(child))
                .is_some_and(|c| c.state.is_pending());
            let at_checkpoint = InputKind::Checkpoint {
                turn: turn.clone(),
                child: child.clone(),
                phase: checkpoint.clone(),
                temporary_outputs: 0,
            };
            running.then_some(at_checkpoint).into_iter().collect()
        }
        // A turn completed: its model finished and its audio played out, unlogged. (Never for a
        // cancelled turn: that would hide a child still running.)
        Output::Terminal {
            turn,
            state: Terminal::Completed,
        } => completed_unlogged(s, turn),
        // A delta the log shows only at the gate or in the store.
        Output::LateDropped {
            turn,
            generation,
            seq,
            ..
        } => vec![InputKind::Delta {
            turn: turn.clone(),
            generation: *generation,
            seq: *seq,
            text: None,
            frames: 0,
        }],
        Output::Persisted {
            turn,
            text,
            terminal: false,
            ..
        } => s
            .turn(turn)
            .map(|t| InputKind::Delta {
                turn: turn.clone(),
                generation: t.generation,
                seq: t.last_delivered_seq + 1,
                text: text.clone(),
                frames: 0,
            })
            .into_iter()
            .collect(),
        // A child the log shows started, or refused by the planner: its request went unlogged.
        Output::ChildStarted { turn, child } | Output::ToolNotStarted { turn, child, .. }
            if s.turn(turn).is_some_and(|t| t.child(child).is_none()) =>
        {
            vec![InputKind::Spawn {
                turn: turn.clone(),
                child: child.clone(),
                kind: kind_from_name(child),
                need_ms: None,
                timeout_ms: None,
            }]
        }
        // A frame the log shows played: the speaker consumed the buffer up to it, unlogged. (Never
        // a frame the buffer no longer holds: nothing explains playing it.)
        Output::Played {
            turn,
            generation,
            seq,
            frames,
        } => s
            .playback
            .iter()
            .position(|f| f.turn == *turn && f.generation == *generation && f.seq == *seq)
            .map_or_else(Vec::new, |i| {
                played_up_to(i.saturating_add(*frames as usize) as u64)
            }),
        // The client took in events the log does not show.
        Output::DuplicateIgnored { seq } => {
            let mut hidden = received_up_to(s, *seq);
            hidden.push(InputKind::ClientReceive { seq: *seq });
            hidden
        }
        Output::Rendered { turn, .. } => {
            let end = s
                .store
                .iter()
                .position(|e| e.turn == *turn && e.terminal)
                .map_or(0, |i| i as u64 + 1);
            received_up_to(s, end)
        }
        _ => Vec::new(),
    }
}

/// A turn's model finished and its frames played out, unlogged.
fn completed_unlogged(s: &Session, turn: &str) -> Vec<InputKind> {
    let Some(t) = s.turn(turn) else {
        return Vec::new();
    };
    let mut hidden = Vec::new();
    if !t.model_done {
        hidden.push(InputKind::ModelDone { turn: turn.into() });
    }
    let last = s
        .playback
        .iter()
        .enumerate()
        .filter(|(_, f)| f.turn == *turn)
        .last();
    if let Some((last, _)) = last {
        hidden.extend(played_up_to(last as u64 + 1));
    }
    hidden
}

/// The speaker consumed `n` frames, unlogged: one at a time, as the lab's speaker does.
fn played_up_to(n: u64) -> Vec<InputKind> {
    vec![InputKind::FRAME_PLAYED; n as usize]
}

/// The client received every event after what it has, up to `seq` — none if the store never
/// persisted `seq` (the model would refuse them all; and a seq a log states is no bound on what
/// the checker builds: the store's own size is).
fn received_up_to(s: &Session, seq: u64) -> Vec<InputKind> {
    if seq > s.last_persisted() {
        return Vec::new();
    }
    (s.client.received + 1..=seq)
        .map(|seq| InputKind::ClientReceive { seq })
        .collect()
}

/// What an unfinished turn waits for, as a clause: its state, then each thing it needs.
fn waits_for(s: &Session, t: &Turn) -> Said {
    let state = match t.phase {
        Phase::CancelRequested { cause } => {
            let cause = serde_json::to_value(cause).unwrap_or_default();
            let cause = cause.as_str().unwrap_or("?");
            format!(" cancelled (by {cause}) but never ended")
        }
        _ => " still running".to_owned(),
    };
    let mut needs = Vec::new();
    if t.phase.is_running() && !t.model_done {
        needs.push("the model to finish".to_owned());
    }
    let children: Vec<String> = t
        .children
        .iter()
        .filter(|c| c.state.is_pending())
        .map(|c| match &c.state {
            ChildState::Running if t.phase.is_cancel_requested() => {
                format!("{} to reach a checkpoint", c.id)
            }
            ChildState::Running => format!("{} to finish", c.id),
            _ => format!("{}'s commit to be acknowledged or fail", c.id),
        })
        .collect();
    needs.extend(children);
    let frames = s.playback.iter().filter(|f| f.turn == t.id).count();
    if frames > 0 {
        needs.push(format!("{frames} buffered frames to play"));
    }
    let needs = if needs.is_empty() {
        String::new()
    } else {
        format!(": it waits for {}", needs.join(", "))
    };
    said![said::turn(&t.id), state, needs]
}
