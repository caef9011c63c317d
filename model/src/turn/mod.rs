//! The turn machine (SPEC §2): one conversation session — its turns and generations, child work
//! and the cancel tree, the delivery gate and the playback buffer, deadlines and budgets, tools
//! with checkpoints and commits, the stream store, the client cursor, and stop requests.

mod flaw;
pub mod invariants;
mod machine;
mod misuse;
mod output;
mod profile;
pub mod rename;
pub mod state;
mod types;

pub use flaw::Flaw;
pub use invariants::{Invariant, Monitor, Step, Violation};
pub use machine::*;
pub use misuse::Misuse;
pub use output::*;
pub use profile::{Interruption, Profile, FALSE_INTERRUPTION_TIMEOUT_MS, MIN_INTERRUPTION_MS};
pub use types::*;
