//! proptest's view of a case: a strategy that draws a case seed and generates the case, and a
//! value tree that shrinks it by removing inputs — halves first, then smaller and smaller runs,
//! down to single inputs.

use std::fmt;
use std::rc::Rc;

use proptest::prelude::Rng;
use proptest::strategy::{NewTree, Strategy, ValueTree};
use proptest::test_runner::TestRunner;

use super::{generate, Case, Fuzz};

/// Cases of `steps` inputs for a machine made by `make` (possibly with a flaw).
pub struct CaseStrategy<M: Fuzz> {
    pub steps: usize,
    pub make: Rc<dyn Fn() -> M>,
}

impl<M: Fuzz> fmt::Debug for CaseStrategy<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CaseStrategy<{}>({} steps)", M::NAME, self.steps)
    }
}

impl<M: Fuzz> Strategy for CaseStrategy<M> {
    type Tree = CaseTree<M>;
    type Value = Case<M::Input>;

    fn new_tree(&self, runner: &mut TestRunner) -> NewTree<Self> {
        let seed = runner.rng().next_u64();
        let case = generate::<M>(seed, self.steps, self.make.as_ref());
        let chunk = case.inputs.len().div_ceil(2).max(1);
        Ok(CaseTree {
            base: case,
            pending: None,
            i: 0,
            chunk,
        })
    }
}

/// A case and how far its shrinking has come.
pub struct CaseTree<M: Fuzz> {
    base: Case<M::Input>,
    /// The smaller case being tried, if any.
    pending: Option<Case<M::Input>>,
    /// The next run of inputs to try removing: `[i, i + chunk)`.
    i: usize,
    chunk: usize,
}

impl<M: Fuzz> fmt::Debug for CaseTree<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "case seed {} with {} inputs",
            self.base.seed,
            self.base.inputs.len()
        )
    }
}

impl<M: Fuzz> ValueTree for CaseTree<M> {
    type Value = Case<M::Input>;

    fn current(&self) -> Case<M::Input> {
        self.pending.clone().unwrap_or_else(|| self.base.clone())
    }

    fn simplify(&mut self) -> bool {
        // The last smaller case still failed: it is the new base.
        if let Some(smaller) = self.pending.take() {
            self.base = smaller;
        }
        loop {
            let len = self.base.inputs.len();
            if self.i >= len {
                if self.chunk <= 1 {
                    return false;
                }
                self.chunk /= 2;
                self.i = 0;
                continue;
            }
            let end = (self.i + self.chunk).min(len);
            let mut inputs = self.base.inputs[..self.i].to_vec();
            inputs.extend_from_slice(&self.base.inputs[end..]);
            self.pending = Some(Case {
                inputs,
                ..self.base.clone()
            });
            return true;
        }
    }

    fn complicate(&mut self) -> bool {
        // The smaller case passed: keep those inputs and move on.
        if self.pending.take().is_some() {
            self.i += self.chunk;
            return true;
        }
        false
    }
}
