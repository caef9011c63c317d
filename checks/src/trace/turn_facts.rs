//! What a turn log states beside its events, and how each statement is judged: a count, a
//! remaining time, a position the model predicts. A dialect emits a [`Fact`] for each detail the
//! model can predict; [`judge`] holds it to the model at the line that states it. What a log may
//! state that the model cannot predict is listed, with the reason, in docs/DESIGN.md
//! ("Stated facts").

use turnfence_model::turn::state::{ChildState, Phase, Session, Turn};
use turnfence_model::turn::RESUME_TTL_MS;
use turnfence_model::turn::{Invariant, Mode, Output, StopAnswer, Terminal, TurnMachine};

use super::conform::{History, Judged};
use turnfence_model::said;
use turnfence_model::said::{Gist, Noun, Said};

/// A fact a turn log states.
#[derive(Clone, Debug, PartialEq)]
pub enum Fact {
    /// A fact about one turn.
    Turn { turn: String, what: TurnFact },
    /// A child's side effects that committed; `claims_cancelled` when the line says the child was
    /// cancelled.
    CommittedSideEffects {
        turn: String,
        child: String,
        count: u64,
        claims_cancelled: bool,
    },
    /// The highest seq the client acknowledged.
    LastAckedSeq { seq: u64 },
    /// A cancel aimed at a generation: one that is being stopped.
    CancelTargets { generation: u64 },
    /// The resume window, in ms.
    ResumeTtlMs { ms: u64 },
    /// The session closed with this tool call unanswered (where a stack lets a tool answer until
    /// the session closes, and not after).
    Unanswered { turn: String, child: String },
    /// A function call of `turn` (the response that made or began it) answered or left as the
    /// tool-call rules forbid.
    ToolCall {
        turn: String,
        call: String,
        what: ToolCallFact,
    },
    /// The user's player began to play `turn` (a response outside the turn-taking, which a
    /// stack may make beside the conversation's): heard at once with `other` if `other` had
    /// begun to play and still had audio to play.
    HeardBeside { turn: String, other: String },
    /// The user's player began to play `turn` while `other` (a response outside the
    /// turn-taking), begun, still had `left` ms of audio to play: heard at once.
    HeardOver {
        turn: String,
        other: String,
        left: u64,
    },
}

/// How a function call broke `tool_call_settled`, as the log states it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ToolCallFact {
    /// Answered, though the model never made it (its response was cancelled first).
    AnsweredUnmade,
    /// Answered a second time.
    AnsweredTwice,
}

/// What a turn log states about one turn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TurnFact {
    /// The time left before the turn's deadline, in ms.
    RemainingMs(u64),
    /// How many terminal events the turn has had (a turn ends exactly once).
    TerminalEvents(u64),
    /// How many cancel effects the turn has had (at most one).
    CancelEffects(u64),
    /// The time in ms from the turn's cancel (the stop, barge-in or deadline that began it) to
    /// its end.
    PropagationMs(u64),
    /// Frames a clear removed: at least those the model holds buffered for the turn.
    ClearedFrames(u64),
    /// The seq of the turn's terminal event in the stream store.
    TerminalSeq(u64),
    /// The turn's mode (the kind of its stream).
    Mode(Mode),
    /// The turn's generation.
    Generation(u64),
    /// The turn's delivery stopped (its gate is closed).
    DeliveryStopped(bool),
    /// The system reports the pause of the turn's output a false interruption and the output not
    /// resumed: it stays paused, neither resumed nor interrupted, unless the turn has ended.
    KeptPaused,
}

type Verdict = Option<Judged<TurnMachine>>;

/// Holds `fact`, stated at `at`, to the model as it stands (`s`) and to what happened so far.
pub fn judge(s: &Session, fact: &Fact, at: u64, history: &History<'_, TurnMachine>) -> Verdict {
    match fact {
        Fact::Turn { turn, what } => judge_turn(s, turn, *what, at, history),
        Fact::CommittedSideEffects {
            turn,
            child,
            count,
            claims_cancelled,
        } => committed(s.turn(turn)?, child, *count, *claims_cancelled),
        Fact::LastAckedSeq { seq } => (s.client.acked != *seq).then(|| {
            (
                None,
                Vec::new(),
                Said::from(format!(
                    "the log states last_acked_seq={seq}; the client acknowledged up to {}",
                    s.client.acked
                )),
            )
        }),
        Fact::Unanswered { turn, child } => {
            let answered = history.steps().any(|(_, mut outputs)| {
                outputs.any(|o| {
                    matches!(o, Output::ToolAnswered { turn: t, child: c, .. } if t == turn && c == child)
                })
            });
            (!answered).then(|| {
                (
                    Some(Invariant::ToolCallSettled),
                    vec![turn.clone(), child.clone()],
                    said![
                        "the session closed with ",
                        said::call(child),
                        " never answered: it stays in progress forever"
                    ],
                )
            })
        }
        Fact::ToolCall { turn, call, what } => Some((
            Some(Invariant::ToolCallSettled),
            vec![turn.clone(), call.clone()],
            match what {
                ToolCallFact::AnsweredUnmade => said![
                    said::call(call),
                    " was answered, but the model never made it: its ",
                    Noun::Turn,
                    " was cancelled before the call's arguments were done"
                ],
                ToolCallFact::AnsweredTwice => {
                    said![said::call(call), " was answered a second time"]
                }
            },
        )),
        Fact::HeardBeside { turn, other } => {
            let left = s.playback.frames_of(other);
            let begun = s.turn(other).is_some_and(|t| t.played > 0);
            (left > 0 && begun).then(|| {
                (
                    Some(Invariant::SingleRunningTurn),
                    vec![turn.clone(), other.clone()],
                    said![
                        said::turn(turn),
                        format!(" began to play while {left} frames of "),
                        said::turn(other),
                        " were still to play: two heard at once"
                    ],
                )
            })
        }
        Fact::HeardOver { turn, other, left } => Some((
            Some(Invariant::SingleRunningTurn),
            vec![turn.clone(), other.clone()],
            said![
                said::turn(turn),
                format!(" began to play while {left} ms of "),
                said::turn(other),
                " were still to play: two heard at once"
            ],
        )),
        Fact::CancelTargets { generation } => {
            let t = s.turns.iter().rev().find(|t| t.generation == *generation);
            match t {
                Some(t) if !t.phase.is_running() => None,
                Some(t) => Some(contradicted(
                    &t.id,
                    said![
                        format!("a cancel aimed at generation {generation}, whose "),
                        Noun::Turn,
                        " is still running and was never stopped"
                    ],
                )),
                None => Some((
                    None,
                    Vec::new(),
                    said![
                        format!("a cancel aimed at generation {generation}, which no "),
                        Noun::Turn,
                        " of the session has"
                    ],
                )),
            }
        }
        Fact::ResumeTtlMs { ms } => (*ms != RESUME_TTL_MS).then(|| {
            (
                None,
                Vec::new(),
                Said::from(format!("the log states a resume window of {ms} ms; the model's is {RESUME_TTL_MS} ms, so its expiry verdicts would not be this system's")),
            )
        }),
    }
}

/// Holds `what`, stated about `turn` at `at`, to the model: a contradiction names the turn.
fn judge_turn(
    s: &Session,
    turn: &str,
    what: TurnFact,
    at: u64,
    history: &History<'_, TurnMachine>,
) -> Verdict {
    let message = match what {
        TurnFact::RemainingMs(ms) => {
            let left = s.turn(turn)?.remaining_ms(at)?;
            (left != ms).then(|| {
                said![
                    format!("the log states remaining_ms={ms}; the "),
                    Noun::Turn,
                    format!(" has {left} ms left before its deadline")
                ]
            })
        }
        TurnFact::TerminalEvents(count) => {
            return (count != 1).then(|| {
                (
                    Some(Invariant::OneTerminalState),
                    vec![turn.to_owned()],
                    said![
                        format!("the log states {count} terminal events for the "),
                        Noun::Turn,
                        "; it ends exactly once"
                    ],
                )
            })
        }
        TurnFact::CancelEffects(count) => return cancel_effects(s.turn(turn)?, count),
        TurnFact::KeptPaused => {
            return s.turn(turn)?.phase.is_running().then(|| {
                (
                    Some(Invariant::InterruptionDecidedOnce),
                    vec![turn.to_owned()],
                    said![
                        "the pause of ",
                        said::turn(turn),
                        " is reported a false interruption, and its output not resumed: it stays paused, neither resumed nor interrupted"
                    ],
                )
            })
        }
        TurnFact::PropagationMs(ms) => {
            let since = cancel_began(history, turn)?;
            let took = at.saturating_sub(since);
            (took != ms).then(|| {
                said![
                    format!("the log states propagation_ms={ms}; the "),
                    Noun::Turn,
                    format!("'s cancel began at {since} ms and it ends at {at} ms ({took} ms)")
                ]
            })
        }
        TurnFact::ClearedFrames(frames) => {
            let held = last_cleared(history, turn)?;
            (frames < held).then(|| {
                said![
                    format!("the log clears {frames} frames; {held} were buffered for the "),
                    Noun::Turn,
                    ", so some would still play"
                ]
            })
        }
        TurnFact::TerminalSeq(seq) => {
            let stored = s.store.iter().position(|e| e.turn == turn && e.terminal)? as u64 + 1;
            (stored != seq).then(|| {
                said![
                    format!("the log states terminal_seq={seq}; the store persisted the "),
                    Noun::Turn,
                    format!("'s terminal event as seq {stored}")
                ]
            })
        }
        TurnFact::Mode(mode) => {
            let actual = s.turn(turn)?.mode;
            (actual != mode).then(|| {
                said![
                    format!("the log states the stream is {}; the ", mode_name(mode)),
                    Noun::Turn,
                    format!(" was accepted in {} mode", mode_name(actual))
                ]
            })
        }
        TurnFact::Generation(generation) => {
            let actual = s.turn(turn)?.generation;
            (actual != generation)
                .then(|| said![
                    format!("the log states generation {generation}; the "),
                    Noun::Turn,
                    format!("'s is {actual}")
                ])
        }
        TurnFact::DeliveryStopped(stopped) => {
            let running = s.turn(turn)?.phase.is_running();
            (stopped == running).then(|| {
                let state = if running { "still running" } else { "stopped" };
                said![
                    "the log says the ",
                    Noun::Turn,
                    format!(
                        "'s delivery {}; its delivery is {state}",
                        if stopped { "stopped" } else { "goes on" }
                    )
                ]
            })
        }
    };
    message.map(|m| contradicted(turn, m))
}

fn contradicted(turn: &str, message: Said) -> Judged<TurnMachine> {
    (None, vec![turn.to_owned()], message)
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Text => "text",
        Mode::Audio => "audio",
    }
}

/// How many cancel effects the model counts for the turn: one once anything cancelled it, none
/// while it runs or after it completed; unknown for a turn that ended reconciling (a cancel may
/// or may not have come first).
fn cancel_effects(t: &Turn, count: u64) -> Verdict {
    if count > 1 {
        return Some((
            Some(Invariant::IdempotentStop),
            vec![t.id.to_string()],
            said![
                format!("the log states {count} cancel effects for the "),
                Noun::Turn,
                "; at most one"
            ],
        ));
    }
    let expected = match t.phase {
        Phase::Running => 0,
        Phase::CancelRequested { .. } => 1,
        Phase::Terminal {
            state: Terminal::Cancelled | Terminal::Failed { .. },
        } => 1,
        Phase::Terminal {
            state: Terminal::Completed,
        } => 0,
        Phase::Terminal {
            state: Terminal::ReconcileRequired,
        } => return None,
    };
    (count != expected).then(|| {
        contradicted(
            &t.id,
            format!("the log states {count} cancel effects; the model counts {expected}").into(),
        )
    })
}

/// A child's committed side effects as stated, against what the model knows of its commit.
fn committed(t: &Turn, child: &str, count: u64, claims_cancelled: bool) -> Verdict {
    let c = t.child(child)?;
    let known = match &c.state {
        ChildState::Committed { .. } => 1,
        // Sent, failed or unknown: it may or may not have happened.
        ChildState::CommitSent { .. }
        | ChildState::CommitFailed { .. }
        | ChildState::CommitUnknown { .. } => return None,
        _ => 0,
    };
    if count == known {
        return None;
    }
    let ids = vec![t.id.to_string(), child.to_owned()];
    if claims_cancelled && count > 0 {
        let invariant = if c.kind.is_cancellable_tool() {
            Invariant::CancelledToolLeavesNothing
        } else {
            Invariant::NoFalseCancelClaim
        };
        return Some((
            Some(invariant),
            ids,
            said![
                said::child(child),
                format!(" is logged cancelled with {count} committed side effects")
            ]
            .with_gist(Gist::CancelledResultTaken),
        ));
    }
    Some((
        None,
        ids,
        said![
            format!("the log states {count} committed side effects for "),
            said::child(child),
            format!("; the model knows of {known}")
        ],
    ))
}

/// When the turn's cancel began: the time of the step whose outputs first cancelled it (a stop
/// answered `requested`, a generation fenced, the deadline).
fn cancel_began(history: &History<'_, TurnMachine>, turn: &str) -> Option<u64> {
    history.steps().find_map(|(input, mut outputs)| {
        outputs
            .any(|o| match o {
                Output::StopAnswered {
                    turn: t,
                    answer: StopAnswer::Requested,
                    ..
                }
                | Output::GenerationFenced { turn: t, .. }
                | Output::DeadlineExceeded { turn: t } => t == turn,
                _ => false,
            })
            .then_some(input.at)
    })
}

/// The frames the model's latest clear for the turn removed.
fn last_cleared(history: &History<'_, TurnMachine>, turn: &str) -> Option<u64> {
    history.steps().rev().find_map(|(_, outputs)| {
        outputs.rev().find_map(|o| match o {
            Output::PlaybackCleared { turn: t, frames } if t == turn => Some(u64::from(*frames)),
            _ => None,
        })
    })
}
