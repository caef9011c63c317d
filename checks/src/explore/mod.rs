//! Exhaustive bounded exploration: breadth-first over every input a machine can take within
//! named bounds, one state per distinct (machine state, monitor memory) fingerprint, every
//! invariant checked on every transition, and the first violation found is a shortest
//! counterexample (breadth-first order). Coverage records which (phase, input) pairs and reply
//! kinds the bounds reach, so a bound that hides a behaviour fails the build. With symmetry
//! (a bound set's opt-in) a state is known by its class under a renaming of interchangeable
//! names (`symmetry`), and only one state of each class is expanded. With sleep sets (a run's
//! opt-in: `reduce`) an input is not taken where an independent one taken first reaches the same
//! successor (`sleep`): fewer transitions, the same states and verdict.

mod coverage;
mod explored;
pub mod fence;
mod fingerprint;
pub mod sleep;
pub mod symmetry;
pub mod turn;
mod turn_footprint;
pub mod turn_symmetry;

pub use coverage::Coverage;
pub use explored::Explored;
pub use fingerprint::{fingerprint, hasher};
pub use sleep::Footprint;
use sleep::{known_before, met_again, Asleep, Known};

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};

use rayon::prelude::*;
use serde::de::DeserializeOwned;
use serde::Serialize;
use turnfence_model::{Machine, Monitor};

use crate::shared::take;
use turnfence_model::Violation;

/// What exploration needs of a machine beyond the [`Machine`] trait: bounds, an alphabet and
/// coverage points. (States are expanded on every core: a machine, its monitor and its inputs
/// cross threads.)
pub trait Explore:
    Machine<Input: Send + Sync, Monitor: Send + Sync, Invariant: Send + Sync> + Send + Sync
{
    /// How far an exploration goes (named, serializable: `--bounds` takes them as JSON).
    type Bounds: Clone + Serialize + DeserializeOwned + Sync;

    /// The bound sets CI explores exhaustively; coverage is their union.
    fn ci_bounds() -> Vec<(&'static str, Self::Bounds)>;

    /// Deeper bound sets, each exhaustive, that CI explores too (`ci/explore.sh`, their counts
    /// pinned apart) but that are too slow or too large to be the default (`turnfence explore
    /// --deep` adds them to the CI sets). None by default.
    fn deep_bounds() -> Vec<(&'static str, Self::Bounds)> {
        Vec::new()
    }

    /// Larger bounds for hunting a flaw (not exhaustive: it stops at the first violation).
    fn hunt_bounds() -> Self::Bounds;

    /// The machine as the bounds want it made (a turn machine's profile, where they name one);
    /// by default as it was made.
    fn bounded(self, _: &Self::Bounds) -> Self {
        self
    }

    /// The inputs every exploration starts with, from a fresh machine (none by default).
    fn prelude() -> Vec<Self::Input> {
        Vec::new()
    }

    /// Every input to try from this state, within the bounds.
    fn alphabet(&self, bounds: &Self::Bounds) -> Vec<Self::Input>;

    /// The coverage points one taken input reached (its outputs included), from the state before:
    /// each handed to `point` as the pieces it is joined from (a point of static pieces then
    /// costs no allocation unless it is new: the explorer's hot path).
    fn covered(
        &self,
        input: &Self::Input,
        outputs: &[Self::Output],
        point: &mut dyn FnMut(&[&str]),
    );

    /// The points the bounds must reach between them, and the ones impossible, with reasons.
    fn coverage() -> Coverage;

    /// Whether the bounds ask for symmetry reduction: one explored state per class of states
    /// that a renaming of interchangeable names maps onto each other. None by default.
    fn symmetry(_: &Self::Bounds) -> bool {
        false
    }

    /// The bounds with symmetry reduction on, if the machine has interchangeable names.
    fn with_symmetry(_: &Self::Bounds) -> Option<Self::Bounds> {
        None
    }

    /// A fingerprint of the state's class under that renaming: the same for two states one
    /// renaming maps onto each other, different for any two it does not (up to a hash
    /// collision). By default the state's own [`fingerprint`].
    fn canonical_fingerprint(&self, monitor: &Self::Monitor) -> u64 {
        fingerprint(self, monitor)
    }

    /// What `input` reads and writes of this state, its monitor's memory and what the alphabet
    /// offers, as parts of the machine's own naming (`sleep`): two inputs whose footprints do not
    /// meet must commute here (tested at every state of the CI bound sets). By default every
    /// part: no two inputs independent, nothing left out.
    fn footprint(&self, _input: &Self::Input, _bounds: &Self::Bounds) -> Footprint {
        Footprint::ALL
    }
}

/// The machine after its [`Explore::prelude`], and a monitor that saw it: where exploration starts.
pub fn start<M: Explore>(make: &dyn Fn() -> M) -> (M, M::Monitor) {
    let mut machine = make();
    let mut monitor = machine.monitor();
    for input in M::prelude() {
        for step in take(&mut machine, &input).0 {
            monitor.observe(&step);
        }
    }
    (machine, monitor)
}

/// An explorer state: a machine and its monitor, in one allocation.
type Stored<M> = Box<(M, <M as Machine>::Monitor)>;

/// A state still to expand: the machine and its monitor, boxed (moved from the core that made
/// it to the frontier and back as one pointer), its place among the visited states and its depth.
struct Node<M: Machine> {
    state: Stored<M>,
    index: usize,
    depth: usize,
    /// The inputs asleep here (not to be taken), with sleep sets on; none without.
    asleep: Box<[M::Input]>,
    /// A state met again with fewer inputs asleep: only these (the ones that woke) are taken.
    only: Option<Box<[M::Input]>>,
}

/// What an exploration of machine `M` found.
pub type ExploredBy<M> = Explored<<M as Machine>::Input, <M as Machine>::Invariant>;

/// Explores breadth-first from a machine made by `make` (after its [`Explore::prelude`]), up to
/// `max_depth` inputs. Stops at the first violation of `target` (any invariant if `None`);
/// `progress` is called once per depth. Counterexample paths start after the prelude.
pub fn explore<M: Explore>(
    make: &dyn Fn() -> M,
    bounds: &M::Bounds,
    max_depth: usize,
    target: Option<M::Invariant>,
    progress: &mut dyn FnMut(usize, usize, usize),
) -> ExploredBy<M> {
    explore_with(make, bounds, max_depth, target, false, progress)
}

/// [`explore`], with sleep sets if `reduce` (and the bounds ask for no symmetry, which they do
/// not combine with: a class's states name their inputs differently): the same states and
/// verdict, fewer transitions taken; a counterexample is then one found, not a shortest.
pub fn explore_with<M: Explore>(
    make: &dyn Fn() -> M,
    bounds: &M::Bounds,
    max_depth: usize,
    target: Option<M::Invariant>,
    reduce: bool,
    progress: &mut dyn FnMut(usize, usize, usize),
) -> ExploredBy<M> {
    let (start, monitor) = start(&|| make().bounded(bounds));
    // What the prelude reached is reached (a successor reports only what its step adds).
    let reached = monitor.reached().clone();
    // Under symmetry a state is known by its class; the frontier and the paths keep the states
    // and inputs as they were, so a counterexample replays as recorded.
    let symmetric = M::symmetry(bounds);
    let reduce = reduce && !symmetric;
    let key = |m: &M, mon: &M::Monitor| {
        if symmetric {
            m.canonical_fingerprint(mon)
        } else {
            fingerprint(m, mon)
        }
    };
    let mut seen: HashSet<u64, foldhash::fast::FixedState> = HashSet::default();
    seen.insert(key(&start, &monitor));
    // For each visited state: its parent and the input that led to it, as its place in the
    // parent's alphabet (a path is replayed from the start when one is wanted: sixteen bytes a
    // state, where the input itself is ten times that).
    let mut parents: Vec<(usize, u32)> = vec![(0, 0)];
    // With sleep sets: the states expanded (or to be) with inputs asleep, by key: their place
    // among the visited states and those inputs (a state not here had none asleep).
    let mut asleep: Asleep<M::Input> = HashMap::default();
    let origin = start.clone();
    // The states still to expand, in breadth-first order, in chunks of at most EXPANDED_AT_ONCE
    // states of one depth: a chunk is expanded at once, and a new state is moved once, into the
    // chunk at the back.
    let mut frontier: VecDeque<Vec<Node<M>>> = VecDeque::new();
    frontier.push_back(vec![Node {
        state: Box::new((start, monitor)),
        index: 0,
        depth: 0,
        asleep: Box::new([]),
        only: None,
    }]);
    let mut result = Explored {
        states: 1,
        transitions: 0,
        depth: 0,
        truncated: false,
        coverage: BTreeSet::new(),
        reached,
        counterexample: None,
        deepest: Vec::new(),
        reduced: reduce,
    };
    // Level by level: the states of one depth are expanded on every core (rayon), a chunk of
    // them at a time (a chunk never spans two depths), and their successors then taken in order
    // — the order a single thread takes them in — so the counts, the states kept and the first
    // counterexample are the same whatever the number of threads.
    let mut level = 0;
    while let Some(chunk) = frontier.pop_front() {
        let Some(first) = chunk.first() else {
            continue;
        };
        let depth = first.depth;
        if depth != level {
            let waiting = chunk.len() + frontier.iter().map(Vec::len).sum::<usize>();
            progress(depth, waiting, result.states);
            level = depth;
        }
        result.depth = result.depth.max(depth);
        if depth >= max_depth {
            result.deepest = path_to(&origin, bounds, &parents, first.index, None);
            result.truncated = true;
            break;
        }
        let known = Known {
            seen: &seen,
            asleep: reduce.then_some(&asleep),
            coverage: &result.coverage,
            reached: &result.reached,
        };
        // Each state, once expanded, is kept by the core that expanded it to copy a new state
        // into (or dropped there, beside the duplicates it led to): memory is reused by the
        // thread that freed it, at once.
        let mut expanded: Vec<(usize, Vec<Successor<M>>)> = chunk
            .into_par_iter()
            .map_init(Scratch::default, |scratch, node| {
                let successors = expand(&node, bounds, &key, &known, scratch);
                scratch.keep(node.state);
                (node.index, successors)
            })
            .collect();
        for (index, successors) in &mut expanded {
            let index = *index;
            for s in successors {
                result.transitions += 1;
                result.coverage.extend(s.covered.drain(..));
                result.reached.extend(s.reached.drain(..));
                if let Some(b) = s
                    .broken
                    .drain(..)
                    .find(|b| target.is_none_or(|t| b.invariant == t))
                {
                    let path = path_to(&origin, bounds, &parents, index, Some(s.ordinal));
                    result.counterexample = Some((path, b));
                    return result;
                }
                // A successor found twice within the chunk stays where it is, and is dropped
                // with the others below.
                let Some(&(_, key)) = s.next.as_ref() else {
                    continue;
                };
                let new = seen.insert(key);
                let Some((state, _)) = s.next.take() else {
                    continue;
                };
                let node = if new {
                    parents.push((index, s.ordinal));
                    result.states += 1;
                    let index = parents.len() - 1;
                    if !s.asleep.is_empty() {
                        asleep.insert(key, (index, s.asleep.clone()));
                    }
                    Node {
                        state,
                        index,
                        depth: depth + 1,
                        asleep: std::mem::take(&mut s.asleep),
                        only: None,
                    }
                } else {
                    // Met again (only with sleep sets is a state seen before kept): what slept
                    // on its first paths but not on this one is taken now.
                    let Some(again) = met_again(&mut asleep, key, &s.asleep) else {
                        continue;
                    };
                    Node {
                        state,
                        index: again.index,
                        depth: depth + 1,
                        asleep: again.asleep,
                        only: Some(again.woke),
                    }
                };
                match frontier.back_mut() {
                    Some(back) if back.len() < EXPANDED_AT_ONCE && back[0].depth == depth + 1 => {
                        back.push(node)
                    }
                    _ => {
                        let mut fresh = Vec::with_capacity(EXPANDED_AT_ONCE);
                        fresh.push(node);
                        frontier.push_back(fresh);
                    }
                }
            }
        }
        // What is left (the successors found twice, the inputs), dropped on every core.
        expanded.into_par_iter().for_each(drop);
    }
    progress(level + 1, 0, result.states);
    result
}

/// How many states of one depth are expanded together before their successors are taken (a
/// frontier chunk): it bounds the successors held at once (those new before the chunk) to this
/// many states' worth. A successor seen first within the chunk is held boxed until the chunk's
/// successors are taken, so a smaller chunk holds fewer: at 1 024 the fence `queue` bounds
/// peaked at 186 MB against 4 096's 223 MB on both cores, and took less time (best of four
/// alternating runs, 0.76 s against 0.87 s; 512 was no faster).
const EXPANDED_AT_ONCE: usize = 1_024;

/// One input taken from a state: where it leads, unless that state was seen before the chunk
/// (then only what the transition covered, reached and broke is kept: most successors are such
/// duplicates, and dropping them at once keeps the chunk's memory to its new states). The input
/// itself is not kept: its place in the alphabet names it, and a counterexample's last input is
/// found again from there. A successor is small (the state boxed, only when new), so a chunk's
/// successors take little memory: held inline, a state and an input in each of the several
/// successors of 4 096 states (the chunk then) took some 20 MB a chunk, freed and taken again
/// chunk after chunk — the allocator handed the emptied pages back to the system and faulted
/// them in again.
struct Successor<M: Machine> {
    /// The input's place in the alphabet of the state it was taken from.
    ordinal: u32,
    /// The state it leads to with its monitor, and its key, unless seen before the chunk (with
    /// sleep sets: unless seen before with no more asleep than `asleep`).
    next: Option<(Stored<M>, u64)>,
    /// With sleep sets: the inputs asleep in the state it leads to.
    asleep: Box<[M::Input]>,
    /// The coverage points and the invariants it reached that were not known before the chunk.
    covered: Vec<String>,
    reached: Vec<M::Invariant>,
    broken: Vec<Violation<M::Invariant>>,
}

/// What one core expands states with, kept from state to state: the copy each input is taken
/// from, the states it expanded last, and the buffers of a transition's steps and outputs.
struct Scratch<M: Machine> {
    /// A machine and monitor to restore each state into before each input
    /// (`Machine::restore_from`: the state's parts shared, what a step changes copied into the
    /// values it replaced); none before the core's first state.
    state: Option<(M, M::Monitor)>,
    /// States this core has expanded, done with: a new state is copied into one of them in
    /// place (its parts shared), so its box takes no fresh memory.
    spare: Vec<Stored<M>>,
    /// The keys of the new states this core has kept in this chunk, with the inputs asleep in
    /// each: one met again (two inputs that commute lead to it) is not kept twice, unless with
    /// sleep sets it is met with an input awake that slept in the one kept.
    kept: HashMap<u64, Box<[M::Input]>, foldhash::fast::FixedState>,
    steps: Vec<turnfence_model::StepOf<M>>,
    outputs: Vec<M::Output>,
    /// A coverage point joined from its pieces, to look up before it is kept.
    point: String,
}

impl<M: Machine> Default for Scratch<M> {
    fn default() -> Scratch<M> {
        Scratch {
            state: None,
            spare: Vec::new(),
            kept: HashMap::default(),
            steps: Vec::new(),
            outputs: Vec::new(),
            point: String::new(),
        }
    }
}

/// How many expanded states a core keeps to copy new ones into; past that they are dropped.
/// (A core expands a state, then takes the new states it led to, so it seldom holds many.)
const SPARE_KEPT: usize = 64;

impl<M: Machine> Scratch<M> {
    /// Keeps an expanded state to copy a new one into, if there is room.
    fn keep(&mut self, state: Stored<M>) {
        if self.spare.len() < SPARE_KEPT {
            self.spare.push(state);
        }
    }

    /// A new state for the frontier: a copy of the machine and its monitor, made in place over
    /// a kept state if there is one.
    fn stored(spare: &mut Vec<Stored<M>>, (machine, monitor): (&M, &M::Monitor)) -> Stored<M> {
        match spare.pop() {
            Some(mut kept) => {
                kept.0.clone_from(machine);
                kept.1.clone_from(monitor);
                kept
            }
            None => Box::new((machine.clone(), monitor.clone())),
        }
    }
}

/// Every input of the alphabet taken from `node`, in the alphabet's order (refused ones left
/// out): the part of exploring that runs on every core.
fn expand<M: Explore>(
    node: &Node<M>,
    bounds: &M::Bounds,
    key: &(impl Fn(&M, &M::Monitor) -> u64 + Sync),
    known: &Known<M>,
    scratch: &mut Scratch<M>,
) -> Vec<Successor<M>> {
    let (machine, monitor) = &*node.state;
    let inputs = machine.alphabet(bounds);
    let mut out = Vec::with_capacity(inputs.len());
    // With sleep sets: each input's footprint here, and which inputs may sleep in a successor
    // (by place): the ones asleep here, and the ones taken so far.
    let reduce = known.asleep.is_some();
    let (prints, mut may_sleep): (Vec<Footprint>, Vec<bool>) = if reduce {
        inputs
            .iter()
            .map(|i| (machine.footprint(i, bounds), node.asleep.contains(i)))
            .unzip()
    } else {
        (Vec::new(), Vec::new())
    };
    // An input that leads back to this state takes nothing new from it, whatever slept on the
    // way: a path through a loop reaches what the path without it reaches.
    let here = reduce.then(|| key(machine, monitor));
    // Each input is taken from the scratch copy restored to the state: its parts share the
    // state's, and a step copies the ones it changes into the values the scratch had before, so
    // a successor seen before costs no allocation.
    let Scratch {
        state: scratch,
        spare,
        kept,
        steps,
        outputs,
        point,
    } = scratch;
    let reached_before = monitor.reached().len();
    // Whether the scratch's monitor may differ from this state's: it observed a step since it
    // was restored, or was never restored to this state (a refused input leaves it as it was).
    let mut observed = true;
    for (ordinal, input) in (0..).zip(&inputs) {
        let place = ordinal as usize;
        // (An input is taken once: before it is, it may sleep only if asleep here.)
        if reduce && (may_sleep[place] || !woke(node, input)) {
            continue;
        }
        let (m, mon) = match scratch {
            Some((m, mon)) => {
                m.restore_from(machine);
                if observed {
                    mon.restore_from(monitor);
                }
                (m, mon)
            }
            None => {
                let (m, mon) = scratch.insert((machine.clone(), monitor.clone()));
                (m, mon)
            }
        };
        observed = false;
        steps.clear();
        if turnfence_model::step(m, input, steps).is_err() {
            continue;
        }
        observed = true;
        let asleep: Box<[M::Input]> = if reduce {
            let asleep = (0..inputs.len())
                .filter(|&j| may_sleep[j] && prints[j].independent(prints[place]))
                .map(|j| inputs[j].clone())
                .collect();
            may_sleep[place] = true;
            asleep
        } else {
            Box::new([])
        };
        let mut broken = Vec::new();
        for step in steps.iter() {
            broken.extend(mon.observe(step));
        }
        outputs.clear();
        outputs.extend(steps.drain(..).flat_map(|s| s.outputs));
        let mut covered = Vec::new();
        machine.covered(input, outputs, &mut |pieces| {
            point.clear();
            pieces.iter().for_each(|p| point.push_str(p));
            if !known.coverage.contains(point.as_str()) && !covered.contains(point) {
                covered.push(point.clone());
            }
        });
        // Every invariant the state before had reached was known before the chunk (the
        // transition that made that state reported it), so only a step that reached more can
        // bring a new one.
        let reached = if mon.reached().len() > reached_before {
            mon.reached()
                .iter()
                .filter(|v| !known.reached.contains(v))
                .copied()
                .collect()
        } else {
            Vec::new()
        };
        // The parts the step left alone keep the hashes they were copied with: only the ones
        // it touched are hashed again.
        m.refresh_fingerprint();
        mon.refresh_fingerprint();
        let k = key(m, mon);
        // A state this core kept already in this chunk comes first in the order the successors
        // are taken in, so the one taken is always one kept.
        let next = if here == Some(k) || known_before(known, kept, k, &asleep) {
            None
        } else {
            Some((Scratch::stored(spare, (&*m, &*mon)), k))
        };
        out.push(Successor {
            ordinal,
            next,
            asleep,
            covered,
            reached,
            broken,
        });
    }
    out
}

/// Whether `input` is among the ones that woke, if `node` is a state met again (any input, if
/// not).
fn woke<M: Machine>(node: &Node<M>, input: &M::Input) -> bool {
    node.only.as_ref().is_none_or(|only| only.contains(input))
}

/// Explores every state within the bounds, with no depth bound and no progress: what tests,
/// benchmarks and CI's exhaustive runs want.
pub fn exhaustive<M: Explore>(make: &dyn Fn() -> M, bounds: &M::Bounds) -> ExploredBy<M> {
    explore(make, bounds, usize::MAX, None, &mut |_, _, _| {})
}

/// [`exhaustive`] with sleep sets: the same states and verdict, fewer transitions taken.
pub fn reduced<M: Explore>(make: &dyn Fn() -> M, bounds: &M::Bounds) -> ExploredBy<M> {
    explore_with(make, bounds, usize::MAX, None, true, &mut |_, _, _| {})
}

/// The inputs from the start to a visited state: its ancestors' places in their parents'
/// alphabets, replayed from the start (the machine is pure: the same inputs lead to the same
/// states, the ones the exploration kept); then, if given, the input at place `then` of that
/// state's alphabet.
fn path_to<M: Explore>(
    origin: &M,
    bounds: &M::Bounds,
    parents: &[(usize, u32)],
    mut at: usize,
    then: Option<u32>,
) -> Vec<M::Input> {
    let mut ordinals: Vec<u32> = then.into_iter().collect();
    while at != 0 {
        let (parent, ordinal) = parents[at];
        ordinals.push(ordinal);
        at = parent;
    }
    let mut machine = origin.clone();
    let mut path = Vec::with_capacity(ordinals.len());
    for ordinal in ordinals.into_iter().rev() {
        let input = machine
            .alphabet(bounds)
            .into_iter()
            .nth(ordinal as usize)
            .expect("a kept state's input is in its parent's alphabet");
        take(&mut machine, &input);
        path.push(input);
    }
    path
}
