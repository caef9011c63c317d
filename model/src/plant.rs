//! Planted flaws: rules broken on purpose, so the suite can prove it catches each one.
//!
//! A machine takes its plant as a type parameter (`TurnMachine<P = Sound>`). The sound machine's
//! plant is [`Sound`], whose [`planted`](Plant::planted) is always `None`: every check of a
//! flaw in its code is a constant `false` and compiles away. A machine with a flaw is another
//! type, `TurnMachine<Planted<turn::Flaw>>`, made only by [`Plantable::with_flaw`]; code that
//! never names it (the release gate) contains no planted rule at all, whatever cargo features
//! the build unified. The flaws themselves are names ([`Flaw`]), compiled always.

use std::fmt::Debug;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::machine::{Invariant, Machine};

/// A rule broken on purpose: the suite proves it catches each one.
pub trait Flaw: Copy + Debug + Serialize + DeserializeOwned + 'static {
    /// The machine's invariants.
    type Invariant: Invariant;

    /// Every planted flaw of the machine.
    const ALL: &'static [Self];

    /// The invariant this flaw breaks first.
    fn breaks(self) -> Self::Invariant;
}

/// Which flaw `F` a machine carries, if any: its type parameter. Plain data, so a machine,
/// planted or not, may cross threads (the explorer expands states on every core).
pub trait Plant<F>: Clone + Debug + Default + Send + Sync {
    /// The flaw planted, if one is.
    fn planted(&self) -> Option<F>;
}

/// No flaw, by type: the plant of every machine the gate and the checker run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Sound;

impl<F> Plant<F> for Sound {
    #[inline(always)]
    fn planted(&self) -> Option<F> {
        None
    }
}

/// The flaw chosen when the machine was made ([`Plantable::with_flaw`]); a default
/// (fresh) machine of this type carries none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Planted<F>(Option<F>);

impl<F> Default for Planted<F> {
    fn default() -> Planted<F> {
        Planted(None)
    }
}

impl<F> Planted<F> {
    /// The plant of a machine with `flaw`.
    pub fn new(flaw: F) -> Planted<F> {
        Planted(Some(flaw))
    }
}

impl<F: Copy + Debug + Send + Sync> Plant<F> for Planted<F> {
    /// Never inlined, so that its symbol marks a binary holding any planted machine's code:
    /// `ci/release.sh` proves the release `turnfence` has none.
    #[inline(never)]
    fn planted(&self) -> Option<F> {
        self.0
    }
}

/// A machine that can be made with one of its rules broken. The planted machine is a type of
/// its own with the same alphabet, invariants and monitor, so every checker drives it by the
/// same generic code; only code that names it can run a flaw.
pub trait Plantable: Machine {
    /// The machine's planted flaws, each breaking one of its invariants.
    type Flaw: Flaw<Invariant = Self::Invariant>;

    /// The machine with a flaw planted.
    type Planted: Machine<
        Input = Self::Input,
        Output = Self::Output,
        Misuse = Self::Misuse,
        Invariant = Self::Invariant,
        Monitor = Self::Monitor,
    >;

    /// A fresh machine with one rule broken on purpose.
    fn with_flaw(flaw: Self::Flaw) -> Self::Planted;
}
