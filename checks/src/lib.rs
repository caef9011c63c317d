//! The turnfence verification suite: the release gate over the turn machine, the lab's event
//! vocabulary, the recorder a Rust system writes its trace with, and (in `main.rs`) the thin
//! `turnfence` CLI.

pub mod adapter;
pub mod explore;
pub mod fuzz;
pub mod gate;
pub mod junit;
pub mod lab;
pub mod recorder;
pub mod sync;
pub mod trace;
