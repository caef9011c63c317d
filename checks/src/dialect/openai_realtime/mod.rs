//! The `openai-realtime` dialect of `check`: a log of OpenAI Realtime API client and server
//! events, one JSON object per line, with the app's playback events where the log has them, read
//! as the turn machine's inputs and observed outputs under the `openai-realtime` profile.
//!
//! A line is an envelope `{"t_ms": N, "dir": "client"|"server"|"app", "event": {"type": …}}` or a
//! bare event with its receipt time, `{"t_ms": N, "type": …, …}`; either may name a `session`
//! (else `realtime`). docs/MAPPING.md ("The openai-realtime dialect") gives each event's
//! reading and the list of event types with no turn semantics, which are read and skipped; any
//! other type is an input error at its line.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use std::borrow::Cow;
use std::cell::Cell;

use serde::Deserialize;
use serde_json::value::RawValue;
use turnfence_model::said::Vocabulary;
use turnfence_model::turn::{Generation, InputKind, Output, TurnMachine};
use turnfence_model::Millis;

pub mod entry;
pub mod explore;
pub mod gate;
mod playback;
mod responses;
pub mod sample;
mod tools;
mod wording;

use crate::trace::borrowed;
use crate::trace::conform::Observed;
use crate::trace::{
    parse_stack_line, running_where_the_log_stops, Event, InputError, Sessions, StackDialect,
    StackReader,
};

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

/// What an app and the server do at a stop, which follow the cut wherever the app's clear is
/// logged among them; and an audio delta the server had sent before it heard of the stop, which
/// the app received after it (a delta in flight, logged between the app's truncation and its
/// clear): given before the cut, it would make the truncation judged against a position the
/// player had not yet read.
const REACTIONS: &[&str] = &[
    "conversation.item.truncate",
    "response.cancel",
    "response.done",
    "response.output_audio.delta",
];

/// Events the dialect reads for what they name (an item's response, a call made, a player
/// begun), with nothing for the machine.
const BOOKKEEPING: &[&str] = &[
    "response.output_item.added",
    "response.output_item.done",
    "response.function_call_arguments.done",
    "playback.started",
];

/// How long after the app heard server VAD's `speech_started` its player's position still counts
/// as read at the stop: an app reads the position as it stops the player, a moment after the
/// event arrived, and that audio played before the cut (the app's clear).
pub const STOP_WINDOW_MS: Millis = 100;

/// A line as the dialect reads it: the envelope's keys and the event's, in one borrowed struct
/// (a bare event has them side by side; an envelope's event is `event`). Keys not listed are
/// the event's own, with no turn semantics, and are not read.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Ev<'a> {
    t_ms: Option<u64>,
    #[serde(borrow, deserialize_with = "borrowed::text")]
    dir: Option<Cow<'a, str>>,
    #[serde(borrow)]
    event: Option<Box<Ev<'a>>>,
    /// The envelope's session name (a string), or a `session.*` event's session (an object).
    #[serde(borrow)]
    session: Option<&'a RawValue>,
    #[serde(rename = "type", borrow, deserialize_with = "borrowed::text")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "borrowed::text")]
    event_id: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "borrowed::text")]
    response_id: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "borrowed::text")]
    item_id: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "borrowed::text")]
    call_id: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "borrowed::text")]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "borrowed::text")]
    delta: Option<Cow<'a, str>>,
    audio_ms: Option<u64>,
    /// The audio's length in bytes, where a capture keeps it instead of the base64.
    audio_bytes: Option<u64>,
    audio_end_ms: Option<u64>,
    cleared_ms: Option<u64>,
    #[serde(borrow)]
    response: Option<Resp<'a>>,
    #[serde(borrow)]
    error: Option<ErrorBody<'a>>,
    /// An output item (`response.output_item.added`).
    #[serde(borrow)]
    item: Option<Item<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Item<'a> {
    #[serde(borrow, deserialize_with = "borrowed::text")]
    id: Option<Cow<'a, str>>,
    #[serde(rename = "type", borrow, deserialize_with = "borrowed::text")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "borrowed::text")]
    call_id: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "borrowed::text")]
    status: Option<Cow<'a, str>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Resp<'a> {
    #[serde(borrow, deserialize_with = "borrowed::text")]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "borrowed::text")]
    status: Option<Cow<'a, str>>,
    #[serde(borrow)]
    output_modalities: Option<Vec<Cow<'a, str>>>,
    #[serde(borrow)]
    modalities: Option<Vec<Cow<'a, str>>>,
    /// The client's create: `none` for a response outside the conversation (out of band).
    #[serde(borrow, deserialize_with = "borrowed::text")]
    conversation: Option<Cow<'a, str>>,
    /// The server's response: `null` for a response outside the conversation.
    #[serde(borrow)]
    conversation_id: Option<&'a RawValue>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ErrorBody<'a> {
    #[serde(borrow, deserialize_with = "borrowed::text")]
    code: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "borrowed::text")]
    event_id: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "borrowed::text")]
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
    /// Its audio's milliseconds in all, however the deltas state them.
    audio_ms: u64,
    /// Out of band (`conversation: "none"`): it runs beside the conversation's responses and
    /// takes no part in its turns; only its audio heard over another's is judged.
    out_of_band: bool,
    /// Of an out-of-band response: the milliseconds of its audio a player's clear dropped
    /// unplayed (the player drops its whole queue at a clear).
    dropped_ms: u64,
}

/// A function call of the conversation's: the response it is of, whether the model made it
/// (its arguments done; a call its response's cancel cut short never was), and whether the
/// client answered it.
#[derive(Clone, Debug, Default)]
struct Call {
    response: String,
    made: bool,
    answered: bool,
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
    /// Creates sent and not yet answered (their event ids, and whether out of band).
    creates: Vec<(String, bool)>,
    /// The app's player positions (ms into the audio), by item, or by response where the app
    /// names no item.
    positions: HashMap<String, u64>,
    /// The audio received of each output item (ms), as its deltas carried it.
    item_audio: HashMap<String, u64>,
    /// The items (or responses) the player began to play.
    begun: BTreeSet<String>,
    /// The responses whose queued audio a line cleared.
    cleared: BTreeSet<String>,
    /// The app reported its player's positions: truncations can be held to them.
    player: bool,
    /// Function calls, by call id.
    calls: BTreeMap<String, Call>,
    /// When and at which line the app heard server VAD's `speech_started`, held until the app
    /// shows what it did about it (its position read at the stop counts before the cut).
    held: Option<(Millis, usize)>,
    /// What the lines after the held speech made of the stop, given after it.
    reactions: Vec<Event<TurnMachine>>,
    /// The items (or responses) whose position the player read while the speech was held.
    read_at_stop: BTreeSet<String>,
    /// The latest time of the session's lines that made events so far: a held speech given later
    /// is given no earlier (what was read while it waited, a position the player read, is
    /// before it, and the session's clock is past it).
    last_at: Millis,
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
            positions: HashMap::new(),
            item_audio: HashMap::new(),
            begun: BTreeSet::new(),
            cleared: BTreeSet::new(),
            player: false,
            calls: BTreeMap::new(),
            held: None,
            reactions: Vec::new(),
            read_at_stop: BTreeSet::new(),
            last_at: 0,
        }
    }
}

impl Session {
    /// `response` is out of band.
    fn out_of_band(&self, response: &str) -> bool {
        self.responses.get(response).is_some_and(|r| r.out_of_band)
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

    fn words(&self) -> &dyn Vocabulary {
        &wording::Words
    }

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
        let state = self.sessions.entry(session.clone()).or_default();
        let x = Line {
            at,
            line,
            session: &session,
            event,
            machine,
            cut: Cell::new(false),
        };
        // A held speech waits, within the stop's window, for the app's clear: the player's
        // positions read at the stop go before it, the stop's reactions (the client's
        // truncation and cancel, the server's done) after it, and lines without turn semantics
        // are read; any other line, or one past the window, gives it first.
        // The server's WebRTC `output_audio_buffer.cleared` in a session whose app plays the
        // audio itself (its player reports positions): the server's buffer is not what the user
        // hears, and the app's own clear is the cut. The server clears its buffer at the speech
        // or at the response's done, while the app's player stops when the SDK's
        // `audio_interrupted` reaches it through the session's event queue (the
        // `speech_started` branch of `_handle_ws_event` emits it and truncates at the tracker's
        // position, which the app's clear then states), or not at all. Read and skipped.
        if kind == "output_audio_buffer.cleared" && state.player {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        if let Some((held, _)) = state.held {
            let within = at <= held.saturating_add(STOP_WINDOW_MS);
            if within && REACTIONS.contains(&kind) {
                let line = x.line;
                let reaction = x.translate(kind, state)?;
                state
                    .reactions
                    .extend(reaction.into_iter().map(|event| Event::Held {
                        line,
                        event: Box::new(event),
                    }));
                return Ok(Vec::new());
            }
            // The player's position read as the app stops it is one reading of the item; a
            // second one that moved on is the player still playing, after the stop.
            let first_read = kind == "playback.played"
                && event
                    .item_id
                    .as_deref()
                    .or(event.response_id.as_deref())
                    .is_some_and(|key| state.read_at_stop.insert(key.to_owned()));
            let waits = kind == "playback.cleared"
                || within && (first_read || SKIPPED.contains(&kind) || BOOKKEEPING.contains(&kind));
            if !waits {
                out.extend(x.release_speech(state, 0));
            }
        }
        if kind == "session.closed" {
            // The app's end of the session (its connection closed): a call made and never
            // answered never will be; judged now, and what the reader kept of it goes too.
            out.extend(x.unanswered(state));
            out.extend(running_where_the_log_stops(&session, x.machine, |_| {
                "the response's `response.done`: the app closed the session while it runs, and \
                 what the server did after is not in the log"
                    .to_owned()
            }));
            self.sessions.remove(&session);
            out.push(Event::End { session });
            return Ok(out);
        }
        out.extend(x.translate(kind, state)?);
        if !out.is_empty() {
            state.last_at = state.last_at.max(at);
        }
        Ok(out)
    }

    /// The end of the log: a speech still held is given at the last line.
    fn end(&mut self, line: usize, sessions: &Sessions<TurnMachine>) -> Result<Events, InputError> {
        let mut out = Vec::new();
        for (name, state) in &mut self.sessions {
            let Some(machine) = sessions.peek(name).map(|s| s.machine()) else {
                continue;
            };
            let event = Ev::default();
            let x = Line {
                at: machine.session().now,
                line,
                session: name,
                event: &event,
                machine: Some(machine),
                cut: Cell::new(false),
            };
            out.extend(x.release_speech(state, 0));
            out.extend(running_where_the_log_stops(name, Some(machine), |_| {
                "the response's `response.done`: the log ends while it runs, and what the server \
                 did after is not in the log"
                    .to_owned()
            }));
        }
        Ok(out)
    }
}

/// One line being read: its time, session and event, and the session's machine as it stands.
struct Line<'a> {
    at: Millis,
    line: usize,
    session: &'a str,
    event: &'a Ev<'a>,
    machine: Option<&'a TurnMachine>,
    /// A speech given at this line cleared the playback buffer before this line's own events:
    /// the machine as it stood no longer holds it.
    cut: Cell<bool>,
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
                let out_of_band = self.event.response.as_ref().and_then(|r| r.conversation.as_deref())
                    == Some("none");
                s.creates.push((id, out_of_band));
                Ok(Vec::new())
            }
            "response.created" => self.created(s),
            "response.output_item.added" => {
                self.output_item(s);
                Ok(Vec::new())
            }
            "response.output_item.done" => {
                self.call_made(s);
                Ok(Vec::new())
            }
            "error" => self.error(s),
            "response.output_audio.delta" | "response.audio.delta" => self.audio_delta(s),
            "response.output_text.delta" | "response.text.delta" => self.text_delta(s),
            "response.done" => self.done(s),
            "response.cancel" => Ok(self.cancel(s)),
            "response.function_call_arguments.done" => {
                self.call_made(s);
                Ok(Vec::new())
            }
            "conversation.item.create" => self.item_create(s),
            "input_audio_buffer.speech_started" => {
                self.speech_started(s);
                Ok(Vec::new())
            }
            "conversation.item.truncate" => self.truncate(s),
            "playback.started" => self.started(s),
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

    /// The generation a new turn takes: above every one the session used or fenced.
    fn next_generation(&self) -> Generation {
        self.machine.map_or(1, |m| m.session().next_generation())
    }
}
