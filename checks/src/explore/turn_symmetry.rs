//! Symmetry reduction for the turn explorer: a state is known by its class under respawns of
//! each turn's children (`turnfence_model::turn::rename::Respawn`) — the children taken as if
//! spawned in another order, each name kept with its place.
//!
//! **What is interchangeable.** The explorer names a child by its place (`cN`, the Nth spawn of
//! its turn), so no renaming alone maps a reachable state to another; what may is a renaming that
//! moves children with their names' places: two children of one turn spawned in the other order.
//! The machine reads a child's place in one way only: a step that stops, times out or settles a
//! turn goes through its children in spawn order, so its outputs come in that order. The monitor
//! keeps children by name, and no invariant reads the order of two children's outputs within a
//! step, so such states have the same futures, renamed, and the same verdicts
//! (`tests/it/turn_symmetry.rs` holds the sound machine and every planted one to it, and every
//! planted flaw is still found). **Not** interchangeable: turns (`tN` by acceptance, each with
//! the next generation, which the machine compares), the one stop id and the one idempotency key
//! (nothing to swap them with), and the session (one per machine).
//!
//! **The canonical form.** Each turn's children sorted by what they are, their names aside (a
//! hash of the child and of what the monitor remembers of it; ties kept in spawn order), and the
//! state and the monitor's memory hashed as respawned in that order (never built: a first version
//! that built a respawned copy for every order took 1.36× the instructions of the run without
//! symmetry at `children`). Two children that tie are alike in everything but their names, and
//! swapping them respawns the state into itself, so any respawn of a state sorts to the same
//! respawned state: two states share the form exactly when a respawn maps one onto the other
//! (tested against the least over every order in `tests/it/turn_symmetry.rs`). A state with no
//! turn of two children is its class's only member, keyed by its fingerprint; at the CI bounds
//! only `children` has two children in a turn.

use std::hash::Hasher;

use turnfence_model::turn::rename::Respawn;
use turnfence_model::turn::{Flaw, Monitor, TurnId, TurnMachine};
use turnfence_model::Plant;

use super::{fingerprint, hasher};

/// The fingerprint of the state's class under respawns of its turns' children.
pub fn canonical_fingerprint<P: Plant<Flaw>>(machine: &TurnMachine<P>, monitor: &Monitor) -> u64 {
    let s = machine.session();
    // A class of one: every state a respawn maps it to is itself, and every state of such a
    // class is keyed so, so the class's key may be its fingerprint.
    if s.turns.iter().all(|t| t.children.len() < 2) {
        return fingerprint(machine, monitor);
    }
    let orders: Vec<(TurnId, Vec<usize>)> = s
        .turns
        .iter()
        .filter(|t| t.children.len() > 1)
        .map(|t| {
            let what: Vec<u64> = t
                .children
                .iter()
                .map(|c| {
                    let mut h = hasher();
                    c.hash_unnamed(&mut h);
                    monitor.hash_child(&t.id, &c.id, &mut h);
                    h.finish()
                })
                .collect();
            let mut order: Vec<usize> = (0..t.children.len()).collect();
            order.sort_by_key(|&i| what[i]);
            (t.id.clone(), order)
        })
        .collect();
    let r = Respawn::new(s, &orders).unwrap_or_default();
    respawned_fingerprint(machine, monitor, &r)
}

/// The state and the monitor's memory hashed as `r` respawns them, without respawning them.
pub fn respawned_fingerprint<P: Plant<Flaw>>(
    machine: &TurnMachine<P>,
    monitor: &Monitor,
    r: &Respawn,
) -> u64 {
    let mut h = hasher();
    machine.session().hash_respawned(r, &mut h);
    monitor.hash_respawned(r, &mut h);
    h.finish()
}
