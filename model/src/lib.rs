//! The executable specification of turnfence: pure state machines of conversational-agent
//! turns (and, beside them, acceptance fences), their inputs, outputs and named invariants.
//!
//! # Purity
//!
//! Nothing in this crate does IO or observes the world: no clock, no threads, no `std::sync`,
//! no files, no sockets, no environment, no randomness. Time is data — every input carries `at`,
//! in virtual milliseconds — and a machine only ever reacts to the inputs it is handed. The
//! crate's `clippy.toml` forbids the APIs that would break this, and CI checks that the crate
//! depends on serde, the data-structure crates that keep its states cheap (arrayvec,
//! compact_str, litemap) and a hasher under a fixed seed (foldhash) alone.
//!
//! # Errors by blame
//!
//! * A refusal the real system would give (a stop for a finished turn, a late delta, a resume from
//!   an unknown cursor) is an [`turn::Output`].
//! * A caller's mistake (time going backwards, an unknown turn, a child reported twice) is a
//!   [`turn::Misuse`]: nothing changes but the clock, which still moves to the input's `at`
//!   (what fell due by then happened — time passing is nobody's mistake).
//! * A broken property is a [`Violation`] naming the invariant and the ids involved.
//!
//! No input sequence makes a machine panic.
//!
//! # One interface
//!
//! Both machines — the turn machine and the fence machine — implement [`Machine`] (`handle`,
//! `poll_output`, `poll_timeout`, a fingerprint of the state) with a [`Monitor`] of their named
//! [`Invariant`]s; [`run`] and [`step`] record any machine's run as [`Step`]s. Every checker in
//! `turnfence-checks` drives this interface and nothing else of a machine. Each machine's types
//! are named by their role inside its module: `turn::Input`, `fence::Input`, `turn::Monitor`,
//! `fence::Monitor`, …; the machines themselves are `TurnMachine` and `FenceMachine`.
//!
//! ```
//! use turnfence_model::turn::{Input, InputKind, Mode, Output, StopAnswer, TurnMachine};
//! use turnfence_model::{check_all, run};
//!
//! let at = |ms, kind| Input::new(ms, kind);
//! let inputs = [
//!     at(0, InputKind::Accept { turn: "t1".into(), generation: 1, mode: Mode::Text, deadline_ms: None, budget: None, interruptible: true }),
//!     at(9, InputKind::Stop { turn: "t1".into(), request_id: "r1".into() }),
//! ];
//! let (steps, misuse) = run(&mut TurnMachine::new(), &inputs);
//! assert!(misuse.is_none());
//! // The stop is answered and the turn, with nothing running, ends cancelled.
//! assert!(steps[1].outputs.contains(&Output::StopAnswered {
//!     turn: "t1".into(),
//!     request_id: "r1".into(),
//!     answer: StopAnswer::Requested,
//! }));
//! assert!(check_all::<TurnMachine>(&steps).is_empty());
//! ```
//!
//! # Planted flaws
//!
//! Each machine takes its planted flaw as a type parameter. `TurnMachine` is
//! `TurnMachine<Sound>`: it breaks no rule, and every check of a flaw in its code is a constant
//! `false` that compiles away. [`Plantable::with_flaw`] makes a `TurnMachine<Planted<turn::Flaw>>`,
//! a machine of its own type with one rule broken, so the suite can prove it catches each. No
//! cargo feature is involved, so no build turns a flaw on by unifying features: a binary holds a
//! planted machine only if its own code names one.

/// One public function per named invariant of a machine's module, each running the module's
/// `Monitor` over a recorded run with that invariant alone; and the module's `Violation` and
/// `Step`, the types they speak in.
macro_rules! named {
    ($($(#[$doc:meta])* $name:ident => $inv:ident;)*) => {
        /// A broken invariant of this machine.
        pub type Violation = $crate::Violation<Invariant>;

        /// One input and the outputs it caused.
        pub type Step = $crate::Step<Input, Output>;

        $(
            $(#[$doc])*
            pub fn $name(steps: &[Step]) -> Vec<Violation> {
                Monitor::only(Invariant::$inv).check(steps)
            }
        )*
    };
}

/// The [`Monitor`] interface of a machine module's `Monitor`, over the module's `Input`, `Output`
/// and `Invariant`: its `findings`, its handlers (`on_input`, `on_output`, `on_end_step`), and a
/// fingerprint of the memory fields named (both machines judge a run's end at its last step's
/// end, so neither needs `Monitor::finish`). Also
/// its own `violate` (at the monitor's `now`) and `reach`, for the handlers.
macro_rules! monitor {
    (fingerprint: $($field:ident),+;) => {
        impl $crate::Monitor for Monitor {
            type Input = Input;
            type Output = Output;
            type Invariant = Invariant;

            fn findings(&self) -> &$crate::Findings<Invariant> {
                &self.findings
            }

            fn findings_mut(&mut self) -> &mut $crate::Findings<Invariant> {
                &mut self.findings
            }

            fn input(&mut self, input: &Input) {
                self.on_input(input);
            }

            fn output(&mut self, output: &Output) {
                self.on_output(output);
            }

            fn end_step(&mut self) {
                self.on_end_step();
            }

            fn fingerprint<H: std::hash::Hasher>(&self, h: &mut H) {
                use std::hash::Hash;
                $(self.$field.hash(h);)+
            }

            fn refresh_fingerprint(&mut self) {
                self.refresh_parts();
            }

            fn restore_from(&mut self, source: &Monitor) {
                self.restore_parts_from(source);
            }
        }

        impl Monitor {
            pub(super) fn violate(
                &mut self,
                invariant: Invariant,
                ids: &[&str],
                message: impl Into<$crate::said::Said>,
            ) {
                self.findings.violate(invariant, self.now, ids, message);
            }

            pub(super) fn reach(&mut self, invariant: Invariant) {
                self.findings.reach(invariant);
            }
        }
    };
}

/// The [`Machine`] interface of a machine module's machine, which is the same for each: the
/// machine holds its state (whose clock is `now`), its unread outputs and its plant; every input
/// first moves the clock (what falls due by then happens: the `due` method), then is validated,
/// then applied; the next instant something happens is the `timeout` method's; the fingerprint
/// hashes the state. Also the machine with a flaw planted ([`Plantable`]), the sound one
/// (`new`), a look at the state (named as its field), and `emit`.
macro_rules! machine {
    (
        $machine:ident $name:literal { $field:ident: $state:ty }
        due: $due:ident, timeout: $timeout:ident, monitor: $monitor:ident, planted: $planted:ident
    ) => {
        impl<P: $crate::Plant<Flaw>> $crate::Machine for $machine<P> {
            type Input = Input;
            type Output = Output;
            type Misuse = Misuse;
            type Invariant = Invariant;
            type Monitor = Monitor;

            const NAME: &'static str = $name;

            fn advance_to(&mut self, at: $crate::Millis) -> Result<(), Misuse> {
                if at < self.$field.now {
                    return Err(Misuse::TimeWentBackwards {
                        expected_at_least: self.$field.now,
                        got: at,
                    });
                }
                self.$field.now = at;
                self.$due();
                Ok(())
            }

            fn handle(&mut self, input: &Input) -> Result<(), Misuse> {
                self.advance_to(input.at)?;
                self.validate(&input.kind)?;
                self.apply(&input.kind);
                Ok(())
            }

            fn poll_output(&mut self) -> Option<Output> {
                self.outputs.pop_front()
            }

            fn poll_timeout(&self) -> Option<$crate::Millis> {
                self.$timeout()
            }

            fn fingerprint<H: std::hash::Hasher>(&self, h: &mut H) {
                use std::hash::Hash;
                self.$field.hash(h);
            }

            fn refresh_fingerprint(&mut self) {
                self.$field.refresh_parts();
            }

            fn restore_from(&mut self, source: &Self) {
                let $machine {
                    $field,
                    outputs,
                    plant,
                } = self;
                $field.restore_parts_from(&source.$field);
                outputs.clone_from(&source.outputs);
                plant.clone_from(&source.plant);
            }

            fn monitor(&self) -> Monitor {
                self.$monitor()
            }
        }

        impl $crate::Plantable for $machine {
            type Flaw = Flaw;
            type Planted = $machine<$crate::Planted<Flaw>>;

            fn with_flaw(flaw: Flaw) -> $machine<$crate::Planted<Flaw>> {
                let mut machine = $machine {
                    plant: $crate::Planted::new(flaw),
                    ..$machine::default()
                };
                machine.$planted(flaw);
                machine
            }
        }

        impl $machine {
            /// The sound machine, fresh.
            pub fn new() -> $machine {
                $machine::default()
            }
        }

        impl<P: $crate::Plant<Flaw>> $machine<P> {
            pub fn $field(&self) -> &$state {
                &self.$field
            }

            fn emit(&mut self, output: Output) {
                self.outputs.push_back(output);
            }
        }
    };
}

/// A machine module's planted flaws: the `Flaw` enum (serde: each by its snake_case name), each
/// variant with the invariant it breaks first, as the [`Flaw`] interface's `ALL` and `breaks`.
macro_rules! flaws {
    ($($(#[$doc:meta])* $name:ident => $breaks:ident,)+) => {
        /// A rule of the machine, broken on purpose.
        #[derive(
            Clone,
            Copy,
            Debug,
            PartialEq,
            Eq,
            Hash,
            PartialOrd,
            Ord,
            serde::Serialize,
            serde::Deserialize,
        )]
        #[serde(rename_all = "snake_case")]
        pub enum Flaw {
            $($(#[$doc])* $name,)+
        }

        impl $crate::Flaw for Flaw {
            type Invariant = Invariant;

            const ALL: &'static [Flaw] = &[$(Flaw::$name),+];

            /// The invariant this flaw breaks first.
            fn breaks(self) -> Invariant {
                match self {
                    $(Flaw::$name => Invariant::$breaks,)+
                }
            }
        }
    };
}

/// A machine module's `Misuse` (serde: tagged `misuse`, each by its snake_case name), each
/// caller's mistake with the message its `Display` shows; every machine's two come first and
/// last: time going backwards, a bound of the model reached.
macro_rules! misuse {
    ($($(#[$doc:meta])* $name:ident $({ $($field:ident: $ty:ty),+ })? => $message:literal,)+) => {
        /// An input the machine refuses as the caller's mistake. The state is unchanged.
        #[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
        #[serde(tag = "misuse", rename_all = "snake_case")]
        pub enum Misuse {
            /// Inputs must come in non-decreasing virtual time.
            TimeWentBackwards {
                expected_at_least: $crate::Millis,
                got: $crate::Millis,
            },
            $($(#[$doc])* $name $({ $($field: $ty),+ })?,)+
            /// A bound of the model was reached (TigerBeetle's "a limit on everything").
            LimitReached { what: &'static str, limit: usize },
        }

        impl std::fmt::Display for Misuse {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match self {
                    Misuse::TimeWentBackwards {
                        expected_at_least,
                        got,
                    } => write!(
                        f,
                        "time went backwards: expected at >= {expected_at_least}, got {got}"
                    ),
                    $(Misuse::$name $({ $($field),+ })? => write!(f, $message),)+
                    Misuse::LimitReached { what, limit } => {
                        write!(f, "limit reached: at most {limit} {what}")
                    }
                }
            }
        }

        impl std::error::Error for Misuse {}
    };
}

/// `Clone` for a struct, field by field, with a `clone_from` that overwrites each field in
/// place (`Clone::clone_from`), so that the buffers a value already holds are kept: the
/// explorer clones a state into the one it stepped last, and a state already seen then costs no
/// allocation. The fields named after `maps` are [`litemap::LiteMap`]s (their own `clone_from`
/// clones afresh), copied by [`clone_map_from`]; the fields named after `parts` are [`Hashed`]
/// parts, and for a struct that has them the macro also makes `refresh_parts` (each part keeps
/// its hash: the machine's and the monitor's `refresh_fingerprint`) and `restore_parts_from`
/// (a copy for a scratch state: every field copied in place, each part sharing the source's
/// value and keeping the one it replaces to copy the next change into; `restore_from`). The
/// struct is also [`CopyInPlace`] (its `clone_from`), so a part may hold it. Every field is named: one left out does not compile (the patterns in
/// `clone_from` and `restore_parts_from` name them all).
macro_rules! clone_in_place {
    ($ty:ident { $($field:ident),* $(,)? } $(maps { $($map:ident),+ $(,)? })?) => {
        clone_in_place!(<> $ty { $($field),* } $(maps { $($map),+ })?);
    };
    ($ty:ident { $($field:ident),* $(,)? } $(maps { $($map:ident),+ $(,)? })?
        parts { $($part:ident),+ $(,)? }) => {
        clone_in_place!(<> $ty { $($field,)* $($part),+ } $(maps { $($map),+ })?);

        impl $ty {
            /// Keeps each part's hash, hashing the ones borrowed mutably since they were kept.
            pub(crate) fn refresh_parts(&mut self) {
                $(self.$part.refresh();)+
            }

            /// Makes this copy of `source`, changed since it was copied, `source` again: every
            /// field copied in place but the parts it did not borrow mutably, which still are
            /// `source`'s ([`Hashed::restore_from`]).
            pub(crate) fn restore_parts_from(&mut self, source: &Self) {
                let $ty { $($field,)* $($($map,)+)? $($part,)+ } = self;
                $($field.clone_from(&source.$field);)*
                $($($crate::clone_map_from($map, &source.$map);)+)?
                $($part.restore_from(&source.$part);)+
            }
        }
    };
    (<$($g:ident),*> $ty:ident { $($field:ident),* $(,)? } $(maps { $($map:ident),+ $(,)? })?) => {
        impl<$($g: Clone),*> Clone for $ty<$($g),*> {
            fn clone(&self) -> Self {
                $ty {
                    $($field: self.$field.clone(),)*
                    $($($map: self.$map.clone(),)+)?
                }
            }

            fn clone_from(&mut self, source: &Self) {
                let $ty { $($field,)* $($($map,)+)? } = self;
                $($field.clone_from(&source.$field);)*
                $($($crate::clone_map_from($map, &source.$map);)+)?
            }
        }

        impl<$($g: Clone),*> $crate::CopyInPlace for $ty<$($g),*> {
            fn copy_from(&mut self, source: &Self) {
                self.clone_from(source);
            }
        }
    };
}

/// Makes `dst` equal to `src` keeping `dst`'s buffer, and each entry's value overwritten in
/// place where `dst` had an entry at that position (its `clone_from`): no allocation when `dst`
/// had as many entries, of values that hold as much.
pub(crate) fn clone_map_from<K: Clone, V: Clone>(
    dst: &mut litemap::LiteMap<K, V>,
    src: &litemap::LiteMap<K, V>,
) {
    let mut entries = std::mem::take(dst).into_tuple_vec();
    entries.truncate(src.len());
    let (head, tail) = src.as_slice().split_at(entries.len());
    for ((k, v), (source_k, source_v)) in entries.iter_mut().zip(head) {
        k.clone_from(source_k);
        v.clone_from(source_v);
    }
    entries.extend_from_slice(tail);
    // `src`'s entries, in `src`'s order: sorted by key.
    *dst = litemap::LiteMap::from_sorted_store_unchecked(entries);
}

pub mod fence;
mod hashed;
mod machine;
mod plant;
pub mod said;
pub mod turn;

pub use machine::{
    check_all, drain, reached, run, step, Findings, Invariant, Machine, Monitor, Ran, Step, StepOf,
    TickKind, Timed, Timing, Violation,
};

pub use hashed::{CopyInPlace, Hashed};
pub use plant::{Flaw, Plant, Plantable, Planted, Sound};

/// Virtual time in milliseconds since the start of a session.
pub type Millis = u64;

/// The traits, in scope without their names: `use turnfence_model::prelude::*;` lets a caller
/// call `handle`, `poll_output`, a monitor's `input` or an invariant's `name` on the concrete
/// types (`turn::Monitor`, `fence::Invariant`, …) without a clash of names.
pub mod prelude {
    pub use crate::{
        Flaw as _, Invariant as _, Machine as _, Monitor as _, Plant as _, Plantable as _,
    };
}
