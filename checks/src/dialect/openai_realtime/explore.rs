//! The `openai-realtime` profile explored: two turns with a child and a delta each (truncation,
//! audio outliving its turn, refusal while cancelling, stale stops), and with `--deep` three
//! turns of a delta each (36 141 states); its moments of truncation named `realtime/…`.

use turnfence_model::turn::Profile;

use crate::explore::turn::{ProfileBounds, TurnBounds};

const P: Profile = Profile::OpenaiRealtime;

/// The profile explored, as the registry lists it.
pub static EXPLORED: ProfileBounds = ProfileBounds {
    profile: P,
    ci: &[("realtime", TurnBounds::under(P, 2, 1, 1, false))],
    deep: &[("three-realtime", TurnBounds::under(P, 3, 0, 1, false))],
    moments: Some("realtime"),
};
