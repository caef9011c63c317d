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
//! What a log cannot show is reported not judged: whether a speech allowed interruptions, a tool
//! call's start before `tool_execution_updated` (livekit-agents 1.6.5). docs/MAPPING.md ("The
//! livekit-agents dialect") gives each event's reading; an event type, or a key, it neither
//! reads nor lists is an input error at its line.

mod options;

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::{Map, Value};
use turnfence_model::turn::{
    ChildKind, InputKind, Invariant as TurnInvariant, Mode, Output, Terminal, ToolAnswer,
    TurnMachine,
};
use turnfence_model::Millis;

use crate::trace::conform::Observed;
use crate::trace::turn_facts::{Fact, TurnFact};
use crate::trace::{Event, Finding, InputError, Sessions, StackDialect, StackReader, Verdict};
pub use options::Options;

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

/// The keys of a LiveKit event this dialect reads.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Ev {
    #[serde(rename = "type")]
    kind: Option<String>,
    created_at: Option<f64>,
    new_state: Option<String>,
    old_state: Option<String>,
    is_final: Option<bool>,
    resumed: Option<bool>,
    item: Option<Item>,
    update: Option<Update>,
    function_calls: Vec<Call>,
    /// Before 1.6.5 an output may be `null` (a call without one).
    function_call_outputs: Vec<Option<CallOutput>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Item {
    id: Option<String>,
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

/// The reply in progress.
#[derive(Debug, Default)]
struct Reply {
    id: String,
    /// Its audio is out (the agent spoke).
    spoke: bool,
    /// The agent stopped speaking while the user spoke, the reply not yet ended: LiveKit paused
    /// (or interrupted) it.
    paused: bool,
    /// When a final transcript confirmed its pause an interruption.
    confirmed_at: Option<Millis>,
}

/// The user's speech in progress, as the dialect holds it while the reply it falls on may not
/// have allowed interruptions (the log does not say): when it started (as stated), its line, and
/// whether it is already given to the model.
#[derive(Debug)]
struct Speech {
    /// The detector's start (ms), and the time from which it counts (after AEC warm-up).
    began: Millis,
    counts_from: Millis,
    /// The reply it fell on, speaking, while the speech was held back.
    held_over: Option<String>,
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
    /// The log records LiveKit's speech creation (`speech_created`): a reply begins only where a
    /// speech was created (or tool results were committed, for a reply to them) since the last
    /// one ended, and the agent speaking with neither is the last reply's audio, late.
    records_speeches: bool,
    /// A speech was created, or tool results committed, since the last reply ended.
    may_begin: bool,
    /// The last reply, ended.
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
    /// The options a session report states (its header read), for its events.
    report: Option<Options>,
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

    fn reword(&self, verdict: &mut Verdict) {
        for f in &mut verdict.findings {
            self.reword_finding(f);
        }
    }

    fn meta(&mut self, meta: &Value) -> Result<(), InputError> {
        self.meta = Options::from_meta(meta)?;
        Ok(())
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
            self.report = Some(stated);
            return Ok(Vec::new());
        }
        let stated = self.report.clone();
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
        let created = ev
            .created_at
            .filter(|t| t.is_finite() && *t >= 0.0)
            .ok_or_else(|| {
                InputError::at(
                    line,
                    "missing `created_at`: the event's time (epoch seconds)",
                )
            })?;
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

    /// A finding in LiveKit's words: replies, tool calls and audio, not turns, children,
    /// generations and frames; a finding about an interruption starts its story at the user's
    /// speech it came after, unless it names an earlier line already.
    fn reword_finding(&self, f: &mut Finding) {
        f.message = words(&f.message);
        f.ids.retain(|i| i.parse::<u64>().is_err());
        let interruption = [
            "no_late_delivery",
            "interruption_decided_once",
            "uninterruptible_output_survives",
        ];
        if f.since.is_none() && interruption.contains(&f.name()) {
            f.since = self
                .speech_lines
                .get(&f.session)
                .and_then(|lines| lines.iter().rev().find(|l| **l < f.line).copied());
        }
        for d in &mut f.derived {
            d.message = words(&d.message);
        }
    }
}

/// A model's sentence in LiveKit's words.
fn words(message: &str) -> String {
    if message.starts_with("a frame of generation")
        && message.contains("after its turn was stopped")
    {
        return "audio of the reply played after it was interrupted".to_owned();
    }
    message
        .replace("a frame of turn ", "audio of reply ")
        .replace("turn speech_", "reply speech_")
        .replace("turn=speech_", "reply=speech_")
        .replace("the turn ", "the reply ")
        .replace("child call_", "tool call call_")
        .replace("child=", "tool_call=")
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

impl Session {
    /// The generation of a reply (its number).
    fn replies_of(&self, turn: &str) -> u64 {
        turn.strip_prefix("speech_")
            .and_then(|n| n.parse().ok())
            .unwrap_or(self.replies)
    }
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
            "user_input_transcribed" => Ok(Vec::new()),
            "agent_false_interruption" => Ok(self.false_interruption(s)),
            "conversation_item_added" => Ok(self.item_added(s)),
            "speech_created" => {
                s.records_speeches = true;
                s.may_begin = true;
                Ok(Vec::new())
            }
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

    fn not_judged(
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

    /// The session closes at its time: what fell due by then happened, then it is judged. A
    /// tool call not answered by now never will be: a call its task ended is given its end (the
    /// model answers it; the log never does), and every one is stated unanswered.
    fn close(&self, s: &mut Session) -> Events {
        let mut out = self.release_speech(s);
        out.push(self.input(InputKind::Tick));
        let open: Vec<(String, String)> = s
            .calls
            .iter()
            .filter(|(id, _)| !s.answered.contains(*id))
            .map(|(id, turn)| (id.clone(), turn.clone()))
            .collect();
        for (id, turn) in open {
            if let Some(how) = s.returned.get(&id).copied() {
                if !s.ended.contains_key(&id) {
                    out.extend(self.end_call(s, &id, how));
                }
            }
            out.push(Event::Fact {
                session: self.session.to_owned(),
                at: self.at,
                fact: Fact::Unanswered { turn, child: id },
            });
        }
        out.push(Event::End {
            session: self.session.to_owned(),
        });
        out
    }

    /// The agent starts thinking: a new reply unless one is in progress. It starts speaking: the
    /// reply's audio is out (one frame for the speaker), and a reply that speaks without
    /// thinking first (`say()`) begins there; a paused reply speaking again resumed (its
    /// `agent_false_interruption` says so). It stops speaking while the user speaks: LiveKit
    /// paused or interrupted the reply — the speech held back is given to the model now.
    fn agent_state(&self, s: &mut Session) -> Events {
        let mut out = Vec::new();
        match self.ev.new_state.as_deref() {
            Some("thinking")
                if s.current.is_none()
                    && s.continuing.is_none()
                    && (s.may_begin || !s.records_speeches) =>
            {
                out.push(self.begin_reply(s))
            }
            Some("speaking") => {
                s.first_spoke.get_or_insert(self.at);
                s.continuing = None;
                if s.current.is_none() && s.records_speeches && !s.may_begin {
                    // No speech was created since the last reply ended: this is its audio.
                    return self.late_audio(s);
                }
                if s.current.is_none() {
                    out.push(self.begin_reply(s));
                }
                let Some(reply) = s.current.as_mut() else {
                    return out;
                };
                reply.paused = false;
                if !reply.spoke {
                    reply.spoke = true;
                    let turn = reply.id.clone();
                    out.push(self.input(InputKind::Delta {
                        turn: turn.into(),
                        generation: s.replies,
                        seq: 1,
                        text: None,
                        frames: 1,
                    }));
                }
            }
            Some("listening" | "idle") => {
                s.continuing = None;
                let speaking = s.speech.is_some();
                if let Some(reply) = s.current.as_mut().filter(|r| r.spoke && speaking) {
                    reply.paused = true;
                    let turn = reply.id.clone();
                    out.extend(self.release_speech(s));
                    // A reply that allows no interruption, paused by speech: said, for the
                    // model (which never pauses it) to judge.
                    if !s.options.allow_interruptions {
                        out.push(self.observed(Output::PlaybackPaused { turn: turn.into() }));
                    }
                }
            }
            _ => {}
        }
        out
    }

    /// The agent speaks with no reply in progress and no speech created since the last ended:
    /// the last reply's audio, played after it ended.
    fn late_audio(&self, s: &Session) -> Events {
        let Some(last) = s.last.as_ref() else {
            return Vec::new();
        };
        vec![
            self.input(InputKind::Tick),
            self.observed(Output::Played {
                turn: last.id.clone().into(),
                generation: s.replies_of(&last.id),
                seq: 1,
                frames: 1,
            }),
        ]
    }

    /// The next reply begins: its accept (interruptible as the session's `allow_interruptions`
    /// says: a speech's own is not in the log).
    fn begin_reply(&self, s: &mut Session) -> Event<TurnMachine> {
        s.replies += 1;
        s.may_begin = false;
        let turn = format!("speech_{}", s.replies);
        s.current = Some(Reply {
            id: turn.clone(),
            ..Reply::default()
        });
        self.input(InputKind::Accept {
            turn: turn.into(),
            generation: s.replies,
            mode: Mode::Audio,
            deadline_ms: None,
            budget: None,
            interruptible: s.options.allow_interruptions,
        })
    }

    /// The user starts speaking, dated to the detector's start. Over a reply speaking that the
    /// session lets be interrupted, it is held back until LiveKit shows what it made of it (the
    /// reply's own `allow_interruptions` is not in the log): a pause or an interruption gives it
    /// to the model; its end with neither leaves the reply's interruption unjudged.
    fn speech_started(&self, s: &mut Session) -> Events {
        let began = self.stated.min(self.at);
        let warm = s
            .first_spoke
            .zip(s.options.aec_warmup_ms)
            .map(|(spoke, warmup)| spoke.saturating_add(warmup));
        // During AEC warm-up speech interrupts nothing: it counts from the warm-up's end.
        let min = s.options.interruption.min_ms;
        let counts_from = match warm {
            Some(end) if end > began.saturating_add(min) => end.saturating_sub(min),
            _ => began,
        };
        let over = s
            .current
            .as_ref()
            .filter(|r| r.spoke && !r.paused && s.options.allow_interruptions)
            .map(|r| r.id.clone());
        let held = over.is_some();
        s.speech = Some(Speech {
            began,
            counts_from,
            held_over: over,
        });
        if held {
            return Vec::new();
        }
        vec![self.input(InputKind::SpeechStarted {
            confidence: 1.0,
            since: Some(counts_from),
        })]
    }

    /// The speech held back is given to the model once LiveKit took it for an interruption (it
    /// paused or interrupted the reply, or a transcript came): it counted, from its start.
    fn release_speech(&self, s: &mut Session) -> Events {
        let Some(speech) = s.speech.as_mut().filter(|sp| sp.held_over.is_some()) else {
            return Vec::new();
        };
        speech.held_over = None;
        // LiveKit measured it counted by now; its measure runs up to a detector window behind
        // the start it dates the speech to.
        let min = s.options.interruption.min_ms;
        let lasted = self.at.saturating_sub(speech.began);
        let since = if lasted < min && lasted + DETECTOR_WINDOW_MS >= min {
            self.at.saturating_sub(min)
        } else {
            speech.began
        };
        speech.counts_from = since;
        vec![self.input(InputKind::SpeechStarted {
            confidence: 1.0,
            since: Some(since),
        })]
    }

    /// The user stopped speaking. A speech held back over a reply that LiveKit neither paused
    /// nor interrupted: long enough to count, the reply did not allow interruptions or LiveKit
    /// failed to take one — the log cannot say which, so the reply's interruption is not judged;
    /// too short to count, it is given to the model (which takes it for no interruption).
    fn speech_stopped(&self, s: &mut Session) -> Events {
        let Some(speech) = s.speech.take() else {
            return vec![self.input(InputKind::SpeechStopped)];
        };
        let ended = self.stated.min(self.at);
        let Some(reply) = speech.held_over.clone() else {
            return vec![self.input(InputKind::SpeechStopped)];
        };
        let counted = ended
            >= speech
                .counts_from
                .saturating_add(s.options.interruption.min_ms);
        if !counted {
            return vec![
                self.input(InputKind::SpeechStarted {
                    confidence: 1.0,
                    since: Some(speech.counts_from),
                }),
                self.input(InputKind::SpeechStopped),
            ];
        }
        let needs = format!(
            "whether {reply} allowed interruptions: the user spoke over it for {} ms and it played on, which a speech made with allow_interruptions=False does and an interruptible one must not; LiveKit's log does not say which it was (a session whose replies never allow them states allow_interruptions: false in the meta line's options)",
            ended.saturating_sub(speech.began)
        );
        vec![
            self.not_judged(
                TurnInvariant::InterruptionDecidedOnce,
                vec![reply.clone()],
                needs.clone(),
            ),
            self.not_judged(
                TurnInvariant::UninterruptibleOutputSurvives,
                vec![reply],
                needs,
            ),
        ]
    }

    /// A final transcript: the user's turn is committed, which confirms a paused interruption —
    /// and, over a reply speaking that the user is no longer talking over, interrupts it as
    /// LiveKit does (a committed user turn interrupts the speech in progress): the model has no
    /// turn commit, so this is the speech that counted, then its transcript.
    fn transcribed(&self, s: &mut Session) -> Events {
        let mut out = self.release_speech(s);
        if let Some(reply) = s.current.as_mut().filter(|r| r.paused) {
            reply.confirmed_at.get_or_insert(self.at);
        }
        let speaking = s.current.as_ref().is_some_and(|r| r.spoke && !r.paused);
        if speaking && s.speech.is_none() && s.options.allow_interruptions {
            out.push(self.input(InputKind::SpeechStarted {
                confidence: 1.0,
                since: Some(0),
            }));
            out.push(self.input(InputKind::Transcribed));
            out.push(self.input(InputKind::SpeechStopped));
            return out;
        }
        out.push(self.input(InputKind::Transcribed));
        out
    }

    /// `agent_false_interruption{resumed}`: a resumed pause is the output going on — with no
    /// reply in progress, of the last one. Not resumed while the reply is still paused: the
    /// session says its output stays paused.
    fn false_interruption(&self, s: &Session) -> Events {
        let turn = s
            .current
            .as_ref()
            .map(|r| r.id.clone())
            .unwrap_or_else(|| format!("speech_{}", s.replies));
        match self.ev.resumed {
            Some(true) => vec![self.observed(Output::PlaybackResumed { turn: turn.into() })],
            _ if s.current.as_ref().is_some_and(|r| r.paused) => vec![Event::Fact {
                session: self.session.to_owned(),
                at: self.at,
                fact: Fact::Turn {
                    turn,
                    what: TurnFact::KeptPaused,
                },
            }],
            _ => Vec::new(),
        }
    }

    /// The assistant's message: the reply ended — interrupted (cancelled), or played out (the
    /// model done, its audio played, completed). A reply with a tool call still running ends
    /// when its calls do (they run through an interruption), so its end is not this line's. The
    /// same message committed again is the reply ending again.
    fn item_added(&self, s: &mut Session) -> Events {
        let item = self.ev.item.as_ref();
        let assistant = item.is_some_and(|i| {
            i.role.as_deref() == Some("assistant")
                && i.kind.as_deref().unwrap_or("message") == "message"
        });
        if !assistant {
            return Vec::new();
        }
        let interrupted = item.and_then(|i| i.interrupted) == Some(true);
        let id = item.and_then(|i| i.id.clone());
        let state = if interrupted {
            Terminal::Cancelled
        } else {
            Terminal::Completed
        };
        let again = id.as_ref().and_then(|id| s.messages.get(id)).cloned();
        // With no reply in progress, a message is the last one's, committed again.
        let again = again.or_else(|| {
            s.current
                .is_none()
                .then(|| s.last.as_ref().map(|r| r.id.clone()))
                .flatten()
        });
        if let Some(turn) = again {
            let mut out = vec![self.input(InputKind::Tick)];
            // Its message committed before (perhaps while its tools ran, its end then the
            // calls'): this is its second.
            if s.committed.contains(&turn) {
                out.push(Event::Fact {
                    session: self.session.to_owned(),
                    at: self.at,
                    fact: Fact::Turn {
                        turn: turn.clone(),
                        what: TurnFact::TerminalEvents(2),
                    },
                });
            }
            out.push(self.observed(Output::Terminal {
                turn: turn.into(),
                state,
            }));
            return out;
        }
        let mut out = Vec::new();
        // Interrupted at once by the speech held over it, never paused: what a session without
        // resuming does, and LiveKit's default resumes. Unless the options are stated, the log
        // cannot say which: the reply's interruption is not judged.
        let held_over = s.speech.as_ref().and_then(|sp| sp.held_over.clone());
        let at_once = interrupted
            && !s.options.pause_stated
            && s.options.interruption.pauses()
            && s.current
                .as_ref()
                .is_some_and(|r| !r.paused && held_over.as_ref() == Some(&r.id));
        if let Some(turn) = held_over.filter(|_| at_once) {
            if let Some(sp) = s.speech.as_mut() {
                sp.held_over = None;
            }
            let needs = format!("the session's resume_false_interruption and false_interruption_timeout: {turn} was interrupted at once by speech, as a session without resuming does, where LiveKit's default pauses it (state them in the meta line's options)");
            out.push(self.not_judged(TurnInvariant::InterruptionDecidedOnce, vec![turn], needs));
        } else {
            out.extend(self.release_speech(s));
        }
        let Some(reply) = s.current.take() else {
            return out;
        };
        s.last = Some(Reply {
            id: reply.id.clone(),
            ..Reply::default()
        });
        let turn = reply.id;
        if let Some(id) = id {
            s.messages.insert(id, turn.clone());
        }
        s.committed.insert(turn.clone());
        let pending = s
            .calls
            .iter()
            .any(|(id, t)| *t == turn && !s.ended.contains_key(id));
        if interrupted {
            if !s.options.allow_interruptions && reply.spoke && s.speech.is_some() {
                // Speech cut a reply the session lets nothing interrupt: said as the pause it
                // is (for the model, which never pauses it, to judge), then the reply stopped,
                // so that what follows is judged from where LiveKit went.
                out.push(self.observed(Output::PlaybackPaused {
                    turn: turn.clone().into(),
                }));
                out.push(self.input(InputKind::Stop {
                    turn: turn.clone().into(),
                    request_id: format!("{turn}-cut"),
                }));
            }
            // LiveKit commits an interrupted reply when its playout has ended (the output's
            // playback_finished): committed well after its interruption was confirmed, it
            // played on meanwhile.
            let late = reply
                .confirmed_at
                .is_some_and(|t| self.at > t.saturating_add(PLAYOUT_END_MS));
            if late {
                out.push(self.input(InputKind::Tick));
                out.push(self.observed(Output::Played {
                    turn: turn.clone().into(),
                    generation: s.replies_of(&turn),
                    seq: 1,
                    frames: 1,
                }));
            }
            if !pending {
                // What fell due by now happened (a resume the model owed).
                out.push(self.input(InputKind::Tick));
                out.push(self.observed(Output::Terminal {
                    turn: turn.into(),
                    state,
                }));
            }
            return out;
        }
        // Played out: the audio the model still holds for it, and its model done, where the
        // model has not ended it already (an interruption confirmed before this message).
        let model = self.machine.map(|m| m.session());
        let holds = model.is_none_or(|m| m.playback.holds(&turn));
        let running = model.is_none_or(|m| m.turn(&turn).is_some_and(|t| t.phase.is_running()));
        if reply.spoke && holds {
            out.push(self.input(InputKind::FRAME_PLAYED));
        }
        if running {
            out.push(self.input(InputKind::ModelDone {
                turn: turn.clone().into(),
            }));
        }
        if pending {
            s.continuing = Some(turn.clone());
        }
        if !pending {
            out.push(self.observed(Output::Terminal {
                turn: turn.into(),
                state,
            }));
        }
        out
    }

    /// `tool_execution_updated`: a call started (a tool child of the current reply), or its task
    /// returned (how, kept for its answer).
    fn tool_update(&self, s: &mut Session) -> Result<Events, InputError> {
        let Some(u) = self.ev.update.as_ref() else {
            return Err(InputError::at(
                self.line,
                "tool_execution_updated needs `update`",
            ));
        };
        s.sees_starts = true;
        match u.kind.as_deref() {
            Some("tool_call_started") => {
                let call = u.function_call.as_ref();
                let id = call.and_then(|c| c.call_id.clone());
                let Some(id) = id else {
                    return Err(InputError::at(
                        self.line,
                        "tool_call_started needs a function_call with a call_id",
                    ));
                };
                let name = call.and_then(|c| c.name.clone()).unwrap_or_default();
                Ok(self.start_call(s, &id, name))
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
                // The task returned; the call ends, as the model takes it, with its answer
                // committed (`function_tools_executed`), which may come much later.
                s.returned.entry(id).or_insert(how);
                Ok(Vec::new())
            }
            // Progress and deferred replies: no answer, no turn semantics.
            Some("tool_call_updated" | "tool_reply_updated") => Ok(Vec::new()),
            other => Err(InputError::at(
                self.line,
                format!("unknown tool_execution_updated update {other:?}"),
            )),
        }
    }

    /// A call starts: a tool child of the reply in progress (or of the last one: a tool may
    /// start after its reply's message).
    fn start_call(&self, s: &mut Session, id: &str, name: String) -> Events {
        let turn = s
            .current
            .as_ref()
            .map(|r| r.id.clone())
            .unwrap_or_else(|| format!("speech_{}", s.replies));
        s.calls.insert(id.to_owned(), turn.clone());
        vec![
            self.input(InputKind::Spawn {
                turn: turn.clone().into(),
                child: id.to_owned().into(),
                kind: ChildKind::Tool {
                    name,
                    cancellable: true,
                },
                need_ms: None,
            }),
            self.observed(Output::ChildStarted {
                turn: turn.into(),
                child: id.to_owned().into(),
            }),
        ]
    }

    /// `function_tools_executed`: the batch's answers, committed to the conversation — a
    /// call's one answer (its end, where no `tool_call_ended` said it, comes with it). Where the
    /// version emits no `tool_execution_updated` (before 1.6.5), a call is first seen here: it
    /// started and ended here, and a call never answered cannot be seen (not judged).
    fn tools_executed(&self, s: &mut Session) -> Result<Events, InputError> {
        let e = self.ev;
        if e.function_calls.len() != e.function_call_outputs.len() {
            return Err(InputError::at(
                self.line,
                "function_tools_executed: function_calls and function_call_outputs differ in length",
            ));
        }
        let mut out = Vec::new();
        // A reply to the results may follow, without a speech of its own.
        s.may_begin = true;
        if !s.sees_starts && !s.said_starts {
            s.said_starts = true;
            out.push(self.not_judged(
                TurnInvariant::ToolCallSettled,
                Vec::new(),
                "tool_execution_updated (emitted from livekit-agents 1.6.5) to see a tool call start: a call never answered is not in this log".to_owned(),
            ));
        }
        for (call, o) in e.function_calls.iter().zip(&e.function_call_outputs) {
            // A call without an output (before 1.6.5) is not answered here.
            let Some(o) = o else { continue };
            let id = o.call_id.clone().ok_or_else(|| {
                InputError::at(self.line, "a function_call_output needs `call_id`")
            })?;
            if !s.calls.contains_key(&id) && !s.answered.contains(&id) {
                // First seen at its answer (before 1.6.5 every call is; later, a call LiveKit
                // refused — an unknown tool, bad arguments — is answered without a start): a call
                // of the reply in progress. One whose reply already ended cannot be placed.
                if s.current.is_none() {
                    s.answered.insert(id.clone());
                    out.push(self.not_judged(
                        TurnInvariant::ToolCallSettled,
                        vec![id.clone()],
                        format!("when tool call {id} started (tool_execution_updated, from livekit-agents 1.6.5): it is answered after its reply ended"),
                    ));
                    continue;
                }
                let name = call.name.clone().unwrap_or_default();
                out.extend(self.start_call(s, &id, name));
            }
            let returned = s.returned.get(&id).copied();
            let answer = match (returned, o.is_error) {
                // A cancelled call's output is an error saying so.
                (Some(ToolAnswer::Cancelled), true) => ToolAnswer::Cancelled,
                (_, true) => ToolAnswer::Error,
                (_, false) => ToolAnswer::Result,
            };
            if !s.ended.contains_key(&id) {
                out.extend(self.end_call(s, &id, answer));
            }
            s.answered.insert(id.clone());
            let turn = s.calls.get(&id).cloned().unwrap_or_default();
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
