//! One explorer state's fingerprint: a machine's state and its monitor's memory, hashed with
//! a fixed seed.

use std::hash::{BuildHasher, Hasher};

use turnfence_model::{Machine, Monitor};

/// A fingerprint of a machine's state and its monitor's memory: one explorer state.
pub fn fingerprint<M: Machine>(machine: &M, monitor: &M::Monitor) -> u64 {
    let mut h = hasher();
    machine.fingerprint(&mut h);
    monitor.fingerprint(&mut h);
    h.finish()
}

/// Hashes into a `u64` with a fixed seed (the same on every run and machine): foldhash's
/// quality hasher, several times faster than SipHash on a state's many small fields.
pub fn hasher() -> foldhash::quality::FoldHasher<'static> {
    foldhash::quality::FixedState::with_seed(FINGERPRINT_SEED).build_hasher()
}

/// The fingerprints' seed: any constant will do; it only has to be the same everywhere.
const FINGERPRINT_SEED: u64 = 0x7475_726e_6665_6e63;
