//! The `pipecat` profile explored: two turns with a child each (audio outliving its turn, calls
//! cancelled or run through by an interruption, cancelled at their timeout, answered once,
//! uninterruptible turns).

use turnfence_model::turn::Profile;

use crate::explore::turn::{ProfileBounds, TurnBounds};

const P: Profile = Profile::Pipecat;

/// The profile explored, as the registry lists it.
pub static EXPLORED: ProfileBounds = ProfileBounds {
    profile: P,
    ci: &[("pipecat", TurnBounds::under(P, 2, 1, 1, false))],
    deep: &[],
    moments: None,
};
