//! The `pipecat` dialect of `check`: the frames a Pipecat pipeline pushes, as the observer users
//! copy into their pipelines (`interop/pipecat/turnfence_observer.py`) writes them — one object
//! per line, each frame at its first push — read as the turn machine's inputs and observed
//! outputs under the `pipecat` profile.
//!
//! Read as written: a line's `t_ms` is the pipeline clock at the push, and lines come in push
//! order. A reply is one LLM response (`LLMFullResponseStartFrame` to `LLMFullResponseEndFrame`,
//! `response_N`) or one application `TTSSpeakFrame` (`speak_N`); its audio is what the TTS
//! synthesizes for its context (`played: false`), and what the output transport plays
//! (`played: true`) is taken from the head of what was synthesized, as the transport plays it.
//! An `InterruptionFrame` (0.0.84: `StartInterruptionFrame`) is the user's speech interrupting,
//! unless a muting `STTMuteFilter` drops it. Both pinned versions' frame names are read.
//! docs/MAPPING.md ("The pipecat dialect") gives each frame's reading; a frame it neither reads
//! nor lists, or a key it does not know, is an input error at its line.

mod audio;
mod end;
pub mod entry;
pub mod explore;
mod mute;
mod options;
mod tools;
mod wording;

use std::collections::{BTreeMap, VecDeque};

use serde::Deserialize;
use serde_json::Value;
use turnfence_model::said::Vocabulary;
use turnfence_model::turn::{InputKind, Output, TurnMachine};
use turnfence_model::Millis;

use crate::trace::conform::Observed;
use crate::trace::{Event, Finding, InputError, Sessions, StackDialect, StackReader};
pub use options::Options;

/// The output kinds a Pipecat log records completely: each tool call's answer (its
/// `FunctionCallResultFrame` or `FunctionCallCancelFrame`).
pub const COMPLETE: &[&str] = &["tool_answered"];

/// The one session of a log: a pipeline.
pub const SESSION: &str = "pipecat";

/// Frames with no turn semantics of their own: read and skipped. The user's turn frames (the
/// interruption is the frame that acts on the bot), transcripts, and interruption requests (the `InterruptionFrame` they lead to is what
/// acts).
pub const SKIPPED: &[&str] = &[
    "VADUserStartedSpeakingFrame",
    "VADUserStoppedSpeakingFrame",
    "UserStartedSpeakingFrame",
    "UserStoppedSpeakingFrame",
    "TranscriptionFrame",
    "InterimTranscriptionFrame",
    "StopInterruptionFrame",
    "BotInterruptionFrame",
    "InterruptionTaskFrame",
    // Requests too (before 1.0): an aggregator that has a transcript without VAD asks the input
    // transport upstream to emulate the user's speech (`LLMUserContextAggregator`), and the
    // transport answers with the user's turn frames and the `StartInterruptionFrame` that acts
    // (`BaseInputTransport._handle_user_interruption(emulated=True)`).
    "EmulateUserStartedSpeakingFrame",
    "EmulateUserStoppedSpeakingFrame",
];

/// A frame's line: every key the observer writes, over both pinned versions.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Frame {
    t_ms: Option<f64>,
    frame: Option<String>,
    #[allow(dead_code)]
    id: Option<Value>,
    src: Option<String>,
    dst: Option<String>,
    #[allow(dead_code)]
    dir: Option<String>,
    #[allow(dead_code)]
    broadcast: Option<bool>,
    #[serde(default)]
    uninterruptible: bool,
    ms: Option<f64>,
    #[allow(dead_code)]
    sample_rate: Option<u64>,
    #[allow(dead_code)]
    channels: Option<u64>,
    played: Option<bool>,
    context_id: Option<String>,
    #[allow(dead_code)]
    text: Option<String>,
    #[allow(dead_code)]
    #[serde(rename = "final")]
    is_final_transcript: Option<bool>,
    #[allow(dead_code)]
    user_id: Option<Value>,
    #[allow(dead_code)]
    start_secs: Option<f64>,
    #[allow(dead_code)]
    stop_secs: Option<f64>,
    allow_interruptions: Option<bool>,
    #[allow(dead_code)]
    reason: Option<Value>,
    mute: Option<bool>,
    #[serde(default)]
    calls: Vec<Call>,
    tool_call_id: Option<String>,
    function_name: Option<String>,
    cancel_on_interruption: Option<bool>,
    #[allow(dead_code)]
    arguments: Option<Value>,
    #[allow(dead_code)]
    result: Option<Value>,
    #[allow(dead_code)]
    run_llm: Option<bool>,
    is_final: Option<bool>,
    #[allow(dead_code)]
    error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Call {
    tool_call_id: Option<String>,
    function_name: Option<String>,
}

/// A reply: an LLM response or an application's `TTSSpeakFrame`.
#[derive(Debug)]
struct Reply {
    id: String,
    generation: u64,
    /// Speech interrupts it.
    interruptible: bool,
    /// Audio frames synthesized for it so far (its deltas' seq).
    seq: u64,
    /// Given to the model (its accept), and its generation's end.
    accepted: bool,
    done: bool,
    /// An LLM response whose `LLMFullResponseEndFrame` came.
    llm_ended: bool,
    /// An application's `TTSSpeakFrame`.
    speak: bool,
    /// A `TTSSpeakFrame` that came while the LLM streamed a response: it waits in the LLM's
    /// process queue until the response ends (the LLM generates inside its `process_frame`), and
    /// an interruption that reaches the LLM first drops it (`dropped`), but one the frame makes
    /// uninterruptible (`keeps`: 1.x keeps those through `FrameProcessor._start_interruption`).
    held: bool,
    keeps: bool,
    dropped: bool,
    /// The letters and digits of the words given to the TTS for it (`LLMTextFrame`s, a
    /// `TTSSpeakFrame`'s text), and of those the TTS spoke (`TTSTextFrame`s) or dropped (what
    /// it held at an interruption).
    given: usize,
    spoken: usize,
    /// TTS contexts begun for it and not stopped.
    open_contexts: u32,
    /// Its audio played after the model no longer held it: the seq the first such chunk was of
    /// (every later one is the same late audio).
    late_seq: Option<u64>,
}

/// Audio synthesized and not yet played, in the order the output transport plays it.
#[derive(Debug)]
struct Queued {
    reply: usize,
    seq: u64,
    ms: Millis,
}

/// What the log showed so far.
#[derive(Debug, Default)]
pub struct Pipecat {
    options: Options,
    /// The pipeline's clock (ms): the latest `t_ms`.
    clock: Millis,
    /// An `EndFrame` came: the pipeline ends once it has drained, at the log's end.
    end_requested: bool,
    /// A `CancelFrame` came (its time), and whether it has reached every processor.
    cancelled_at: Option<Millis>,
    cancel_reached: bool,
    /// The calls an interruption had asked to stop when the `CancelFrame` reached them.
    stopping_at_cancel: Vec<String>,
    /// The replies the `CancelFrame` stopped: the model holds none of their audio after.
    stopped_by_cancel: Vec<usize>,
    replies: Vec<Reply>,
    /// The LLM response in progress; the last LLM response.
    response: Option<usize>,
    last_response: Option<usize>,
    /// The replies the TTS has still to speak, in the order it takes them up.
    tts_order: VecDeque<usize>,
    /// Each TTS context's reply; the context whose audio comes now (0.0.84 names none).
    contexts: BTreeMap<String, usize>,
    tts: Option<usize>,
    /// Audio synthesized, not yet played; and the audio an interruption should have cleared
    /// (played only where nothing else is left to play: the output did not clear it).
    queue: VecDeque<Queued>,
    cleared: VecDeque<Queued>,
    /// The bot is speaking (between `BotStartedSpeakingFrame` and `BotStoppedSpeakingFrame`).
    speaking: bool,
    /// An interruption's time, while the chunk the output was writing at it has not been logged.
    in_write: Option<Millis>,
    /// When the output logged its last chunk.
    last_chunk_at: Option<Millis>,
    /// A `STTMuteFilter` mutes the user (0.0.84: `STTMuteFrame`).
    filter_muted: bool,
    /// The 1.x user aggregator mutes the user (`UserMuteStartedFrame` to `UserMuteStoppedFrame`).
    user_muted: bool,
    /// After 0.0.84: the `STTMuteFilter` the options state, followed through the frames it reacts
    /// to (it pushes no `STTMuteFrame`); and whether a `STTMuteFrame` came all the same.
    mute_filter: Option<mute::MuteFilter>,
    mute_frames: bool,
    /// Tool calls: each call's reply, and whether it was spawned cancellable.
    calls: BTreeMap<String, (usize, bool)>,
    /// The lines of each interruption: where a story of output that went on starts.
    interruptions: Vec<usize>,
    /// The latest time of an event given so far (`Pipecat::line`): a call's result in the very
    /// millisecond of its timeout is placed before it only while nothing came in that instant
    /// (`Line::call_result`).
    given_up_to: Millis,
}

/// The reader of the dialect's logs.
pub type PipecatReader = StackReader<Pipecat>;

type Events = Vec<Event<TurnMachine>>;

impl StackDialect<TurnMachine> for Pipecat {
    const COMPLETE: &'static [&'static str] = COMPLETE;

    fn meta(&mut self, meta: &Value) -> Result<(), InputError> {
        self.options = Options::from_meta(meta)?;
        self.mute_filter = self
            .options
            .stt_mute
            .clone()
            .filter(|_| self.options.version > (0, 0, 84))
            .map(mute::MuteFilter::new);
        Ok(())
    }

    fn words(&self) -> &dyn Vocabulary {
        &wording::Words
    }

    fn place(&self, f: &mut Finding) {
        self.place_finding(f);
    }

    fn line(
        &mut self,
        text: &str,
        line: usize,
        sessions: &Sessions<TurnMachine>,
    ) -> Result<Events, InputError> {
        let f: Frame = crate::trace::parse_stack_line(text, line, "a Pipecat frame line")?;
        let name = f.frame.clone().ok_or_else(|| {
            InputError::at(line, "the line has no `frame`: the frame's class name")
        })?;
        let t = crate::trace::limits::stated_time(
            f.t_ms,
            1.0,
            line,
            "t_ms",
            "the pipeline clock in ms",
        )?
        .round() as Millis;
        if t < self.clock {
            return Err(InputError::at(
                line,
                format!(
                    "time went backwards: {name} at {t} ms after {} ms (the observer writes frames in push order)",
                    self.clock
                ),
            ));
        }
        self.clock = t;
        if name == "StartFrame" && (self.end_requested || self.cancelled_at.is_some()) {
            return Err(InputError::at(
                line,
                "StartFrame after the pipeline's EndFrame or CancelFrame: one pipeline per log",
            ));
        }
        let machine = sessions.peek(SESSION).map(|c| c.machine());
        let mut out = Vec::new();
        if let Some(cancelled) = self.cancelled_at.filter(|c| t > *c && !self.cancel_reached) {
            out = self.cancel_reached(cancelled, line, machine);
        }
        let x = Line {
            at: t,
            line,
            f: &f,
            machine,
        };
        out.extend(x.translate(&name, self)?);
        let latest = out.iter().filter_map(|e| match e {
            Event::Input { input, .. } => Some(input.at),
            Event::Output { at, .. } | Event::Fact { at, .. } => Some(*at),
            _ => None,
        });
        self.given_up_to = latest.fold(self.given_up_to, Millis::max);
        Ok(out)
    }

    fn end(&mut self, line: usize, sessions: &Sessions<TurnMachine>) -> Result<Events, InputError> {
        Ok(self.pipeline_ended(line, sessions.peek(SESSION).map(|c| c.machine())))
    }
}

impl Pipecat {
    /// A finding as Pipecat tells it: the ids it has (not the model's sequence numbers); a
    /// finding about output that went on after an interruption starts its story at that
    /// interruption, unless it names an earlier line already.
    fn place_finding(&self, f: &mut Finding) {
        f.ids.retain(|i| i.parse::<u64>().is_err());
        // Audio that went on after an interruption: its story starts at the interruption that
        // cut it (a reply whose generation ended before is cut there, not where it ended).
        if f.name() == "no_late_delivery" {
            let cut = self.interruptions.iter().rev().find(|l| **l < f.line);
            if let Some(cut) = cut.filter(|cut| f.since.is_none_or(|s| s < **cut)) {
                f.since = Some(*cut);
            }
        }
    }
}

struct Line<'a> {
    at: Millis,
    line: usize,
    f: &'a Frame,
    /// The session's machine as it stands before this line (none before its first event).
    machine: Option<&'a TurnMachine>,
}

impl Line<'_> {
    fn translate(&self, name: &str, s: &mut Pipecat) -> Result<Events, InputError> {
        let seen = match name {
            "StartFrame" => Some(mute::Seen::Start),
            "FunctionCallInProgressFrame" => Some(mute::Seen::CallInProgress),
            "FunctionCallResultFrame" => Some(mute::Seen::CallResult),
            "BotStartedSpeakingFrame" => Some(mute::Seen::BotStarted),
            "BotStoppedSpeakingFrame" => Some(mute::Seen::BotStopped),
            _ => None,
        };
        let out = self.translate_frame(name, s)?;
        // The filter passes the frame on, then decides on its new state.
        if let Some((filter, seen)) = s.mute_filter.as_mut().zip(seen) {
            filter.saw(seen);
        }
        Ok(out)
    }

    fn translate_frame(&self, name: &str, s: &mut Pipecat) -> Result<Events, InputError> {
        match name {
            "StartFrame" => {
                // Before 1.0 the StartFrame states the pipeline's allow_interruptions.
                if let Some(allow) = self.f.allow_interruptions {
                    s.options.allow_interruptions = allow;
                }
                Ok(Vec::new())
            }
            // An `EndFrame` is a control frame each processor handles after the frames it
            // already holds: what they push behind it is read as any frame is, and the session
            // ends with the log (`Pipecat::pipeline_ended`).
            "EndFrame" => {
                s.end_requested = true;
                Ok(Vec::new())
            }
            // A `CancelFrame` is a system frame that overtakes what processors hold; those it
            // has not reached yet still push in the same instant (`Pipecat::cancel_reached`).
            "CancelFrame" => {
                s.cancelled_at.get_or_insert(self.at);
                // Audio played after it starts its story here, as after an interruption.
                s.interruptions.push(self.line);
                Ok(Vec::new())
            }
            "InterruptionFrame" | "StartInterruptionFrame" => Ok(self.interruption(s)),
            "STTMuteFrame" => {
                s.filter_muted = self.f.mute.ok_or_else(|| self.error("STTMuteFrame needs `mute`"))?;
                s.mute_frames = true;
                Ok(Vec::new())
            }
            // The 1.x aggregator drops the muted user's frames itself: none reaches the log's
            // interruption but one injected upstream of it (`Line::interruption`).
            "UserMuteStartedFrame" | "UserMuteStoppedFrame" => {
                s.user_muted = name == "UserMuteStartedFrame";
                Ok(Vec::new())
            }
            "LLMFullResponseStartFrame" => Ok(self.response_started(s)),
            "LLMFullResponseEndFrame" => Ok(self.response_ended(s)),
            "LLMTextFrame" => Ok(self.llm_text(s)),
            "TTSTextFrame" => Ok(self.tts_text(s)),
            "TTSSpeakFrame" => Ok(self.speak(s)),
            "TTSStartedFrame" => Ok(self.tts_started(s)),
            "TTSStoppedFrame" => Ok(self.tts_stopped(s)),
            "TTSAudioRawFrame" => self.audio(s),
            "BotStartedSpeakingFrame" => {
                s.speaking = true;
                Ok(Vec::new())
            }
            "BotStoppedSpeakingFrame" => {
                s.speaking = false;
                Ok(Vec::new())
            }
            "FunctionCallsStartedFrame" => self.calls_started(s),
            "FunctionCallInProgressFrame" => self.call_in_progress(s),
            "FunctionCallResultFrame" => self.call_result(s),
            "FunctionCallCancelFrame" => self.call_cancelled(s),
            k if SKIPPED.contains(&k) => Ok(Vec::new()),
            k => Err(InputError::at(
                self.line,
                format!("unknown frame {k:?} (not a Pipecat frame this dialect reads or skips; see docs/MAPPING.md)"),
            )),
        }
    }

    fn error(&self, message: &str) -> InputError {
        InputError::at(self.line, message)
    }

    fn input(&self, kind: InputKind) -> Event<TurnMachine> {
        Event::Input {
            session: SESSION.to_owned(),
            input: turnfence_model::turn::Input::new(self.at, kind),
        }
    }

    fn observed(&self, output: Output) -> Event<TurnMachine> {
        Event::Output {
            session: SESSION.to_owned(),
            at: self.at,
            observed: Observed::exact(output),
        }
    }
}
