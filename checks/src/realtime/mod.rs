//! The `openai-realtime` dialect of `check`: a log of OpenAI Realtime API client and server
//! events, one JSON object per line, with the app's playback events where the log has them, read
//! as the turn machine's inputs and observed outputs under the `openai-realtime` profile.
//!
//! A line is an envelope `{"t_ms": N, "dir": "client"|"server"|"app", "event": {"type": …}}` or a
//! bare event with its receipt time, `{"t_ms": N, "type": …, …}`; either may name a `session`
//! (else `realtime`). docs/MAPPING.md ("The openai-realtime dialect") gives each event's
//! reading and the list of event types with no turn semantics, which are read and skipped; any
//! other type is an input error at its line.

use std::collections::{BTreeMap, HashMap};

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use turnfence_model::turn::state::Phase;
use turnfence_model::turn::{
    ChildKind, Generation, InputKind, Mode, Output, RefuseReason, Terminal, TurnId, TurnMachine,
};
use turnfence_model::Millis;

use crate::trace::conform::Observed;
use crate::trace::{parse_stack_line, Event, InputError, Sessions, StackDialect, StackReader};

/// The child each response's model stream is: it ends at the response's `response.done`, so a
/// cancelled response stays active (cancelling) until its done.
pub const STREAM: &str = "stream";

/// The output kinds a realtime log records completely: the client's truncations.
pub const COMPLETE: &[&str] = &["truncated"];

/// Event types with no turn semantics: read and skipped.
pub const SKIPPED: &[&str] = &[
    "rate_limits.updated",
    "session.update",
    "conversation.created",
    "conversation.item.create",
    "conversation.item.created",
    "conversation.item.added",
    "conversation.item.done",
    "conversation.item.retrieve",
    "conversation.item.retrieved",
    "conversation.item.delete",
    "conversation.item.deleted",
    "conversation.item.truncated",
    "conversation.item.input_audio_transcription.delta",
    "conversation.item.input_audio_transcription.completed",
    "conversation.item.input_audio_transcription.failed",
    "conversation.item.input_audio_transcription.segment",
    "input_audio_buffer.append",
    "input_audio_buffer.commit",
    "input_audio_buffer.clear",
    "input_audio_buffer.cleared",
    "input_audio_buffer.committed",
    "input_audio_buffer.speech_stopped",
    "input_audio_buffer.timeout_triggered",
    "input_audio_buffer.dtmf_event_received",
    "output_audio_buffer.clear",
    "output_audio_buffer.started",
    "output_audio_buffer.stopped",
    "response.output_item.added",
    "response.output_item.done",
    "response.content_part.added",
    "response.content_part.done",
    "response.output_audio.done",
    "response.audio.done",
    "response.output_audio_transcript.delta",
    "response.output_audio_transcript.done",
    "response.audio_transcript.delta",
    "response.audio_transcript.done",
    "response.output_text.done",
    "response.text.done",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.mcp_call_arguments.delta",
    "response.mcp_call_arguments.done",
    "response.mcp_call.in_progress",
    "response.mcp_call.completed",
    "response.mcp_call.failed",
    "mcp_list_tools.in_progress",
    "mcp_list_tools.completed",
    "mcp_list_tools.failed",
    "transcription_session.update",
    "transcription_session.updated",
];

/// The default session name, when a line names none.
pub const SESSION: &str = "realtime";

/// A line as the dialect reads it: the envelope's keys and the event's, in one borrowed struct
/// (a bare event has them side by side; an envelope's event is `event`). Keys not listed are
/// the event's own, with no turn semantics, and are not read.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Ev<'a> {
    t_ms: Option<u64>,
    #[serde(borrow)]
    dir: Option<Cow<'a, str>>,
    #[serde(borrow)]
    event: Option<Box<Ev<'a>>>,
    /// The envelope's session name (a string), or a `session.*` event's session (an object).
    #[serde(borrow)]
    session: Option<&'a RawValue>,
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    event_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    response_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    item_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    delta: Option<Cow<'a, str>>,
    audio_ms: Option<u64>,
    audio_end_ms: Option<u64>,
    cleared_ms: Option<u64>,
    #[serde(borrow)]
    response: Option<Resp<'a>>,
    #[serde(borrow)]
    error: Option<ErrorBody<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Resp<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    status: Option<Cow<'a, str>>,
    #[serde(borrow)]
    output_modalities: Option<Vec<Cow<'a, str>>>,
    #[serde(borrow)]
    modalities: Option<Vec<Cow<'a, str>>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ErrorBody<'a> {
    #[serde(borrow)]
    code: Option<Cow<'a, str>>,
    #[serde(borrow)]
    event_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
}

/// A response as the log showed it.
#[derive(Clone, Debug, Default)]
struct Response {
    generation: Generation,
    /// The last delta's seq.
    seq: u64,
    /// Audio bytes received, and the milliseconds they made so far.
    bytes: u64,
    ms: u64,
    /// The app's played position in this response's audio (ms).
    played_ms: u64,
}

/// What one session's log showed so far.
#[derive(Clone, Debug)]
struct Session {
    /// Audio bytes per millisecond (PCM16 at 24 kHz: 48; G.711: 8).
    bytes_per_ms: u64,
    /// VAD cancels the response on speech (`interrupt_response`, on by default).
    vad_interrupts: bool,
    responses: HashMap<String, Response>,
    /// Which response each output item is of.
    items: HashMap<String, String>,
    /// Creates sent and not yet answered (their event ids).
    creates: Vec<String>,
}

impl Default for Session {
    /// PCM16 at 24 kHz and VAD interrupting: the API's defaults, until the session says otherwise.
    fn default() -> Session {
        Session {
            bytes_per_ms: 48,
            vad_interrupts: true,
            responses: HashMap::new(),
            items: HashMap::new(),
            creates: Vec::new(),
        }
    }
}

/// The dialect: each session's log so far.
#[derive(Default)]
pub struct Realtime {
    sessions: BTreeMap<String, Session>,
}

/// The reader of the dialect's logs.
pub type RealtimeReader = StackReader<Realtime>;

type Events = Vec<Event<TurnMachine>>;

impl StackDialect<TurnMachine> for Realtime {
    const COMPLETE: &'static [&'static str] = COMPLETE;

    fn line(
        &mut self,
        text: &str,
        line: usize,
        sessions: &Sessions<TurnMachine>,
    ) -> Result<Events, InputError> {
        let top: Ev = parse_stack_line(text, line, "a realtime line")?;
        let at = top
            .t_ms
            .ok_or_else(|| InputError::at(line, "missing `t_ms`: the line's receipt time"))?;
        if let Some(d) = top.dir.as_deref() {
            if !matches!(d, "client" | "server" | "app") {
                return Err(InputError::at(
                    line,
                    format!("unknown `dir` {d:?}; expected client, server or app"),
                ));
            }
        }
        let enveloped = top.event.is_some();
        // The session a line names (a string); a bare `session.*` event's `session` is its own
        // session object, and the line names none.
        let session = match top.session {
            None => SESSION.to_owned(),
            Some(raw) => match serde_json::from_str::<Cow<str>>(raw.get()) {
                Ok(name) => name.into_owned(),
                Err(_) if !enveloped => SESSION.to_owned(),
                Err(_) => return Err(InputError::at(line, "`session` must be a string")),
            },
        };
        let event = top.event.as_deref().unwrap_or(&top);
        let kind = event
            .kind
            .as_deref()
            .ok_or_else(|| InputError::at(line, "the event has no `type`"))?;
        let machine = sessions.peek(&session).map(|s| s.machine());
        if kind == "session.closed" {
            // The app's end of the session (its connection closed): judged now, and what the
            // reader kept of it goes too.
            self.sessions.remove(&session);
            return Ok(vec![Event::End { session }]);
        }
        if !self.sessions.contains_key(&session) {
            self.sessions.insert(session.clone(), Session::default());
        }
        let state = self
            .sessions
            .get_mut(&session)
            .ok_or_else(|| InputError::at(line, "the session's state was lost"))?;
        let x = Line {
            at,
            line,
            session: &session,
            event,
            machine,
        };
        x.translate(kind, state)
    }
}

/// One line being read: its time, session and event, and the session's machine as it stands.
struct Line<'a> {
    at: Millis,
    line: usize,
    session: &'a str,
    event: &'a Ev<'a>,
    machine: Option<&'a TurnMachine>,
}

impl Line<'_> {
    fn translate(&self, kind: &str, s: &mut Session) -> Result<Events, InputError> {
        match kind {
            "session.created" | "session.updated" => {
                self.session_config(s);
                Ok(Vec::new())
            }
            "response.create" => {
                let id = self.str_or("event_id", || format!("create@{}", self.line));
                s.creates.push(id);
                Ok(Vec::new())
            }
            "response.created" => self.created(s),
            "error" => self.error(s),
            "response.output_audio.delta" | "response.audio.delta" => self.audio_delta(s),
            "response.output_text.delta" | "response.text.delta" => self.text_delta(s),
            "response.done" => self.done(s),
            "response.cancel" => Ok(self.cancel()),
            "input_audio_buffer.speech_started" if s.vad_interrupts => {
                Ok(vec![self.input(InputKind::SpeechStarted { confidence: 1.0, since: None })])
            }
            "input_audio_buffer.speech_started" => Ok(Vec::new()),
            "conversation.item.truncate" => self.truncate(s),
            "playback.played" => self.played(s),
            "playback.cleared" | "output_audio_buffer.cleared" => self.cleared(s),
            k if SKIPPED.contains(&k) => Ok(Vec::new()),
            k => Err(self.error_at(format!(
                "unknown event type {k:?} (not a Realtime event this dialect reads or skips; see docs/MAPPING.md)"
            ))),
        }
    }

    fn error_at(&self, message: impl Into<String>) -> InputError {
        InputError::at(self.line, message)
    }

    fn input(&self, kind: InputKind) -> Event<TurnMachine> {
        Event::Input {
            session: self.session.to_owned(),
            input: turnfence_model::turn::Input::new(self.at, kind),
        }
    }

    fn observed(&self, output: Output, wildcards: &'static [&'static str]) -> Event<TurnMachine> {
        Event::Output {
            session: self.session.to_owned(),
            at: self.at,
            observed: Observed { output, wildcards },
        }
    }

    /// A string field of the event, at a path of keys.
    fn str_at(&self, path: &[&str]) -> Option<&str> {
        let e = self.event;
        let r = e.response.as_ref();
        let x = e.error.as_ref();
        match path {
            ["event_id"] => e.event_id.as_deref(),
            ["response_id"] => e.response_id.as_deref(),
            ["item_id"] => e.item_id.as_deref(),
            ["delta"] => e.delta.as_deref(),
            ["response", "id"] => r.and_then(|r| r.id.as_deref()),
            ["response", "status"] => r.and_then(|r| r.status.as_deref()),
            ["error", "code"] => x.and_then(|x| x.code.as_deref()),
            ["error", "event_id"] => x.and_then(|x| x.event_id.as_deref()),
            ["error", "message"] => x.and_then(|x| x.message.as_deref()),
            _ => None,
        }
    }

    fn str_or(&self, key: &str, fallback: impl FnOnce() -> String) -> String {
        self.str_at(&[key]).map_or_else(fallback, str::to_owned)
    }

    /// A required string field.
    fn need_str(&self, path: &[&str]) -> Result<String, InputError> {
        self.str_at(path)
            .map(str::to_owned)
            .ok_or_else(|| self.error_at(format!("{} needs `{}`", self.kind(), path.join("."))))
    }

    fn kind(&self) -> &str {
        self.event.kind.as_deref().unwrap_or("")
    }

    /// The audio format (bytes per ms) and whether VAD interrupts, from a session object (GA:
    /// `audio.output.format.type`, `audio.input.turn_detection`; beta: `output_audio_format`,
    /// `turn_detection`).
    fn session_config(&self, s: &mut Session) {
        let session: Option<Value> = self
            .event
            .session
            .and_then(|raw| serde_json::from_str(raw.get()).ok());
        let at = |path: &[&str]| -> Option<String> {
            let mut v = session.as_ref()?;
            for k in path {
                v = v.get(*k)?;
            }
            v.as_str().map(str::to_owned)
        };
        let format =
            at(&["audio", "output", "format", "type"]).or_else(|| at(&["output_audio_format"]));
        if let Some(f) = format {
            s.bytes_per_ms = match f.as_str() {
                "audio/pcmu" | "audio/pcma" | "g711_ulaw" | "g711_alaw" => 8,
                _ => 48,
            };
        }
        let session = session.as_ref();
        let detection = session
            .and_then(|v| v.get("audio"))
            .and_then(|v| v.get("input"))
            .and_then(|v| v.get("turn_detection"))
            .or_else(|| session.and_then(|v| v.get("turn_detection")));
        if let Some(d) = detection {
            s.vad_interrupts = !d.is_null()
                && d.get("interrupt_response")
                    .and_then(Value::as_bool)
                    .unwrap_or(true);
        }
    }

    /// The generation a new turn takes: above every one the session used or fenced.
    fn next_generation(&self) -> Generation {
        self.machine.map_or(1, |m| m.session().next_generation())
    }

    /// `response.created`: a response starts (answering the oldest create, if one waits), its
    /// model stream a child of it.
    fn created(&self, s: &mut Session) -> Result<Events, InputError> {
        let id = self.need_str(&["response", "id"])?;
        if !s.creates.is_empty() {
            s.creates.remove(0);
        }
        let modalities = self
            .event
            .response
            .as_ref()
            .and_then(|r| r.output_modalities.as_ref().or(r.modalities.as_ref()));
        let text_only = modalities.is_some_and(|m| !m.iter().any(|x| x == "audio"));
        let generation = self.next_generation();
        s.responses.insert(
            id.clone(),
            Response {
                generation,
                ..Response::default()
            },
        );
        Ok(vec![
            self.input(InputKind::Accept {
                turn: id.clone().into(),
                generation,
                mode: if text_only { Mode::Text } else { Mode::Audio },
                deadline_ms: None,
                budget: None,
                interruptible: true,
            }),
            self.input(InputKind::Spawn {
                turn: id.into(),
                child: STREAM.into(),
                kind: ChildKind::Model,
                need_ms: None,
            }),
        ])
    }

    /// `error`: a create refused beside an active response is that create's turn refused;
    /// other codes have no turn semantics (a cancel with nothing active; a truncation the server
    /// refused, whose claim is judged at its own line).
    fn error(&self, s: &mut Session) -> Result<Events, InputError> {
        let code = self.str_at(&["error", "code"]);
        let message = self.str_at(&["error", "message"]).unwrap_or("");
        let refused = code == Some("conversation_already_has_active_response")
            || (code.is_none() && message.contains("already has an active response"));
        if !refused {
            return Ok(Vec::new());
        }
        let named = self.str_at(&["error", "event_id"]).map(str::to_owned);
        let turn = match named {
            Some(id) => {
                s.creates.retain(|c| *c != id);
                id
            }
            None if !s.creates.is_empty() => s.creates.remove(0),
            None => format!("create@{}", self.line),
        };
        Ok(vec![
            self.input(InputKind::Accept {
                turn: turn.clone().into(),
                generation: self.next_generation(),
                mode: Mode::Audio,
                deadline_ms: None,
                budget: None,
                interruptible: true,
            }),
            self.observed(
                Output::TurnRefused {
                    turn: turn.into(),
                    reason: RefuseReason::ActiveTurnExists,
                },
                &[],
            ),
        ])
    }

    /// The response a delta is of, with its next seq.
    fn next_delta<'s>(&self, s: &'s mut Session) -> Result<(String, &'s mut Response), InputError> {
        let id = self.need_str(&["response_id"])?;
        if let Some(item) = self.str_at(&["item_id"]) {
            s.items.insert(item.to_owned(), id.clone());
        }
        let r = s.responses.get_mut(&id).ok_or_else(|| {
            self.error_at(format!(
                "a delta of response {id:?}, which no response.created began"
            ))
        })?;
        r.seq += 1;
        Ok((id, r))
    }

    /// An audio delta: its milliseconds go to the playback buffer (from `audio_ms` where the
    /// capture states it, else from the base64 `delta`'s length and the session's format).
    fn audio_delta(&self, s: &mut Session) -> Result<Events, InputError> {
        let stated = self.event.audio_ms;
        let bytes = self.str_at(&["delta"]).map(base64_len);
        let bpm = s.bytes_per_ms.max(1);
        let (turn, r) = self.next_delta(s)?;
        let frames = match (stated, bytes) {
            (Some(ms), _) => ms,
            (None, Some(b)) => {
                r.bytes += b;
                let ms = r.bytes / bpm;
                let new = ms - r.ms.min(ms);
                r.ms = ms;
                new
            }
            (None, None) => {
                return Err(self.error_at(
                    "an audio delta needs its `delta` (base64) or the capture's `audio_ms`",
                ))
            }
        };
        let frames = u32::try_from(frames).map_err(|_| self.error_at("`audio_ms` too large"))?;
        Ok(vec![self.input(InputKind::Delta {
            turn: turn.into(),
            generation: r.generation,
            seq: r.seq,
            text: None,
            frames,
        })])
    }

    fn text_delta(&self, s: &mut Session) -> Result<Events, InputError> {
        let text = self.need_str(&["delta"])?;
        let (turn, r) = self.next_delta(s)?;
        Ok(vec![self.input(InputKind::Delta {
            turn: turn.into(),
            generation: r.generation,
            seq: r.seq,
            text: Some(text),
            frames: 0,
        })])
    }

    /// `response.done`: the response's stream ended — finished (`completed`, `incomplete`,
    /// `failed`: the model is done) or stopped (`cancelled`: its stream stops at the done, the
    /// checkpoint that acknowledges the cancel); the terminal state the log shows is held
    /// against the model's.
    fn done(&self, s: &mut Session) -> Result<Events, InputError> {
        let turn = self.need_str(&["response", "id"])?;
        let status = self.need_str(&["response", "status"])?;
        if !s.responses.contains_key(&turn) {
            return Err(self.error_at(format!(
                "response.done for {turn:?}, which no response.created began"
            )));
        }
        let (input, state) = match status.as_str() {
            "completed" | "incomplete" | "failed" => (
                InputKind::ModelDone { turn: turn.clone().into() },
                Terminal::Completed,
            ),
            "cancelled" => (
                InputKind::Checkpoint {
                    turn: turn.clone().into(),
                    child: STREAM.into(),
                    phase: "response.done".to_owned(),
                    temporary_outputs: 0,
                },
                Terminal::Cancelled,
            ),
            other => {
                return Err(self.error_at(format!(
                    "response.done status {other:?}; expected completed, cancelled, incomplete or failed"
                )))
            }
        };
        Ok(vec![
            self.input(input),
            self.observed(
                Output::Terminal {
                    turn: turn.into(),
                    state,
                },
                &[],
            ),
        ])
    }

    /// `response.cancel`: a stop of the response it names, else of the active one; with none
    /// active and none named there is no turn to stop (the server answers
    /// `response_cancel_not_active`).
    fn cancel(&self) -> Events {
        let named = self.str_at(&["response_id"]).map(TurnId::from);
        let active = self.machine.and_then(|m| {
            m.session()
                .turns
                .iter()
                .find(|t| !matches!(t.phase, Phase::Terminal { .. }))
                .map(|t| t.id.clone())
        });
        let Some(turn) = named.or(active) else {
            return Vec::new();
        };
        let request_id = self.str_or("event_id", || format!("cancel@{}", self.line));
        vec![self.input(InputKind::Stop { turn, request_id })]
    }

    /// `conversation.item.truncate`: the item's response truncated to `audio_end_ms` heard.
    fn truncate(&self, s: &mut Session) -> Result<Events, InputError> {
        let item = self.need_str(&["item_id"])?;
        let heard = self
            .event
            .audio_end_ms
            .ok_or_else(|| self.error_at("conversation.item.truncate needs `audio_end_ms`"))?;
        let heard = u32::try_from(heard).map_err(|_| self.error_at("`audio_end_ms` too large"))?;
        // An item no audio delta named: truncated as itself, which no response is.
        let turn = s.items.get(&item).cloned().unwrap_or(item);
        let generation = s.responses.get(&turn).map_or(0, |r| r.generation);
        Ok(vec![self.observed(
            Output::Truncated {
                turn: turn.into(),
                generation,
                heard,
            },
            &[],
        )])
    }

    /// The app's `playback.played`: its player reached `audio_end_ms` into the response's audio
    /// — the speaker consumed what lies between, and played it.
    fn played(&self, s: &mut Session) -> Result<Events, InputError> {
        let turn = self.need_str(&["response_id"])?;
        let position = self
            .event
            .audio_end_ms
            .ok_or_else(|| self.error_at("playback.played needs `audio_end_ms`"))?;
        let r = s.responses.get_mut(&turn).ok_or_else(|| {
            self.error_at(format!(
                "playback of {turn:?}, which no response.created began"
            ))
        })?;
        if position < r.played_ms {
            return Err(self.error_at(format!(
                "the played position went back from {} to {position} ms",
                r.played_ms
            )));
        }
        let frames = position - r.played_ms;
        r.played_ms = position;
        if frames == 0 {
            return Ok(Vec::new());
        }
        let frames = u32::try_from(frames).map_err(|_| self.error_at("position too large"))?;
        let generation = r.generation;
        Ok(vec![
            self.input(InputKind::FramePlayed { frames }),
            self.observed(
                Output::Played {
                    turn: turn.into(),
                    generation,
                    seq: 0,
                    frames,
                },
                &["seq", "frames"],
            ),
        ])
    }

    /// The app's `playback.cleared` (or WebRTC's `output_audio_buffer.cleared`): the response's
    /// queued audio was dropped unplayed (`cleared_ms` of it, where stated).
    fn cleared(&self, _: &mut Session) -> Result<Events, InputError> {
        let turn = self.need_str(&["response_id"])?;
        let stated = self.event.cleared_ms;
        let frames = stated.map_or(0, |ms| u32::try_from(ms).unwrap_or(u32::MAX));
        let wildcards: &'static [&'static str] = if stated.is_some() { &[] } else { &["frames"] };
        Ok(vec![self.observed(
            Output::PlaybackCleared {
                turn: turn.into(),
                frames,
            },
            wildcards,
        )])
    }
}

/// Decoded bytes of a base64 string, from its length.
fn base64_len(s: &str) -> u64 {
    let s = s.trim_end_matches('=');
    (s.len() as u64 * 3) / 4
}
