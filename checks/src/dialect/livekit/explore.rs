//! The `livekit-agents` profile explored: one turn with a child and two deltas (tools answered,
//! pauses resumed or interrupted, uninterruptible turns).

use turnfence_model::turn::Profile;

use crate::explore::turn::{ProfileBounds, TurnBounds};

const P: Profile = Profile::LivekitAgents;

/// The profile explored, as the registry lists it.
pub static EXPLORED: ProfileBounds = ProfileBounds {
    profile: P,
    ci: &[("livekit", TurnBounds::under(P, 1, 1, 2, false))],
    deep: &[],
    moments: None,
};
