//! The `openai-realtime` profile's own gate, beside the lab's: four scenarios (`scenarios.rs`: a
//! barge-in truncated to what played, an interruption after the response is done, a create while
//! a cancelled response unwinds, a stale cancel) and their 12 checks (`checks.rs`), run on the
//! turn machine made with that profile and judged by its own monitor.

mod checks;
mod scenarios;

use turnfence_model::turn::Profile;

use crate::gate::Suite;

pub use scenarios::NAMES;

/// The profile's gate, as the registry lists it.
pub static SUITE: Suite = Suite {
    profile: Profile::OpenaiRealtime,
    names: &NAMES,
    scenario: scenarios::scenario,
    checks: checks::checks,
};
