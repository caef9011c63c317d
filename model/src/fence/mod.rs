//! The fence machine (SPEC §3): a supervisor's acceptance-fence table, the worker↔supervisor
//! transport with its faults, and the worker's loop-level verdicts.

mod flaw;
mod id;
pub mod invariants;
mod machine;
mod misuse;
pub mod rename;
pub mod table;
mod types;

pub use flaw::Flaw;
pub use invariants::{Invariant, Monitor, Step, Violation};
pub use machine::*;
pub use misuse::Misuse;
pub use types::*;
