//! Exhaustive bounded exploration: breadth-first over every input a machine can take within
//! named bounds, one state per distinct (machine state, monitor memory) fingerprint, every
//! invariant checked on every transition, and the first violation found is a shortest
//! counterexample (breadth-first order). Coverage records which (phase, input) pairs and reply
//! kinds the bounds reach, so a bound that hides a behaviour fails the build.

pub mod fence;
pub mod turn;

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::hash::{DefaultHasher, Hasher};

use crate::fuzz::{Broken, Target};

/// A machine the explorer can walk.
pub trait Explorable: Target {
    type Monitor: Clone;
    type Bounds: Clone;

    fn monitor() -> Self::Monitor;

    /// Feeds one recorded step to the monitor; returns what it found broken.
    fn observe(
        mon: &mut Self::Monitor,
        input: &Self::Input,
        outputs: &[Self::Output],
    ) -> Vec<Broken>;

    /// The invariants the monitor has seen put to the test.
    fn reached_by(mon: &Self::Monitor) -> Vec<&'static str>;

    /// Every input to try from this state, within the bounds.
    fn alphabet(m: &Self::Machine, bounds: &Self::Bounds) -> Vec<Self::Input>;

    /// A fingerprint of the machine's state and the monitor's memory.
    fn fingerprint(m: &Self::Machine, mon: &Self::Monitor) -> u64;

    /// The coverage points one taken input reached (its outputs included).
    fn covered(
        before: &Self::Machine,
        input: &Self::Input,
        outputs: &[Self::Output],
    ) -> Vec<String>;
}

/// Hashes into a `u64` with a fixed key (the same on every run and machine).
pub fn hasher() -> DefaultHasher {
    DefaultHasher::new()
}

/// What an exploration found.
#[derive(Clone, Debug)]
pub struct Explored<I> {
    pub states: usize,
    pub transitions: usize,
    pub depth: usize,
    /// The exploration stopped at the depth bound with states left to expand.
    pub truncated: bool,
    pub coverage: BTreeSet<String>,
    pub reached: BTreeSet<&'static str>,
    /// The first violation, with the inputs that lead to it (a shortest such path).
    pub counterexample: Option<(Vec<I>, Broken)>,
    /// When truncated: a path to a state left unexpanded at the depth bound (what keeps growing).
    pub deepest: Vec<I>,
}

struct Node<M, Mon, I> {
    machine: M,
    monitor: Mon,
    index: usize,
    depth: usize,
    _input: std::marker::PhantomData<I>,
}

/// Explores breadth-first from a machine made by `make`, up to `max_depth` inputs. Stops at the
/// first violation of `target` (any invariant if `None`). `progress` is called once per depth.
pub fn explore<T: Explorable>(
    make: &dyn Fn() -> T::Machine,
    bounds: &T::Bounds,
    max_depth: usize,
    target: Option<&str>,
    progress: &mut dyn FnMut(usize, usize, usize),
) -> Explored<T::Input> {
    let start = make();
    let monitor = T::monitor();
    let mut seen: HashMap<u64, ()> = HashMap::new();
    seen.insert(T::fingerprint(&start, &monitor), ());
    // For each visited state: its parent and the input that led to it.
    let mut parents: Vec<(usize, Option<T::Input>)> = vec![(0, None)];
    let mut frontier = VecDeque::new();
    frontier.push_back(Node::<T::Machine, T::Monitor, T::Input> {
        machine: start,
        monitor,
        index: 0,
        depth: 0,
        _input: std::marker::PhantomData,
    });
    let mut result = Explored {
        states: 1,
        transitions: 0,
        depth: 0,
        truncated: false,
        coverage: BTreeSet::new(),
        reached: BTreeSet::new(),
        counterexample: None,
        deepest: Vec::new(),
    };
    let mut level = 0;
    while let Some(node) = frontier.pop_front() {
        if node.depth != level {
            progress(node.depth, frontier.len() + 1, result.states);
            level = node.depth;
        }
        result.depth = result.depth.max(node.depth);
        if node.depth >= max_depth {
            if !result.truncated {
                result.deepest = path_to(&parents, node.index);
            }
            result.truncated = true;
            continue;
        }
        for input in T::alphabet(&node.machine, bounds) {
            let mut m = node.machine.clone();
            let (steps, ok) = T::step(&mut m, &input);
            if !ok {
                continue;
            }
            result.transitions += 1;
            let mut mon = node.monitor.clone();
            let mut broken = Vec::new();
            for (i, o) in &steps {
                broken.extend(T::observe(&mut mon, i, o));
            }
            let outputs: Vec<T::Output> = steps.iter().flat_map(|(_, o)| o.clone()).collect();
            result
                .coverage
                .extend(T::covered(&node.machine, &input, &outputs));
            result.reached.extend(T::reached_by(&mon));
            if let Some(b) = broken
                .into_iter()
                .find(|b| target.is_none_or(|t| b.invariant == t))
            {
                let mut path = path_to(&parents, node.index);
                path.push(input.clone());
                result.counterexample = Some((path, b));
                return result;
            }
            let fp = T::fingerprint(&m, &mon);
            if seen.insert(fp, ()).is_none() {
                parents.push((node.index, Some(input)));
                result.states += 1;
                frontier.push_back(Node {
                    machine: m,
                    monitor: mon,
                    index: parents.len() - 1,
                    depth: node.depth + 1,
                    _input: std::marker::PhantomData,
                });
            }
        }
    }
    progress(level + 1, 0, result.states);
    result
}

/// The inputs from the start to a visited state.
fn path_to<I: Clone>(parents: &[(usize, Option<I>)], mut at: usize) -> Vec<I> {
    let mut path = Vec::new();
    while at != 0 {
        let (parent, input) = &parents[at];
        path.extend(input.clone());
        at = *parent;
    }
    path.reverse();
    path
}

/// Coverage points that must be reached, and the ones documented as impossible, with reasons.
pub struct Coverage {
    pub required: Vec<String>,
    pub impossible: BTreeMap<String, &'static str>,
}

impl Coverage {
    /// The required points an exploration did not reach and that are not on the impossible
    /// list; and the impossible ones it did reach (the list is wrong).
    pub fn gaps(&self, reached: &BTreeSet<String>) -> (Vec<String>, Vec<String>) {
        let missing = self
            .required
            .iter()
            .filter(|p| !reached.contains(*p) && !self.impossible.contains_key(*p))
            .cloned()
            .collect();
        let wrong = self
            .impossible
            .keys()
            .filter(|p| reached.contains(*p))
            .cloned()
            .collect();
        (missing, wrong)
    }
}

/// Finishes a hasher.
pub fn finish(h: DefaultHasher) -> u64 {
    h.finish()
}
