//! The `livekit-agents` dialect of `check`: LiveKit Agents session events (`AgentSession`'s
//! emitted events as `model_dump()` writes them, one object per line, as a session report's
//! `events` holds them), read as the turn machine's inputs and observed outputs under the
//! `livekit-agents` profile.
//!
//! LiveKit's events name no turn: a turn is one agent reply, from the agent's `thinking` to its
//! assistant message (`speech_1`, `speech_2`, … in order). Time is `created_at` (epoch seconds),
//! counted in milliseconds from the log's first event. docs/MAPPING.md ("The livekit-agents
//! dialect") gives each event's reading and the list of event types read and skipped; any other
//! type is an input error at its line.

use std::collections::BTreeMap;

use serde::Deserialize;
use turnfence_model::turn::{
    ChildKind, InputKind, Mode, Output, Terminal, ToolAnswer, TurnMachine,
};
use turnfence_model::Millis;

use crate::trace::conform::Observed;
use crate::trace::{parse_stack_line, Event, InputError, Sessions, StackDialect, StackReader};

/// The output kinds a LiveKit log records completely: each tool call's answer
/// (`function_tools_executed`), and each resume (`agent_false_interruption`).
pub const COMPLETE: &[&str] = &["tool_answered", "playback_resumed"];

/// Event types with no turn semantics: read and skipped.
pub const SKIPPED: &[&str] = &[
    "speech_created",
    "metrics_collected",
    "session_usage_updated",
    "user_transcription_timeout",
    "overlapping_speech",
    "error",
    "debug_message",
];

/// The default session name, when a line names none.
pub const SESSION: &str = "livekit";

/// The keys of a LiveKit event this dialect reads.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Ev {
    #[serde(rename = "type")]
    kind: Option<String>,
    created_at: Option<f64>,
    session: Option<String>,
    new_state: Option<String>,
    old_state: Option<String>,
    is_final: Option<bool>,
    resumed: Option<bool>,
    item: Option<Item>,
    update: Option<Update>,
    function_calls: Vec<Call>,
    function_call_outputs: Vec<CallOutput>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Item {
    role: Option<String>,
    interrupted: Option<bool>,
    #[serde(rename = "type")]
    kind: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Update {
    #[serde(rename = "type")]
    kind: Option<String>,
    call_id: Option<String>,
    status: Option<String>,
    function_call: Option<Call>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Call {
    call_id: Option<String>,
    name: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CallOutput {
    call_id: Option<String>,
    is_error: bool,
}

/// What one session's log showed so far.
#[derive(Debug, Default)]
struct Session {
    /// The log's first `created_at` (seconds): time zero.
    t0: Option<f64>,
    /// Replies so far; the one in progress (not yet ended by its assistant message).
    replies: u64,
    current: Option<String>,
    /// The current reply has spoken (its audio is out).
    spoke: bool,
    /// Tool calls started (with their turn), and how each ended.
    calls: BTreeMap<String, String>,
    ended: BTreeMap<String, ToolAnswer>,
}

/// The dialect: each session's log so far.
#[derive(Default)]
pub struct Livekit {
    sessions: BTreeMap<String, Session>,
    /// The field that names a line's session (`--session-key`), else `session`.
    session_key: Option<String>,
}

impl Livekit {
    /// The dialect reading a line's session from `key` (else `session`).
    pub fn keyed(key: Option<String>) -> Livekit {
        Livekit {
            session_key: key,
            ..Livekit::default()
        }
    }
}

/// The reader of the dialect's logs.
pub type LivekitReader = StackReader<Livekit>;

type Events = Vec<Event<TurnMachine>>;

impl StackDialect<TurnMachine> for Livekit {
    const COMPLETE: &'static [&'static str] = COMPLETE;

    fn line(
        &mut self,
        text: &str,
        line: usize,
        _: &Sessions<TurnMachine>,
    ) -> Result<Events, InputError> {
        let ev: Ev = parse_stack_line(text, line, "a LiveKit event")?;
        let kind = ev
            .kind
            .clone()
            .ok_or_else(|| InputError::at(line, "the event has no `type`"))?;
        let created = ev
            .created_at
            .filter(|t| t.is_finite() && *t >= 0.0)
            .ok_or_else(|| {
                InputError::at(
                    line,
                    "missing `created_at`: the event's time (epoch seconds)",
                )
            })?;
        let session = ev.session.clone().unwrap_or_else(|| SESSION.to_owned());
        let state = self.sessions.entry(session.clone()).or_default();
        let t0 = *state.t0.get_or_insert(created);
        if kind == "close" {
            // The session closes at its time: what fell due by then happened, then it is judged.
            let at = ((created - t0).max(0.0) * 1000.0).round() as Millis;
            self.sessions.remove(&session);
            let tick = turnfence_model::turn::Input::new(at, InputKind::Tick);
            return Ok(vec![
                Event::Input {
                    session: session.clone(),
                    input: tick,
                },
                Event::End { session },
            ]);
        }
        if created < t0 {
            return Err(InputError::at(
                line,
                "`created_at` before the log's first event",
            ));
        }
        let at = ((created - t0) * 1000.0).round() as Millis;
        let x = Line {
            at,
            line,
            session: &session,
            ev: &ev,
        };
        x.translate(&kind, state)
    }
}

struct Line<'a> {
    at: Millis,
    line: usize,
    session: &'a str,
    ev: &'a Ev,
}

impl Line<'_> {
    fn translate(&self, kind: &str, s: &mut Session) -> Result<Events, InputError> {
        let e = self.ev;
        match kind {
            "agent_state_changed" => Ok(self.agent_state(s)),
            "user_state_changed" if e.new_state.as_deref() == Some("speaking") => {
                Ok(vec![self.input(InputKind::SpeechStarted { confidence: 1.0, since: None })])
            }
            "user_state_changed" if e.old_state.as_deref() == Some("speaking") => {
                Ok(vec![self.input(InputKind::SpeechStopped)])
            }
            "user_state_changed" => Ok(Vec::new()),
            "user_input_transcribed" if e.is_final == Some(true) => {
                Ok(vec![self.input(InputKind::Transcribed)])
            }
            "user_input_transcribed" => Ok(Vec::new()),
            "agent_false_interruption" => Ok(self.false_interruption(s)),
            "conversation_item_added" => Ok(self.item_added(s)),
            "tool_execution_updated" => self.tool_update(s),
            "function_tools_executed" => self.tools_executed(s),
            k if SKIPPED.contains(&k) => Ok(Vec::new()),
            k => Err(InputError::at(
                self.line,
                format!("unknown event type {k:?} (not a LiveKit session event this dialect reads or skips; see docs/MAPPING.md)"),
            )),
        }
    }

    fn input(&self, kind: InputKind) -> Event<TurnMachine> {
        Event::Input {
            session: self.session.to_owned(),
            input: turnfence_model::turn::Input::new(self.at, kind),
        }
    }

    fn observed(&self, output: Output) -> Event<TurnMachine> {
        Event::Output {
            session: self.session.to_owned(),
            at: self.at,
            observed: Observed::exact(output),
        }
    }

    /// The agent starts thinking: a new reply (a turn) unless one is in progress; it starts
    /// speaking: the reply's audio is out (one frame for the speaker) — and a reply that speaks
    /// without thinking first (`say()`) begins there.
    fn agent_state(&self, s: &mut Session) -> Events {
        let mut out = Vec::new();
        match self.ev.new_state.as_deref() {
            Some("thinking") if s.current.is_none() => out.push(self.begin_reply(s)),
            Some("speaking") if !s.spoke || s.current.is_none() => {
                if s.current.is_none() {
                    out.push(self.begin_reply(s));
                }
                s.spoke = true;
                out.push(self.input(InputKind::Delta {
                    turn: s.current.clone().unwrap_or_default().into(),
                    generation: s.replies,
                    seq: 1,
                    text: None,
                    frames: 1,
                }));
            }
            _ => {}
        }
        out
    }

    /// The next reply begins: its accept.
    fn begin_reply(&self, s: &mut Session) -> Event<TurnMachine> {
        s.replies += 1;
        let turn = format!("speech_{}", s.replies);
        s.current = Some(turn.clone());
        s.spoke = false;
        self.input(InputKind::Accept {
            turn: turn.into(),
            generation: s.replies,
            mode: Mode::Audio,
            deadline_ms: None,
            budget: None,
            interruptible: true,
        })
    }

    /// `agent_false_interruption{resumed}`: a resumed pause is the output going on — with no
    /// reply in progress, of the last one (the model says whether anything of it was paused).
    fn false_interruption(&self, s: &Session) -> Events {
        let turn = s
            .current
            .clone()
            .unwrap_or_else(|| format!("speech_{}", s.replies));
        match self.ev.resumed {
            Some(true) => vec![self.observed(Output::PlaybackResumed { turn: turn.into() })],
            _ => Vec::new(),
        }
    }

    /// The assistant's message: the reply ended — interrupted (cancelled), or played out (the
    /// model done, its audio played, completed).
    fn item_added(&self, s: &mut Session) -> Events {
        let item = self.ev.item.as_ref();
        let assistant = item.is_some_and(|i| {
            i.role.as_deref() == Some("assistant")
                && i.kind.as_deref().unwrap_or("message") == "message"
        });
        let Some(turn) = s.current.clone().filter(|_| assistant) else {
            return Vec::new();
        };
        s.current = None;
        if item.and_then(|i| i.interrupted) == Some(true) {
            // The speech was interrupted; the reply ends when its tools do (they run to
            // completion), so with a call still unanswered its end is not this line's.
            let pending = s
                .calls
                .iter()
                .any(|(id, t)| *t == turn && !s.ended.contains_key(id));
            if pending {
                return Vec::new();
            }
            return vec![self.observed(Output::Terminal {
                turn: turn.into(),
                state: Terminal::Cancelled,
            })];
        }
        let mut out = Vec::new();
        if s.spoke {
            out.push(self.input(InputKind::FRAME_PLAYED));
        }
        out.push(self.input(InputKind::ModelDone {
            turn: turn.clone().into(),
        }));
        out.push(self.observed(Output::Terminal {
            turn: turn.into(),
            state: Terminal::Completed,
        }));
        out
    }

    /// `tool_execution_updated`: a call started (a tool child of the current reply), or ended
    /// (its one answer).
    fn tool_update(&self, s: &mut Session) -> Result<Events, InputError> {
        let Some(u) = self.ev.update.as_ref() else {
            return Err(InputError::at(
                self.line,
                "tool_execution_updated needs `update`",
            ));
        };
        match u.kind.as_deref() {
            Some("tool_call_started") => {
                let call = u.function_call.as_ref();
                let id = call.and_then(|c| c.call_id.clone());
                let (Some(id), Some(turn)) = (id, s.current.clone()) else {
                    return Err(InputError::at(
                        self.line,
                        "tool_call_started needs a function_call with a call_id, during a reply",
                    ));
                };
                let name = call.and_then(|c| c.name.clone()).unwrap_or_default();
                s.calls.insert(id.clone(), turn.clone());
                Ok(vec![
                    self.input(InputKind::Spawn {
                        turn: turn.clone().into(),
                        child: id.clone().into(),
                        kind: ChildKind::Tool {
                            name,
                            cancellable: true,
                        },
                        need_ms: None,
                    }),
                    self.observed(Output::ChildStarted {
                        turn: turn.into(),
                        child: id.into(),
                    }),
                ])
            }
            Some("tool_call_ended") => {
                let id = u
                    .call_id
                    .clone()
                    .ok_or_else(|| InputError::at(self.line, "tool_call_ended needs `call_id`"))?;
                let how = match u.status.as_deref() {
                    Some("done") => ToolAnswer::Result,
                    Some("error") => ToolAnswer::Error,
                    Some("cancelled") => ToolAnswer::Cancelled,
                    other => {
                        return Err(InputError::at(
                            self.line,
                            format!(
                            "tool_call_ended status {other:?}; expected done, error or cancelled"
                        ),
                        ))
                    }
                };
                Ok(self.end_call(s, &id, how))
            }
            // Progress and deferred replies: no answer, no turn semantics.
            Some("tool_call_updated" | "tool_reply_updated") => Ok(Vec::new()),
            other => Err(InputError::at(
                self.line,
                format!("unknown tool_execution_updated update {other:?}"),
            )),
        }
    }

    /// `function_tools_executed`: the batch's answers, committed to the conversation — a
    /// call's one answer (its end, where no `tool_call_ended` said it, comes with it).
    fn tools_executed(&self, s: &mut Session) -> Result<Events, InputError> {
        let e = self.ev;
        if e.function_calls.len() != e.function_call_outputs.len() {
            return Err(InputError::at(
                self.line,
                "function_tools_executed: function_calls and function_call_outputs differ in length",
            ));
        }
        let mut out = Vec::new();
        for o in &e.function_call_outputs {
            let id = o.call_id.clone().ok_or_else(|| {
                InputError::at(self.line, "a function_call_output needs `call_id`")
            })?;
            let ended = s.ended.get(&id).copied();
            let answer = match (ended, o.is_error) {
                // A cancelled call's output is an error saying so.
                (Some(ToolAnswer::Cancelled), true) => ToolAnswer::Cancelled,
                (_, true) => ToolAnswer::Error,
                (_, false) => ToolAnswer::Result,
            };
            if ended.is_none() {
                out.extend(self.end_call(s, &id, answer));
            }
            let turn = s
                .calls
                .get(&id)
                .cloned()
                .or_else(|| s.current.clone())
                .unwrap_or_default();
            out.push(self.observed(Output::ToolAnswered {
                turn: turn.into(),
                child: id.into(),
                answer,
            }));
        }
        Ok(out)
    }

    /// A call ended (its task's one terminal entry): the child's end, as the model takes it.
    fn end_call(&self, s: &mut Session, id: &str, how: ToolAnswer) -> Events {
        let Some(turn) = s.calls.get(id).cloned() else {
            return Vec::new();
        };
        s.ended.insert(id.to_owned(), how);
        let child = id.to_owned();
        let end = match how {
            ToolAnswer::Result => InputKind::ChildCompleted {
                turn: turn.into(),
                child: child.into(),
            },
            ToolAnswer::Error => InputKind::ChildFailed {
                turn: turn.into(),
                child: child.into(),
            },
            ToolAnswer::Cancelled => InputKind::Checkpoint {
                turn: turn.into(),
                child: child.into(),
                phase: "cancelled".to_owned(),
                temporary_outputs: 0,
            },
        };
        vec![self.input(end)]
    }
}
