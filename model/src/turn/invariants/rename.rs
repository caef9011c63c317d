//! The monitor's memory with a turn's children respawned (`crate::turn::rename`): each child it
//! remembers under its new name. It keeps children by name, never by place, so a respawn is a
//! renaming here.

use std::hash::{Hash, Hasher};

use super::memory::{ChildSeen, Monitor, TurnSeen};
use crate::turn::rename::Respawn;

impl Monitor {
    /// The monitor's memory with every child renamed by `r`: the turns' children, the tool
    /// calls, the refusals and the step's expected spawn; its findings and reachability as they
    /// were.
    pub fn respawned(&self, r: &Respawn) -> Monitor {
        let mut m = self.clone();
        if r.is_identity() {
            return m;
        }
        for (turn, seen) in m.turns.iter_mut() {
            let children = std::mem::take(&mut seen.children);
            seen.children = children
                .into_iter()
                .map(|(id, c)| (r.child(turn, &id), c))
                .collect();
        }
        let calls = std::mem::take(&mut *m.calls);
        *m.calls = calls
            .into_iter()
            .map(|((turn, child), answer)| {
                let child = r.child(&turn, &child);
                ((turn, child), answer)
            })
            .collect();
        for (turn, refused) in m.refusals.iter_mut() {
            let old = std::mem::take(refused);
            *refused = old
                .into_iter()
                .map(|(id, why)| (r.child(turn, &id), why))
                .collect();
        }
        if let Some((turn, child, _)) = &mut m.expect.spawn {
            *child = r.child(turn, child);
        }
        m
    }

    /// Hashes the memory [`crate::Monitor::fingerprint`] hashes, as [`Monitor::respawned`] would
    /// make it, without making it (children and calls in the order of their new names): what a
    /// symmetry reduction fingerprints, once per order tried. Every field is named, so a field
    /// added is a compile error here until it is hashed or said not to be.
    pub fn hash_respawned<H: Hasher>(&self, r: &Respawn, h: &mut H) {
        let Monitor {
            profile,
            now,
            active_generation,
            turns,
            store,
            client_received,
            client_text,
            disconnected_at,
            replayed,
            reported,
            expect: _,
            findings: _,
            moments: _,
            refusals: _,
            audio,
            fenced_below,
            stale_stop,
            calls,
            pause,
            user_speaking,
            uninterruptible,
            interruption,
        } = self;
        (profile, now, active_generation).hash(h);
        turns.len().hash(h);
        for (id, t) in turns.iter() {
            let TurnSeen {
                generation,
                deadline_at,
                budget,
                cancelled,
                by_deadline,
                cancel_effects,
                terminal,
                children,
                last_seq,
                generation_done,
            } = t;
            (id, generation, deadline_at, budget, cancelled, by_deadline).hash(h);
            (cancel_effects, terminal, last_seq, generation_done).hash(h);
            let mut kids: Vec<(&str, &ChildSeen)> = children
                .iter()
                .map(|(c, seen)| (r.child_ref(id, c), seen))
                .collect();
            kids.sort_by(|a, b| a.0.cmp(b.0));
            kids.hash(h);
        }
        (
            store,
            client_received,
            client_text,
            disconnected_at,
            replayed,
        )
            .hash(h);
        (reported, audio, fenced_below, stale_stop).hash(h);
        let mut calls: Vec<_> = calls
            .iter()
            .map(|((t, c), answer)| ((t.as_str(), r.child_ref(t, c)), answer))
            .collect();
        calls.sort_by(|a, b| a.0.cmp(&b.0));
        calls.hash(h);
        (pause, user_speaking, uninterruptible, interruption).hash(h);
    }

    /// Hashes what the monitor remembers of `turn`'s child `child`, its name aside: what it saw of
    /// the child and the answer of its tool call.
    pub fn hash_child<H: Hasher>(&self, turn: &str, child: &str, h: &mut H) {
        let seen = self.turns.get(turn).and_then(|t| t.children.get(child));
        seen.hash(h);
        self.calls.get(&(turn.into(), child.into())).hash(h);
    }
}
