//! The search for a stack's unlogged steps (`Unlogged`, declared by its dialect): before a
//! session reports an output the machine did not give, or an input it refused, the shortest
//! sequence of declared steps the machine takes, after which it gives that output or takes that
//! input, is taken as what happened.

use turnfence_model::Millis;

use super::{Conform, SessionCheck};

/// How many steps a log may leave out in a row where it shows no line: the depth of the search
/// for unlogged steps that explain an output or a refusal.
const UNLOGGED_DEPTH: usize = 2;

impl<M: Conform> SessionCheck<M> {
    /// The shortest sequence of unlogged steps (at most [`UNLOGGED_DEPTH`], the first found in
    /// the order the steps are declared) that the machine takes at `at` and after which `done`
    /// holds of it and of the outputs the steps gave; `None` if there is none.
    pub(super) fn search(
        &self,
        at: Millis,
        done: impl Fn(&M, &[M::Output]) -> bool,
    ) -> Option<Vec<M::Input>> {
        if self.unlogged.is_empty() {
            return None;
        }
        let mut frontier = vec![(self.machine.clone(), Vec::new(), Vec::new())];
        for _ in 0..UNLOGGED_DEPTH {
            let mut next = Vec::new();
            for (machine, path, outputs) in &frontier {
                for step in self.unlogged {
                    for inputs in (step.inputs)(machine, at) {
                        let mut m = machine.clone();
                        let mut outs: Vec<M::Output> = outputs.clone();
                        let taken = inputs.iter().all(|input| {
                            let ok = m.advance_to(M::at(input)).is_ok() && m.handle(input).is_ok();
                            outs.extend(turnfence_model::drain(&mut m));
                            ok
                        });
                        if !taken {
                            continue;
                        }
                        let mut p: Vec<M::Input> = path.clone();
                        p.extend(inputs);
                        if done(&m, &outs) {
                            return Some(p);
                        }
                        next.push((m, p, outs));
                    }
                }
            }
            frontier = next;
        }
        None
    }

    /// Takes the unlogged steps `path` found at `line`; false if the machine refuses one (it
    /// cannot: the search took them on a copy).
    pub(super) fn take_unlogged(&mut self, path: Vec<M::Input>, line: usize) -> bool {
        path.into_iter().all(|input| {
            self.supplied(&input);
            self.apply(input, line).is_ok()
        })
    }
}
