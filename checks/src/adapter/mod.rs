//! The concurrency adapter: the turn machine driven the way a production turn manager drives it,
//! from several threads — the client, the VAD, the model stream, the speaker, tools — over one
//! lock (`crate::sync`, `std` or loom). Every thread's action is an input applied under the lock,
//! and what the adapter tells the world (a delta delivered, a stop answered, a frame played) is
//! recorded as an observed output. The record is then checked against the model like any trace:
//! a correct adapter conforms under every interleaving; each planted `Variant` makes a decision
//! outside the lock, as real adapters get wrong, and loom finds the interleaving that shows it.
//!
//! `record` is what both keep: what the threads did and were told, as the machine's inputs and
//! observed outputs, and its verdict against the model.
//!
//! `fence` does the same for the worker↔supervisor transport: pooled workers, a direct turn,
//! supervisor threads, and the transport's faults.

pub mod fence;
pub mod record;
pub mod turn;
