//! Small helpers more than one floor uses, kept on the lowest so each reaches them without
//! climbing: a machine's input taken as the model records it (fuzzing and exploring, siblings),
//! and a file written atomically (the gate's evidence, the fuzzer's reports, the CLI's baselines
//! and JUnit files).

use std::io;
use std::path::Path;

use turnfence_model::{Machine, StepOf};

/// Takes one input, as [`turnfence_model::step`] records it; `false` if it was misuse (a
/// time-passing step may still be there).
pub fn take<M: Machine>(m: &mut M, input: &M::Input) -> (Vec<StepOf<M>>, bool) {
    let mut steps = Vec::new();
    let ok = turnfence_model::step(m, input, &mut steps).is_ok();
    (steps, ok)
}

/// Writes `text` to `path` atomically: a temporary file beside it, then a rename, so a reader
/// never sees half a file.
pub fn write_atomic(path: &Path, text: &str) -> io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    #[allow(clippy::disallowed_methods)] // The one place a report reaches the disk.
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}
