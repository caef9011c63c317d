//! The threads and locks the concurrency adapter uses: `std`'s, or loom's under `--cfg loom`, so
//! the same adapter code runs in production-like stress tests and under loom's exhaustive
//! interleavings (as tokio's `src/loom` does).

#[cfg(loom)]
pub use loom::sync::atomic::{AtomicBool, Ordering};
#[cfg(loom)]
pub use loom::sync::{Arc, Mutex, MutexGuard};
#[cfg(loom)]
pub use loom::thread;

#[cfg(not(loom))]
pub use std::sync::atomic::{AtomicBool, Ordering};
#[cfg(not(loom))]
pub use std::sync::{Arc, Mutex, MutexGuard};
#[cfg(not(loom))]
pub use std::thread;
