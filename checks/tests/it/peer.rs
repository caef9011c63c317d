//! The explorer against a peer: stateright's breadth-first checker over the same fence machine,
//! the same bounds and the same notion of state must find the same number of distinct states.

use stateright::{Checker, Model};
use turnfence_checks::explore;
use turnfence_checks::explore::fence::FenceBounds;
use turnfence_model::fence::FenceMachine;

#[path = "../support/peer_model.rs"]
mod peer_model;

#[test]
fn stateright_and_the_explorer_agree_on_the_state_space() {
    for bounds in [
        FenceBounds {
            requests: 1,
            owner_messages: 1,
            queue: true,
            malformed: false,
            symmetry: false,
        },
        FenceBounds {
            requests: 2,
            owner_messages: 0,
            queue: false,
            malformed: true,
            symmetry: false,
        },
    ] {
        let ours = explore::exhaustive::<FenceMachine>(&FenceMachine::new, &bounds);
        assert!(!ours.truncated && ours.counterexample.is_none());
        let checker = peer_model::PeerModel {
            bounds: bounds.clone(),
        }
        .checker()
        .spawn_bfs()
        .join();
        assert_eq!(
            checker.unique_state_count(),
            ours.states,
            "distinct states differ for {bounds:?}"
        );
    }
}
