//! `Respawn`: a turn's children as if they had been spawned in another order, each spawn's name
//! kept with its place — the state, the monitor's memory (`invariants::rename`) and an input made
//! over. What the explorer's symmetry reduction of the turn machine rests on.
//!
//! A child's name is a label the machine only compares, and the explorer draws it from the
//! child's place (`cN`, the Nth spawn of its turn). Two children of one turn are told apart by
//! what they are (kind, state, temporaries, timeout) and by their place, which the machine reads
//! in one way only: a stop, a deadline or a barge-in asks a turn's children in spawn order, and
//! a timeout or a settle goes through them in that order, so the outputs of such a step come in
//! that order. Nothing else of the session names a child. Respawning the children (their places
//! permuted, each name staying with its place) changes which outputs of such a step come first
//! and nothing else; whether that keeps every verdict is what `tests/it/turn_symmetry.rs` holds
//! the sound machine and every planted one to.

use std::hash::{Hash, Hasher};

use super::state::{Child, Session, Turn};
use super::types::{ChildId, InputKind, TurnId};
use super::{Flaw, TurnMachine};
use crate::Plant;

/// Each turn's children in another spawn order: for each turn named, the place each place's new
/// child was spawned at, and its children's old names with their new ones (the name of the
/// place each moves to). A handful of turns and children: kept in vectors, searched in line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Respawn {
    turns: Vec<(TurnId, Vec<usize>, Names)>,
}

/// A turn's children's old names, each with its new one.
type Names = Vec<(ChildId, ChildId)>;

impl Respawn {
    /// The respawn of `session`'s children that puts, for each turn named, the child spawned at
    /// place `order[i]` at place `i`. `None` unless each order is a permutation of its turn's
    /// places.
    pub fn new(session: &Session, orders: &[(TurnId, Vec<usize>)]) -> Option<Respawn> {
        let mut turns = Vec::with_capacity(orders.len());
        for (turn, order) in orders {
            let children = &session.turn(turn)?.children;
            let mut sorted = order.clone();
            sorted.sort_unstable();
            if !sorted.iter().copied().eq(0..children.len()) {
                return None;
            }
            let names = order
                .iter()
                .enumerate()
                .map(|(to, &from)| (children[from].id.clone(), children[to].id.clone()))
                .collect();
            turns.push((turn.clone(), order.clone(), names));
        }
        Some(Respawn { turns })
    }

    /// The order of `turn`'s children, if it is named.
    fn order(&self, turn: &str) -> Option<&[usize]> {
        let found = self.turns.iter().find(|(t, _, _)| t == turn);
        found.map(|(_, order, _)| order.as_slice())
    }

    /// The new name of `turn`'s child `child` (itself, where it does not move).
    pub fn child(&self, turn: &str, child: &str) -> ChildId {
        self.child_ref(turn, child).into()
    }

    /// [`Respawn::child`], borrowed.
    pub fn child_ref<'a>(&'a self, turn: &str, child: &'a str) -> &'a str {
        let names = self.turns.iter().find(|(t, _, _)| t == turn);
        let to = names.and_then(|(_, _, n)| n.iter().find(|(from, _)| from == child));
        to.map_or(child, |(_, to)| to.as_str())
    }

    /// Whether it moves no child.
    pub fn is_identity(&self) -> bool {
        let names = self.turns.iter().flat_map(|(_, _, n)| n);
        names.into_iter().all(|(from, to)| from == to)
    }

    /// `turn`'s children respawned: each renamed, in the places of their new names.
    fn children(&self, turn: &str, children: &[Child]) -> Option<Vec<Child>> {
        let order = self.order(turn)?;
        let moved = order.iter().zip(children).map(|(&from, slot)| {
            let c = children.get(from).unwrap_or(slot);
            Child {
                id: slot.id.clone(),
                ..c.clone()
            }
        });
        Some(moved.collect())
    }

    /// An input with the child it names renamed (a spawn's new child keeps its name).
    pub fn input(&self, kind: &InputKind) -> InputKind {
        let mut kind = kind.clone();
        match &mut kind {
            InputKind::ChildCompleted { turn, child }
            | InputKind::ChildFailed { turn, child }
            | InputKind::Checkpoint { turn, child, .. }
            | InputKind::CommitSent { turn, child, .. }
            | InputKind::CommitAcked { turn, child }
            | InputKind::CommitFailed { turn, child } => *child = self.child(turn, child),
            _ => {}
        }
        kind
    }
}

impl Session {
    /// The session with its turns' children respawned by `r`; nothing else of it names a child.
    pub fn respawned(&self, r: &Respawn) -> Session {
        let mut s = self.clone();
        if r.turns.iter().any(|(t, _, _)| s.turn(t).is_some()) {
            for t in s.turns.iter_mut() {
                if let Some(children) = r.children(&t.id, &t.children) {
                    t.children = children;
                }
            }
        }
        s
    }
}

impl Session {
    /// Hashes the session as [`Session::respawned`] would make it, without making it: what a
    /// symmetry reduction fingerprints, once per order tried. Equal respawned sessions hash
    /// equal; it is not `Hash` of the respawned one (each turn and child is hashed field by
    /// field, every field named, so a field added to either is a compile error here).
    pub fn hash_respawned<H: Hasher>(&self, r: &Respawn, h: &mut H) {
        let Session {
            profile,
            interruption,
            now,
            active_generation,
            max_generation,
            turns,
            playback,
            paused,
            user_speaking,
            interruption_due,
            store,
            client,
        } = self;
        (
            profile,
            interruption,
            now,
            active_generation,
            max_generation,
        )
            .hash(h);
        turns.len().hash(h);
        for t in turns.iter() {
            hash_turn(t, r.order(&t.id), h);
        }
        (
            playback,
            paused,
            user_speaking,
            interruption_due,
            store,
            client,
        )
            .hash(h);
    }
}

/// One turn hashed with its children in `order` (the place each place's child was spawned at;
/// spawn order if none), each under its place's name.
fn hash_turn<H: Hasher>(t: &Turn, order: Option<&[usize]>, h: &mut H) {
    let Turn {
        id,
        generation,
        mode,
        accepted_at,
        deadline_at,
        budget,
        phase,
        children,
        last_delivered_seq,
        model_done,
        played,
        interruptible,
    } = t;
    (
        id,
        generation,
        mode,
        accepted_at,
        deadline_at,
        budget,
        phase,
    )
        .hash(h);
    (last_delivered_seq, model_done, played, interruptible).hash(h);
    children.len().hash(h);
    for (to, slot) in children.iter().enumerate() {
        let from = order.and_then(|o| o.get(to)).copied().unwrap_or(to);
        slot.id.hash(h);
        children.get(from).unwrap_or(slot).hash_unnamed(h);
    }
}

impl Child {
    /// Hashes what the child is, its name aside: two children of a turn that hash alike here
    /// (and are remembered alike) are swapped by a respawn into the same state.
    pub fn hash_unnamed<H: Hasher>(&self, h: &mut H) {
        let Child {
            id: _,
            kind,
            state,
            temporary_outputs,
            cancel_requested,
            reconcile_enqueued,
            answered,
            times_out_at,
        } = self;
        (kind, state, temporary_outputs, cancel_requested).hash(h);
        (reconcile_enqueued, answered, times_out_at).hash(h);
    }
}

impl<P: Plant<Flaw>> TurnMachine<P> {
    /// The machine with its session's children respawned by `r` (the outputs not yet drained
    /// as they were: drain first) and its plant.
    pub fn respawned(&self, r: &Respawn) -> TurnMachine<P> {
        self.with_session_from(|s| s.respawned(r))
    }
}
