//! A real stack's profile's own gate, beside the lab's: its scenarios, as input scripts, and the
//! checks each is measured by. Each lives in its stack's folder; the registry lists them
//! ([`crate::dialect::GATES`]), and the gate runs a profile's from there.

use turnfence_model::turn::Profile;

use super::checks::{Checks, Facts};
use super::Scenario;

/// A profile's gate: its scenarios and their checks.
pub struct Suite {
    /// The profile its turn machine is made with.
    pub profile: Profile,
    /// Its scenarios' names, in gate order.
    pub names: &'static [&'static str],
    /// The scenario of that name, if it is one of its.
    pub(crate) scenario: fn(&str) -> Option<Scenario>,
    /// The checks of its scenario of that name, measured on the run's facts, about its turn.
    pub(crate) checks: for<'a> fn(&str, &mut Checks<'a>, &Facts<'a>, &str),
}
