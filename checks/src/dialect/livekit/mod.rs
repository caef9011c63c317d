//! The `livekit-agents` dialect of `check`: LiveKit Agents session events (`AgentSession`'s
//! emitted events as `model_dump(mode="json")` writes them, one object per line; or a whole
//! session report, `SessionReport.to_dict()`, on one line) read as the turn machine's inputs and
//! observed outputs under the `livekit-agents` profile.
//!
//! Read as written: a line's place in the file is when the session knew it, so the session's
//! clock is the latest `created_at` so far; a `created_at` earlier than that is a fact about when
//! something happened (LiveKit dates a user's speech to the voice detector's start), never a step
//! back in time. LiveKit's events name no reply: a reply is one agent speech, from the agent's
//! `thinking` (or `speaking`, for `say()`) to its assistant message (`speech_1`, `speech_2`, …).
//! The session's interruption options are the ones its log states (a report's `options`), else
//! the meta line's `options` (LiveKit's names and units), else LiveKit's defaults.
//! What a log cannot show is reported not judged: whether a speech allowed interruptions (where no
//! `speech_created` states its flag), a tool call's start before `tool_execution_updated`
//! (livekit-agents 1.6.5). docs/MAPPING.md ("The
//! livekit-agents dialect") gives each event's reading; an event type, or a key, it neither
//! reads nor lists is an input error at its line.

pub mod entry;
mod events;
pub mod explore;
mod options;
mod replies;
mod speech;
mod tools;
mod unlogged;
mod wording;

use std::collections::{BTreeMap, BTreeSet};

use events::{Call, Ev};
use serde_json::{Map, Value};
use turnfence_model::said::Vocabulary;
use turnfence_model::turn::{
    ChildKind, InputKind, Invariant as TurnInvariant, Mode, Output, StopAnswer, Terminal,
    ToolAnswer, TurnMachine,
};
use turnfence_model::Millis;

use crate::trace::conform::{Observed, Unlogged};
use crate::trace::turn_facts::{Fact, ToolCallFact, TurnFact};
use crate::trace::{
    running_where_the_log_stops, Event, Finding, InputError, Sessions, StackDialect, StackReader,
};
pub use options::Options;
pub use unlogged::UNLOGGED;

/// The output kinds a LiveKit log records completely: each tool call's answer
/// (`function_tools_executed`), and each resume (`agent_false_interruption`).
pub const COMPLETE: &[&str] = &["tool_answered", "playback_resumed"];

/// Event types with no turn semantics: read and skipped.
pub const SKIPPED: &[&str] = &[
    "metrics_collected",
    "session_usage_updated",
    "user_transcription_timeout",
    "overlapping_speech",
    "eot_prediction",
    "user_turn_exceeded",
    "agent_backchannel_opportunity",
    "error",
    "debug_message",
];

/// The keys an event of a LiveKit session has, over every event type of the versions read
/// (1.x): any other key of a line is an input error, unless it is the session key.
const KEYS: &[&str] = &[
    "type",
    "created_at",
    "old_state",
    "new_state",
    "transcript",
    "is_final",
    "item_id",
    "speaker_id",
    "language",
    "speech_duration",
    "vad_speech_started_at",
    "resumed",
    "message",
    "extra_instructions",
    "metrics",
    "usage",
    "item",
    "function_calls",
    "function_call_outputs",
    "user_initiated",
    "source",
    "speech_handle",
    // A speech's own flag, which `speech_created` does not serialize (its handle is excluded):
    // an app that logs it adds it there (docs/MAPPING.md).
    "allow_interruptions",
    "update",
    "error",
    "reason",
    "agent_ended",
    "detected_at",
    "detection_delay",
    "is_interruption",
    "num_requests",
    "overlap_started_at",
    "prediction_duration",
    "probabilities",
    "probability",
    "speech_input",
    "total_duration",
    "accumulated_transcript",
    "accumulated_word_count",
    "duration",
    "delay",
    "inference_duration",
    "threshold",
    "end_of_turn_probability",
    "end_of_turn_threshold",
];

/// How far LiveKit's measure of a speech may run behind the start it dates the speech to: its
/// voice detector's window and the event loop (speech it took for an interruption that lasted,
/// from its dated start, this much less than `min_interruption_duration` still counted).
const DETECTOR_WINDOW_MS: Millis = 50;

/// How long after an interruption is confirmed LiveKit's output may take to end its playout (the
/// interrupted reply is committed at its `playback_finished`, a few ms after the clear in the
/// corpus); committed later, the reply's audio played on after the interruption.
const PLAYOUT_END_MS: Millis = 250;

/// The key that names a line's session unless `--session-key` names another.
pub const SESSION_KEY: &str = "session";

/// The session's name when a line names none.
pub const SESSION: &str = "livekit";

/// The reply in progress.
#[derive(Clone, Debug, Default)]
struct Reply {
    id: String,
    /// Its generation: its number.
    generation: u64,
    /// Its audio is out (the agent spoke).
    spoke: bool,
    /// When the agent last began speaking it.
    speaking_since: Millis,
    /// The agent stopped speaking while the user spoke, the reply not yet ended: LiveKit paused
    /// (or interrupted) it.
    paused: bool,
    /// When a final transcript confirmed its pause an interruption.
    confirmed_at: Option<Millis>,
    /// Its message says it was interrupted.
    interrupted: bool,
    /// It may be interrupted: its speech's `allow_interruptions` where the log states it (and
    /// the speech it began from is certain), else the session's.
    allows: bool,
    /// Its generation's id, once a call of it names it.
    generation_id: Option<String>,
}

/// The user's speech in progress, as the dialect holds it while the reply it falls on may not
/// have allowed interruptions (the log does not say): when it started (as stated), when it
/// counts from, and the reply it is held back over, until it is given to the model.
#[derive(Debug)]
struct Speech {
    /// The detector's start (ms), and the time from which it counts (after AEC warm-up).
    began: Millis,
    counts_from: Millis,
    /// The reply it fell on, speaking, while the speech was held back.
    held_over: Option<String>,
    /// A transcript with words came during it: LiveKit takes that for an interruption whatever
    /// the speech's length (`on_interim_transcript`, `on_final_transcript` call
    /// `_interrupt_by_audio_activity`, which weighs only the words).
    transcribed: bool,
}

/// What one session's log showed so far.
#[derive(Debug, Default)]
struct Session {
    /// The log's first `created_at` (seconds): time zero.
    t0: Option<f64>,
    /// The session's clock (ms): the latest `created_at` so far; and that `created_at` as written.
    clock: Millis,
    latest: Option<f64>,
    /// The options, as the log or the meta line state them.
    options: Options,
    /// Replies so far; the one in progress.
    replies: u64,
    current: Option<Reply>,
    /// A reply whose message came with its tool calls still running: LiveKit's speech goes on
    /// (the agent thinks again, for the calls' results) until they are answered.
    continuing: Option<String>,
    /// Each assistant message's item id, with its reply; the replies whose message was
    /// committed.
    messages: BTreeMap<String, String>,
    committed: BTreeSet<String>,
    /// Tool calls started (with their reply); how each ended, as its task said
    /// (`tool_call_ended`); those whose end the model was given (with their answer); and those
    /// answered.
    calls: BTreeMap<String, String>,
    returned: BTreeMap<String, ToolAnswer>,
    ended: BTreeMap<String, ToolAnswer>,
    answered: BTreeSet<String>,
    /// The user's speech in progress.
    speech: Option<Speech>,
    /// The words of the user's turn so far, as LiveKit counts them for
    /// `min_interruption_words` (`AudioRecognition._current_transcript`): its final transcripts
    /// since the last user message committed, and the latest interim one after them.
    turn_words: u64,
    interim_words: u64,
    /// LiveKit may have paused the output before the reply's first audio: the user spoke while
    /// a speech was current (or about to be) and none of its audio was out
    /// (`AgentActivity.on_start_of_speech`, `_interrupt_by_audio_activity` while thinking,
    /// `_reconcile_playout_pause`), with no event; its `agent_false_interruption` decides it,
    /// or the reply's end. The agent `speaking` does not lift it: 1.6.4 says so at the output's
    /// first frame (`_on_first_frame`), which a paused output takes too.
    pre_paused: bool,
    /// The agent's state, as the log last said it, is `speaking` (LiveKit pauses a speech
    /// before its audio only while it is not).
    agent_speaking: bool,
    /// The log records LiveKit's speech creation (`speech_created`): a reply begins only where a
    /// speech was created (or tool results were committed, for a reply to them) since the last
    /// one ended, and the agent speaking with neither is the last reply's audio, late.
    records_speeches: bool,
    /// A speech was created, or tool results committed, since the last reply ended.
    may_begin: bool,
    /// When the last speech was created.
    created_when: Option<Millis>,
    /// When an interim transcript with words last came.
    interim_at: Option<Millis>,
    /// When tool results were last committed (`function_tools_executed`).
    executed_when: Option<Millis>,
    /// Speeches created and not yet begun beyond the one `may_begin` counts: LiveKit plays its
    /// queued speeches one by one (`AgentActivity._scheduling_task`), so each begins a reply of
    /// its own when its turn comes.
    queued: u32,
    /// The log states each speech's `allow_interruptions` (on `speech_created`); the flags of the
    /// speeches created and not yet begun, oldest first; and, tool results committed since, the
    /// flag of the reply they answer (a tool reply goes on in its speech, whose flag it keeps:
    /// `_pipeline_reply_task_impl` schedules the same `speech_handle` again).
    states_flags: bool,
    flags: std::collections::VecDeque<Option<bool>>,
    tool_reply_flag: Option<bool>,
    /// The last reply, as it was when it ended.
    last: Option<Reply>,
    /// When the agent first spoke (ms): AEC warm-up runs from there.
    first_spoke: Option<Millis>,
    /// The version emits `tool_execution_updated` (a call's start is seen).
    sees_starts: bool,
    /// Not-judged already reported for tool starts.
    said_starts: bool,
}

/// The dialect: each session's log so far.
#[derive(Default)]
pub struct Livekit {
    sessions: BTreeMap<String, Session>,
    /// The field that names a line's session (`--session-key`), else `session`.
    session_key: Option<String>,
    /// The options and version the meta line states.
    meta: Options,
    /// The options a session report states (its header read), for its events: those split from
    /// its line (the line's number, and the options).
    report: Option<(usize, Options)>,
    /// The lines at which each session's user began to speak: where a story of an agent that
    /// went on speaking starts.
    speech_lines: BTreeMap<String, Vec<usize>>,
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
    const UNLOGGED: &'static [Unlogged<TurnMachine>] = UNLOGGED;

    fn words(&self) -> &dyn Vocabulary {
        &wording::Words
    }

    fn place(&self, f: &mut Finding) {
        self.place_finding(f);
    }

    fn meta(&mut self, meta: &Value) -> Result<(), InputError> {
        self.meta = Options::from_meta(meta)?;
        Ok(())
    }

    /// The end of the log: a session LiveKit never closed (its `close` is not in the log) stops
    /// where the capture did, and a reply still running there is not judged left open.
    fn end(
        &mut self,
        _line: usize,
        sessions: &Sessions<TurnMachine>,
    ) -> Result<Events, InputError> {
        let mut out = Vec::new();
        for name in self.sessions.keys() {
            let machine = sessions.peek(name).map(|c| c.machine());
            out.extend(running_where_the_log_stops(name, machine, |reply| {
                format!(
                    "the session's `close`, or {reply}'s end: the log stops while it runs, and \
                     what LiveKit did after is not in it"
                )
            }));
        }
        Ok(out)
    }

    fn line(
        &mut self,
        text: &str,
        line: usize,
        sessions: &Sessions<TurnMachine>,
    ) -> Result<Events, InputError> {
        let value: Value = crate::trace::parse_stack_line(text, line, "a LiveKit event")?;
        let Value::Object(object) = value else {
            return Err(InputError::at(line, "not a JSON object"));
        };
        if object.contains_key("events") && !object.contains_key("type") {
            // A report's header (its events follow, split off: `split`): its options.
            let stated = Options::from_report(&object, &self.meta)
                .map_err(|e| InputError::at(line, format!("session report: {e}")))?;
            self.report = Some((line, stated));
            return Ok(Vec::new());
        }
        // A report's options are its own events'; a session a later line begins takes the meta
        // line's.
        let stated = self
            .report
            .as_ref()
            .filter(|(at, _)| *at == line)
            .map(|(_, o)| o.clone());
        self.event(object, line, sessions, stated.as_ref())
    }

    /// A session report (`SessionReport.to_dict()` on one line) as its header (the report without
    /// its events) and each of its events.
    fn split(text: &str, line: usize) -> Result<Option<Vec<String>>, InputError> {
        if !text.contains("\"events\"") {
            return Ok(None);
        }
        let value: Value = crate::trace::parse_stack_line(text, line, "a LiveKit event")?;
        let Value::Object(mut report) = value else {
            return Ok(None);
        };
        if report.contains_key("type") {
            return Ok(None);
        }
        let Some(Value::Array(events)) =
            report.insert("events".to_owned(), Value::Array(Vec::new()))
        else {
            return Err(InputError::at(
                line,
                "a session report's `events` is a list",
            ));
        };
        let mut parts = vec![Value::Object(report).to_string()];
        for event in events {
            if !event.is_object() {
                return Err(InputError::at(
                    line,
                    "a session report's event is an object",
                ));
            }
            parts.push(event.to_string());
        }
        Ok(Some(parts))
    }
}

impl Livekit {
    /// One event: its session's, at its time.
    fn event(
        &mut self,
        object: Map<String, Value>,
        line: usize,
        sessions: &Sessions<TurnMachine>,
        stated: Option<&Options>,
    ) -> Result<Events, InputError> {
        let key = self.session_key.as_deref().unwrap_or(SESSION_KEY);
        let session = match object.get(key) {
            None => SESSION.to_owned(),
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            Some(_) => {
                return Err(InputError::at(
                    line,
                    format!("the session key `{key}` is neither a string nor a number"),
                ))
            }
        };
        if let Some(k) = object
            .keys()
            .find(|k| k.as_str() != key && !KEYS.contains(&k.as_str()))
        {
            return Err(InputError::at(
                line,
                format!("unknown key `{k}` (not a field of a LiveKit session event; if it names the session, pass --session-key {k})"),
            ));
        }
        let ev: Ev = serde_json::from_value(Value::Object(object))
            .map_err(|e| InputError::at(line, format!("not a LiveKit event: {e}")))?;
        let kind = ev
            .kind
            .clone()
            .ok_or_else(|| InputError::at(line, "the event has no `type`"))?;
        let created = crate::trace::limits::stated_time(
            ev.created_at,
            1000.0,
            line,
            "created_at",
            "the event's time (epoch seconds)",
        )?;
        let mut out = Vec::new();
        if !self.sessions.contains_key(&session) {
            let options = stated.cloned().unwrap_or_else(|| self.meta.clone());
            let machine = sessions
                .fresh()
                .clone()
                .with_interruption(options.interruption);
            out.push(Event::Begin {
                session: session.clone(),
                machine,
            });
            let state = Session {
                options,
                ..Session::default()
            };
            self.sessions.insert(session.clone(), state);
        }
        let state = self.sessions.get_mut(&session).expect("inserted above");
        let t0 = *state.t0.get_or_insert(created);
        // A time stated earlier than the session's clock is when it happened, not when it was
        // known: the clock stays.
        let stated_at = ((created - t0).max(0.0) * 1000.0).round() as Millis;
        // LiveKit stamps an event when it emits it, but a user's speech when the detector says
        // it began or ended: only that may be dated before the clock.
        let behind = state.latest.is_some_and(|latest| created < latest);
        state.latest = Some(state.latest.map_or(created, |l| l.max(created)));
        if behind && kind != "user_state_changed" {
            return Err(InputError::at(
                line,
                format!(
                    "time went backwards: {kind} at {stated_at} ms after {} ms in session {session:?} (LiveKit dates only user_state_changed before it emits it)",
                    state.clock
                ),
            ));
        }
        state.clock = state.clock.max(stated_at);
        let x = Line {
            at: state.clock,
            stated: stated_at,
            line,
            session: &session,
            ev: &ev,
            machine: sessions.peek(&session).map(|c| c.machine()),
        };
        if kind == "close" {
            out.extend(x.close(state));
            self.sessions.remove(&session);
            return Ok(out);
        }
        if kind == "user_state_changed" && ev.new_state.as_deref() == Some("speaking") {
            self.speech_lines
                .entry(session.clone())
                .or_default()
                .push(line);
        }
        out.extend(x.translate(&kind, state)?);
        Ok(out)
    }
}

struct Line<'a> {
    /// The session's clock at this line, and the time the line states.
    at: Millis,
    stated: Millis,
    line: usize,
    session: &'a str,
    ev: &'a Ev,
    /// The session's machine as it stands before this line (none before its first event).
    machine: Option<&'a TurnMachine>,
}

impl Line<'_> {
    fn translate(&self, kind: &str, s: &mut Session) -> Result<Events, InputError> {
        let e = self.ev;
        match kind {
            "agent_state_changed" => Ok(self.agent_state(s)),
            "user_state_changed" if e.new_state.as_deref() == Some("speaking") => {
                Ok(self.speech_started(s))
            }
            "user_state_changed" if e.old_state.as_deref() == Some("speaking") => {
                Ok(self.speech_stopped(s))
            }
            "user_state_changed" => Ok(Vec::new()),
            "user_input_transcribed" if e.is_final == Some(true) => Ok(self.transcribed(s)),
            "user_input_transcribed" => Ok(self.interim(s)),
            "agent_false_interruption" => Ok(self.false_interruption(s)),
            "conversation_item_added" => Ok(self.item_added(s)),
            "speech_created" => Ok(self.speech_created(s)),
            "tool_execution_updated" => self.tool_update(s),
            "function_tools_executed" => self.tools_executed(s),
            k if SKIPPED.contains(&k) => Ok(Vec::new()),
            k => Err(InputError::at(
                self.line,
                format!("unknown event type {k:?} (not a LiveKit session event this dialect reads or skips; see docs/MAPPING.md)"),
            )),
        }
    }

    pub(super) fn input(&self, kind: InputKind) -> Event<TurnMachine> {
        Event::Input {
            session: self.session.to_owned(),
            input: turnfence_model::turn::Input::new(self.at, kind),
        }
    }

    pub(super) fn observed(&self, output: Output) -> Event<TurnMachine> {
        Event::Output {
            session: self.session.to_owned(),
            at: self.at,
            observed: Observed::exact(output),
        }
    }

    pub(super) fn not_judged(
        &self,
        rule: TurnInvariant,
        ids: Vec<String>,
        needs: String,
    ) -> Event<TurnMachine> {
        use turnfence_model::Invariant as _;
        Event::NotJudged {
            session: self.session.to_owned(),
            rule: rule.name(),
            ids,
            needs,
        }
    }
}
