//! What an exploration found.

use std::collections::BTreeSet;

use turnfence_model::Violation;

#[derive(Clone, Debug)]
pub struct Explored<I, V> {
    pub states: usize,
    pub transitions: usize,
    pub depth: usize,
    /// The exploration stopped at the depth bound with states left to expand.
    pub truncated: bool,
    pub coverage: BTreeSet<String>,
    pub reached: BTreeSet<V>,
    /// The first violation, with the inputs that lead to it (a shortest such path).
    pub counterexample: Option<(Vec<I>, Violation<V>)>,
    /// When truncated: a path to a state left unexpanded at the depth bound (what keeps growing).
    pub deepest: Vec<I>,
    /// Sleep sets left inputs out (`sleep`): `transitions` counts the ones taken, and the
    /// counterexample, if any, need not be a shortest one.
    pub reduced: bool,
}
