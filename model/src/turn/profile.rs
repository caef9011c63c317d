//! Profiles: the handful of rule choices on which real voice stacks differ from the lab's. A
//! profile is chosen when the machine is made ([`TurnMachine::with_profile`]) and named in a
//! trace's meta line; it is not a second machine — the same machine, the same monitor, with the
//! choices below read where they apply. docs/DESIGN.md ("Profiles") gives each choice its source.
//!
//! [`TurnMachine::with_profile`]: super::TurnMachine::with_profile

use serde::{Deserialize, Serialize};

use super::Invariant;
use crate::Millis;

/// Under `livekit-agents`, a paused output resumes when no transcript confirmed the interruption
/// this long after the user stopped speaking (LiveKit's `false_interruption_timeout`, 2.0 s by
/// default, armed at the end of speech).
pub const FALSE_INTERRUPTION_TIMEOUT_MS: Millis = 2_000;

/// Under `livekit-agents`, speech counts as an interruption once it has lasted this long
/// (LiveKit's `min_interruption_duration`, 0.5 s by default): shorter speech pauses nothing.
pub const MIN_INTERRUPTION_MS: Millis = 500;

/// (`livekit-agents`.) A session's interruption options, as LiveKit's `AgentSession` takes them
/// (`min_interruption_duration`, `false_interruption_timeout`, `resume_false_interruption`): what
/// a log or its meta line states, else LiveKit's defaults ([`Interruption::LIVEKIT`]).
/// `allow_interruptions` is a turn's (`Accept::interruptible`), not the session's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Interruption {
    /// Speech counts as an interruption once it has lasted this long.
    pub min_ms: Millis,
    /// A paused output resumes when no transcript confirmed the interruption this long after
    /// the user stopped speaking; `None`: no interruption is taken for a false one.
    pub false_timeout_ms: Option<Millis>,
    /// Counted speech pauses the output, which resumes if the interruption was false; `false`:
    /// counted speech interrupts at once.
    pub resume: bool,
}

impl Interruption {
    /// LiveKit's defaults: 0.5 s, 2.0 s, resuming on.
    pub const LIVEKIT: Interruption = Interruption {
        min_ms: MIN_INTERRUPTION_MS,
        false_timeout_ms: Some(FALSE_INTERRUPTION_TIMEOUT_MS),
        resume: true,
    };

    /// Counted speech pauses the output (to resume it if no transcript comes), rather than
    /// interrupting it at once.
    pub fn pauses(self) -> bool {
        self.resume && self.false_timeout_ms.is_some()
    }
}

impl Default for Interruption {
    fn default() -> Interruption {
        Interruption::LIVEKIT
    }
}

/// Which semantics the turn machine and its monitor follow.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Profile {
    /// The lab's semantics (SPEC §2), unchanged: a turn is active until its cancel is requested,
    /// a speaking turn ends only once its audio has played out.
    #[default]
    #[serde(rename = "lab")]
    Lab,
    /// The OpenAI Realtime API's: a response is active until its own `response.done`; generation
    /// finishes before playback does (the audio waits downstream); an interruption clears what is
    /// still to play and truncates the response to what was heard.
    #[serde(rename = "openai-realtime")]
    OpenaiRealtime,
    /// LiveKit Agents': a tool call runs through an interruption and is answered exactly once;
    /// speech over the agent pauses its output until the interruption is decided — confirmed by
    /// a transcript, or undone (resumed) when none comes in time; a turn may be uninterruptible.
    #[serde(rename = "livekit-agents")]
    LivekitAgents,
    /// Pipecat's: a response ends with its generation and its audio plays on downstream; every
    /// interruption cancels the running response and clears what is still to play, except
    /// output marked uninterruptible; a tool call is cancelled by an interruption unless it was
    /// registered `cancel_on_interruption=False` (then it runs through), is cancelled at its
    /// timeout, and is answered exactly once.
    #[serde(rename = "pipecat")]
    Pipecat,
}

impl Profile {
    /// Every profile, in the order the CLI lists them.
    pub const ALL: &'static [Profile] = &[
        Profile::Lab,
        Profile::OpenaiRealtime,
        Profile::LivekitAgents,
        Profile::Pipecat,
    ];

    /// The profile's name, as the meta line and `--profile` give it.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Lab => "lab",
            Profile::OpenaiRealtime => "openai-realtime",
            Profile::LivekitAgents => "livekit-agents",
            Profile::Pipecat => "pipecat",
        }
    }

    /// The profile named `name`.
    pub fn from_name(name: &str) -> Option<Profile> {
        Profile::ALL.iter().copied().find(|p| p.name() == name)
    }

    pub fn is_lab(&self) -> bool {
        *self == Profile::Lab
    }

    /// A turn stays active — a second one is refused — until it has ended, not only until its
    /// cancel was requested (one active response; a cancel is acknowledged by the response's own
    /// done).
    pub fn active_until_terminal(self) -> bool {
        self == Profile::OpenaiRealtime
    }

    /// A turn ends when its generation does; its audio plays on downstream after it ended, and an
    /// interruption clears that audio whatever the turn's phase, and cancels any running turn,
    /// spoken or not (VAD's `interrupt_response`: "cancel any ongoing response").
    pub fn playback_outlives_turn(self) -> bool {
        matches!(self, Profile::OpenaiRealtime | Profile::Pipecat)
    }

    /// An interrupted turn whose audio was cleared before it all played is truncated to what was
    /// heard.
    pub fn truncates_to_heard(self) -> bool {
        self == Profile::OpenaiRealtime
    }

    /// Every tool call is answered exactly once (`tool_answered`): a result, an error or its
    /// cancellation.
    pub fn answers_tool_calls(self) -> bool {
        matches!(self, Profile::LivekitAgents | Profile::Pipecat)
    }

    /// A stop or a barge-in does not cancel a running tool call: it runs to completion, its
    /// result kept (answered) though its turn was interrupted. Under `livekit-agents` every
    /// call does; under `pipecat` a call registered `cancel_on_interruption=False` (spawned not
    /// `cancellable`) does, and one registered with the default is cancelled.
    pub fn tool_runs_through_interruption(self, cancellable: bool) -> bool {
        match self {
            Profile::LivekitAgents => true,
            Profile::Pipecat => !cancellable,
            Profile::Lab | Profile::OpenaiRealtime => false,
        }
    }

    /// A tool call may be spawned with a timeout (`Spawn::timeout_ms`): when it has run that
    /// long it is cancelled (Pipecat's `timeout_secs` / `function_call_timeout_secs`), and the
    /// call is answered with its cancellation.
    pub fn times_out_calls(self) -> bool {
        self == Profile::Pipecat
    }

    /// A turn whose generation is done and that waits on its tool calls alone holds the session
    /// no longer: the next turn may be accepted beside it, its calls run on, and an interruption
    /// cancels the cancellable ones as it cancels the running turn. Pipecat's LLM runs each call
    /// as a task of its own and ends its response at once (`LLMService._run_parallel_function_calls`
    /// creates a task per call; the sequential runner is a background queue), and the user
    /// aggregator pushes the next context without waiting for them (`LLMUserAggregator`); an
    /// interruption cancels every running call registered `cancel_on_interruption=True`, of
    /// whichever response (`LLMService._handle_interruptions`, both pinned versions). LiveKit
    /// marks a reply's generation done before it waits for the reply's tools
    /// (`AgentActivity._pipeline_reply_task_impl`: `_mark_generation_done()`, then the speech
    /// waits on `exe_task` among `_background_speeches`), so its scheduler plays the next queued
    /// speech meanwhile; speech over it cuts the one speaking (the active generation's), as
    /// LiveKit's `_interrupt_by_audio_activity` interrupts `_current_speech` alone.
    pub fn calls_outlive_generation(self) -> bool {
        matches!(self, Profile::Pipecat | Profile::LivekitAgents)
    }

    /// Speech over a speaking turn that lasts [`MIN_INTERRUPTION_MS`] pauses its output; a final
    /// transcript confirms the interruption, and without one in [`FALSE_INTERRUPTION_TIMEOUT_MS`]
    /// after the speech ended the output resumes.
    pub fn pauses_on_speech(self) -> bool {
        self == Profile::LivekitAgents
    }

    /// A turn may be accepted uninterruptible: speech neither pauses nor interrupts it.
    pub fn has_uninterruptible_turns(self) -> bool {
        matches!(self, Profile::LivekitAgents | Profile::Pipecat)
    }

    /// Whether the monitor judges `invariant` under this profile: the lab's eleven everywhere,
    /// each real stack's concepts only where the profile has them.
    pub fn judges(self, invariant: Invariant) -> bool {
        match invariant {
            Invariant::TruncatedToHeard
            | Invariant::OneActiveResponse
            | Invariant::CancelTargetsItsResponse => self == Profile::OpenaiRealtime,
            Invariant::InterruptionDecidedOnce => self == Profile::LivekitAgents,
            Invariant::ToolCallSettled | Invariant::UninterruptibleOutputSurvives => {
                matches!(self, Profile::LivekitAgents | Profile::Pipecat)
            }
            _ => true,
        }
    }

    /// The invariants judged under this profile, in their fixed order.
    pub fn invariants(self) -> impl Iterator<Item = Invariant> {
        <Invariant as crate::Invariant>::ALL
            .iter()
            .copied()
            .filter(move |i| self.judges(*i))
    }
}
