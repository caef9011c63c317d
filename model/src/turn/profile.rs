//! Profiles: the handful of rule choices on which real voice stacks differ from the lab's. A
//! profile is chosen when the machine is made ([`TurnMachine::with_profile`]) and named in a
//! trace's meta line; it is not a second machine — the same machine, the same monitor, with the
//! choices below read where they apply. ARCHITECTURE.md ("Profiles") gives each choice its source.
//!
//! [`TurnMachine::with_profile`]: super::TurnMachine::with_profile

use serde::{Deserialize, Serialize};

use super::Invariant;

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
}

impl Profile {
    /// Every profile, in the order the CLI lists them.
    pub const ALL: &'static [Profile] = &[Profile::Lab, Profile::OpenaiRealtime];

    /// The profile's name, as the meta line and `--profile` give it.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Lab => "lab",
            Profile::OpenaiRealtime => "openai-realtime",
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
    /// interruption clears that audio whatever the turn's phase.
    pub fn playback_outlives_turn(self) -> bool {
        self == Profile::OpenaiRealtime
    }

    /// An interrupted turn whose audio was cleared before it all played is truncated to what was
    /// heard.
    pub fn truncates_to_heard(self) -> bool {
        self == Profile::OpenaiRealtime
    }

    /// Speech interrupts any running turn, not only one that has spoken (VAD's
    /// `interrupt_response`: "cancel any ongoing response").
    pub fn speech_interrupts_any_running(self) -> bool {
        self == Profile::OpenaiRealtime
    }

    /// Whether the monitor judges `invariant` under this profile: the lab's eleven everywhere,
    /// the realtime concepts' three only where the profile has them.
    pub fn judges(self, invariant: Invariant) -> bool {
        match invariant {
            Invariant::TruncatedToHeard
            | Invariant::OneActiveResponse
            | Invariant::CancelTargetsItsResponse => self == Profile::OpenaiRealtime,
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
