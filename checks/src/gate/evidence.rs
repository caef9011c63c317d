//! The gate's evidence files, each written atomically (a temporary file, then a rename), so a
//! reader never sees half a report.

use std::io;
use std::path::Path;

use super::{scenarios, GateRun};
use crate::shared::write_atomic;

/// The run-wide evidence files besides `acceptance.log`, in the order `acceptance.log` lists them.
pub const RUN_FILES: [&str; 4] = ["events.jsonl", "trace.jsonl", "metrics.json", "report.json"];

/// Every file name a gate (the lab's or a real stack's profile's) may write into its output
/// directory.
pub fn known_files() -> Vec<String> {
    let mut names: Vec<String> = RUN_FILES
        .iter()
        .chain(&["acceptance.log"])
        .map(|s| (*s).to_owned())
        .collect();
    names.extend(
        scenarios::NAMES
            .iter()
            .chain(crate::dialect::GATES.iter().flat_map(|g| g.names))
            .map(|n| format!("{n}.log")),
    );
    names
}

fn pretty(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default() + "\n"
}

/// Writes the run's evidence into `dir` (created if missing). With `clean`, first removes every
/// file the gate knows it may have written before.
pub fn write_evidence(run: &GateRun, dir: &Path, clean: bool) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    if clean {
        for name in known_files() {
            match std::fs::remove_file(dir.join(&name)) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
    }
    for s in &run.scenarios {
        write_atomic(&dir.join(format!("{}.log", s.name)), &s.log())?;
    }
    write_atomic(&dir.join("events.jsonl"), &run.events_jsonl())?;
    write_atomic(&dir.join("trace.jsonl"), &run.trace_jsonl())?;
    write_atomic(&dir.join("report.json"), &pretty(&run.report()))?;
    write_atomic(&dir.join("metrics.json"), &pretty(&run.metrics()))?;
    write_atomic(&dir.join("acceptance.log"), &run.acceptance())
}
