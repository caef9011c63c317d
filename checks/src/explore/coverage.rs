//! Coverage points an exploration must reach, and the ones documented as impossible.

use std::collections::{BTreeMap, BTreeSet};

/// Coverage points that must be reached, and the ones documented as impossible, with reasons.
pub struct Coverage {
    pub required: Vec<String>,
    pub impossible: BTreeMap<String, &'static str>,
}

impl Coverage {
    /// The required points an exploration did not reach and that are not on the impossible
    /// list; and the impossible ones it did reach (the list is wrong).
    pub fn gaps(&self, reached: &BTreeSet<String>) -> (Vec<String>, Vec<String>) {
        let missing = self
            .required
            .iter()
            .filter(|p| !reached.contains(*p) && !self.impossible.contains_key(*p))
            .cloned()
            .collect();
        let wrong = self
            .impossible
            .keys()
            .filter(|p| reached.contains(*p))
            .cloned()
            .collect();
        (missing, wrong)
    }
}
