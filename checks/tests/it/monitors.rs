//! Rules of the invariant monitors that no fixture or gate run pins on its own, each stated as
//! the rule it is. (Found by mutation testing: `ci/mutants.sh`, README "Mutation testing".)

use std::collections::BTreeSet;

use turnfence_model::{fence, turn, Invariant};

/// Every invariant is an `always` with its paired `sometimes` (`Invariant::reached`): what a run
/// must show for it to have been put to the test. Each says it in a sentence of its own: not
/// empty, not its name again, and no two invariants of a machine with the same one.
fn each_says_what_reaching_it_takes<V: Invariant>() {
    let mut seen = BTreeSet::new();
    for i in V::ALL {
        let reached = i.reached();
        assert!(
            reached.split_whitespace().count() >= 3,
            "{}: {reached:?} says nothing of what a run must show",
            i.name()
        );
        assert_ne!(reached, i.name());
        assert!(
            seen.insert(reached),
            "{}: {reached:?} is another invariant's",
            i.name()
        );
    }
}

#[test]
fn every_invariant_says_what_putting_it_to_the_test_takes() {
    each_says_what_reaching_it_takes::<turn::Invariant>();
    each_says_what_reaching_it_takes::<fence::Invariant>();
}
