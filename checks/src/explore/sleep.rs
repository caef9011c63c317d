//! Sleep sets (Godefroid's partial-order reduction): an input need not be taken from a state
//! where the same successor is reached by taking it first and the input that led to the state
//! after it. Two inputs are independent at a state when their [`Footprint`]s there — the parts of
//! the state (monitor and alphabet included) each reads and writes — do not meet: neither writes
//! what the other reads or writes. Independence is then *derived* from the footprints, never
//! listed pair by pair; and it is checked: `tests/it/reduction.rs` takes every pair called
//! independent at every state of the CI bound sets in both orders and requires the same state,
//! each still offered and taken after the other, and the same invariants broken on the way.
//!
//! **What it leaves out.** The successor by input `t` of a state with sleep set `Z` gets the
//! sleep set of the inputs of `Z`, and of the inputs taken from the state before `t` (in the
//! alphabet's order), that are independent of `t` there. An asleep input is not taken.
//! Sleep sets leave out *transitions*, not states: every state reachable without them is
//! reached with them (the explorer's state counts are the unreduced ones).
//!
//! **States met again.** A state is met by several paths, with a sleep set each. What it was
//! expanded with is kept (none kept: nothing slept); met again with a sleep set that does not
//! hold all of the kept one, the inputs asleep before but awake now are taken from it (it is
//! expanded again, those inputs only) and it keeps the inputs asleep on both paths: the
//! state-caching form of sleep sets, which reaches every state and every transition's verdict
//! whatever the order of the search (Godefroid, *Partial-Order Methods for the Verification of
//! Concurrent Systems*, LNCS 1032, §5.3).

use std::collections::{BTreeSet, HashMap, HashSet};

use turnfence_model::Machine;

/// What an input reads and writes of a state, as sets of its parts (one bit a part; what the
/// parts are is the machine's: [`super::Explore::footprint`]). Writing a part reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footprint {
    reads: u64,
    writes: u64,
}

impl Footprint {
    /// Every part read and written: independent of nothing.
    pub const ALL: Footprint = Footprint {
        reads: u64::MAX,
        writes: u64::MAX,
    };

    /// An input that reads the parts `reads` and writes the parts `writes` (which it then reads
    /// too).
    pub fn new(reads: u64, writes: u64) -> Footprint {
        Footprint {
            reads: reads | writes,
            writes,
        }
    }

    /// Whether neither writes a part the other reads (or writes).
    pub fn independent(self, other: Footprint) -> bool {
        self.writes & other.reads == 0 && other.writes & self.reads == 0
    }
}

/// Whether every input of `old` is in `new`: a state expanded with `old` asleep, met again with
/// `new` asleep, has had every input taken that `new` leaves awake.
pub fn covered<I: PartialEq>(old: &[I], new: &[I]) -> bool {
    old.iter().all(|i| new.contains(i))
}

/// The inputs of `old` not in `new` (to be taken now), and those in both (asleep still).
pub fn woken<I: PartialEq + Clone>(old: &[I], new: &[I]) -> (Box<[I]>, Box<[I]>) {
    let (still, woken): (Vec<I>, Vec<I>) = old.iter().cloned().partition(|i| new.contains(i));
    (woken.into(), still.into())
}

/// What slept in the states expanded with inputs asleep, by key: each state's place among the
/// visited states and those inputs.
pub(super) type Asleep<I> = HashMap<u64, (usize, Box<[I]>), foldhash::fast::FixedState>;

/// A state met again that must be expanded again: its place among the visited states, the inputs
/// asleep on every path it was met by (asleep still, and kept for the next meeting) and the ones
/// that woke (to be taken now).
pub(super) struct Again<I> {
    pub(super) index: usize,
    pub(super) asleep: Box<[I]>,
    pub(super) woke: Box<[I]>,
}

/// A state met again with the inputs `now` asleep, if it must be expanded again; `None` if every
/// input awake now was taken from it already.
pub(super) fn met_again<I: Clone + PartialEq>(
    asleep: &mut Asleep<I>,
    key: u64,
    now: &[I],
) -> Option<Again<I>> {
    let (index, before) = asleep.get_mut(&key)?;
    if covered(before, now) {
        return None;
    }
    let (woke, still) = woken(before, now);
    let index = *index;
    if still.is_empty() {
        asleep.remove(&key);
    } else {
        before.clone_from(&still);
    }
    Some(Again {
        index,
        asleep: still,
        woke,
    })
}

/// What the successors of one chunk are judged against while they are made: the states seen
/// (and with sleep sets, what they slept), the coverage points and the invariants reached before
/// the chunk (read only, on every core).
pub(super) struct Known<'a, M: Machine> {
    pub(super) seen: &'a HashSet<u64, foldhash::fast::FixedState>,
    pub(super) asleep: Option<&'a Asleep<M::Input>>,
    pub(super) coverage: &'a BTreeSet<String>,
    pub(super) reached: &'a BTreeSet<M::Invariant>,
}

/// Whether a successor with key `k` and the inputs `asleep` in it adds nothing: its state was
/// seen before the chunk, or kept already by this core in it (the one kept then comes first in
/// the order the successors are taken in, so the one taken is always one kept), and — with sleep
/// sets — with no input asleep then that is awake now. Otherwise it is kept (noted as kept, if
/// new).
pub(super) fn known_before<M: Machine>(
    known: &Known<M>,
    kept: &mut HashMap<u64, Box<[M::Input]>, foldhash::fast::FixedState>,
    k: u64,
    asleep: &[M::Input],
) -> bool {
    let Some(slept) = known.asleep else {
        return known.seen.contains(&k) || kept.insert(k, Box::new([])).is_some();
    };
    if known.seen.contains(&k) {
        let before = slept.get(&k).map_or(&[][..], |(_, before)| before);
        return covered(before, asleep);
    }
    match kept.get(&k) {
        Some(before) => covered(before, asleep),
        None => {
            kept.insert(k, asleep.into());
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footprints_meet_where_one_writes_what_the_other_touches() {
        let (a, b, c) = (1, 2, 4);
        // Reading the same part is no conflict; writing one the other reads or writes is.
        assert!(Footprint::new(a, 0).independent(Footprint::new(a, 0)));
        assert!(Footprint::new(a, b).independent(Footprint::new(a, c)));
        assert!(!Footprint::new(a, b).independent(Footprint::new(b, 0)));
        assert!(!Footprint::new(b, 0).independent(Footprint::new(a, b)));
        assert!(!Footprint::new(0, b).independent(Footprint::new(0, b)));
        // Writing reads: a write meets a write of the same part from either side.
        assert!(!Footprint::new(0, a).independent(Footprint::new(a, 0)));
        assert!(!Footprint::ALL.independent(Footprint::new(c, 0)));
        assert!(Footprint::new(0, 0).independent(Footprint::new(0, 0)));
    }

    #[test]
    fn a_state_met_again_takes_what_woke_and_keeps_what_sleeps_on_both_paths() {
        assert!(covered::<u8>(&[], &[]));
        assert!(covered(&[1], &[2, 1]));
        assert!(!covered(&[1, 3], &[1]));
        assert!(!covered(&[3], &[]));
        let (awake, asleep) = woken(&[1, 2, 3], &[3, 1, 4]);
        assert_eq!((&*awake, &*asleep), (&[2][..], &[1, 3][..]));
        let (awake, asleep) = woken(&[5], &[]);
        assert_eq!((&*awake, &*asleep), (&[5][..], &[][..]));
    }
}
