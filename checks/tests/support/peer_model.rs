//! The fence machine as a stateright `Model`: the peer the explorer is measured against. A
//! state is the machine's state with the invariant monitor's memory — the same state the
//! explorer deduplicates — and an action is one input of the explorer's bounded alphabet.

use std::hash::{Hash, Hasher};

use stateright::{Model, Property};
use turnfence_checks::explore::fence::FenceBounds;
use turnfence_checks::explore::{self, Explore};
use turnfence_model::fence;
use turnfence_model::fence::FenceMachine;
use turnfence_model::prelude::*;

/// One explored state.
#[derive(Clone, Debug)]
pub struct PeerState {
    pub machine: FenceMachine,
    pub monitor: fence::Monitor,
}

impl Hash for PeerState {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.machine.fingerprint(h);
        self.monitor.fingerprint(h);
    }
}

impl PartialEq for PeerState {
    fn eq(&self, other: &Self) -> bool {
        explore::fingerprint(&self.machine, &self.monitor)
            == explore::fingerprint(&other.machine, &other.monitor)
    }
}

impl Eq for PeerState {}

/// The fence machine within bounds.
pub struct PeerModel {
    pub bounds: FenceBounds,
}

impl Model for PeerModel {
    type State = PeerState;
    type Action = fence::Input;

    fn init_states(&self) -> Vec<PeerState> {
        let (machine, monitor) = explore::start(&FenceMachine::new);
        vec![PeerState { machine, monitor }]
    }

    fn actions(&self, state: &PeerState, actions: &mut Vec<fence::Input>) {
        actions.extend(state.machine.alphabet(&self.bounds));
    }

    /// One property that always holds, so the checker visits every state (with none it would be
    /// done at once).
    fn properties(&self) -> Vec<Property<Self>> {
        vec![Property::<Self>::always("explored", |_, _| true)]
    }

    fn next_state(&self, last: &PeerState, action: fence::Input) -> Option<PeerState> {
        let mut next = last.clone();
        let (steps, ok) = turnfence_checks::shared::take(&mut next.machine, &action);
        if !ok {
            return None;
        }
        for step in &steps {
            let _ = next.monitor.observe(step);
        }
        // As the explorer does: the parts the step left alone keep their hashes.
        next.machine.refresh_fingerprint();
        next.monitor.refresh_fingerprint();
        Some(next)
    }
}
