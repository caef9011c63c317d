//! The turnfence verification suite: the release gate over the turn machine, the lab's event
//! vocabulary, and (in `main.rs`) the thin `turnfence` CLI.

pub mod adapter;
pub mod explore;
pub mod fuzz;
pub mod gate;
pub mod lab;
pub mod sync;
pub mod trace;

/// Whether this build of the CLI can plant a flaw (`turnfence fuzz/explore/replay --flaw`): only
/// with this crate's own `flaws` feature, which a person asks for (`--features flaws`) and no
/// dependency can turn on. The model's planted machines are types of their own, so a build
/// without it contains none of their code. The gate reports this value in its environment block.
pub const FLAWS_COMPILED: bool = cfg!(feature = "flaws");
