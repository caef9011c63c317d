//! What the search for a stack's unlogged steps costs `check`: every LiveKit log of the corpus
//! (the interop corpus, the generated sessions kept, the open ones), checked with the dialect as
//! it is and with the same dialect declaring no unlogged step, side by side in one run, best of
//! five alternating runs each. Printed: logs, lines, each side's best time, the ratio, and how
//! many findings each gave (the search is there to explain findings away; the counts say what it
//! bought for its cost).
//!
//! Run: `cargo bench -p turnfence-checks --bench unlogged`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use turnfence_checks::dialect::livekit::Livekit;
use turnfence_checks::trace::conform::Unlogged;
use turnfence_checks::trace::{
    check_as, Event, Finding, InputError, Keep, Sessions, StackDialect, StackReader,
};
use turnfence_model::said::Vocabulary;
use turnfence_model::turn::{Profile, TurnMachine};

/// A stack's dialect with its unlogged steps left out: what `check` would be without the search.
#[derive(Default)]
struct NoSearch<D>(D);

impl<D: StackDialect<TurnMachine> + Send> StackDialect<TurnMachine> for NoSearch<D> {
    const COMPLETE: &'static [&'static str] = D::COMPLETE;
    const UNLOGGED: &'static [Unlogged<TurnMachine>] = &[];

    fn meta(&mut self, meta: &serde_json::Value) -> Result<(), InputError> {
        self.0.meta(meta)
    }

    fn words(&self) -> &dyn Vocabulary {
        self.0.words()
    }

    fn place(&self, finding: &mut Finding) {
        self.0.place(finding)
    }

    fn split(text: &str, line: usize) -> Result<Option<Vec<String>>, InputError> {
        D::split(text, line)
    }

    fn line(
        &mut self,
        text: &str,
        line: usize,
        sessions: &Sessions<TurnMachine>,
    ) -> Result<Vec<Event<TurnMachine>>, InputError> {
        self.0.line(text, line, sessions)
    }

    fn end(
        &mut self,
        line: usize,
        sessions: &Sessions<TurnMachine>,
    ) -> Result<Vec<Event<TurnMachine>>, InputError> {
        self.0.end(line, sessions)
    }
}

/// Every LiveKit log under `fixtures/{interop,generated,open}/livekit-agents@*/`.
fn logs() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
    let mut paths: Vec<PathBuf> = Vec::new();
    for kind in ["interop", "generated", "open"] {
        let Ok(dirs) = std::fs::read_dir(root.join(kind)) else {
            continue;
        };
        for dir in dirs.flatten().map(|e| e.path()) {
            let livekit = dir
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("livekit-agents@"));
            if !livekit {
                continue;
            }
            for file in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                if file.path().extension().is_some_and(|x| x == "jsonl") {
                    paths.push(file.path());
                }
            }
        }
    }
    paths.sort();
    #[allow(clippy::disallowed_methods)] // A benchmark reads its inputs.
    paths
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("a corpus log"))
        .collect()
}

/// Checks every log with dialect `D`: the time, and the findings and lines counted.
fn run<D: StackDialect<TurnMachine> + Send>(logs: &[String]) -> (f64, usize, usize) {
    let (mut findings, mut lines) = (0, 0);
    #[allow(clippy::disallowed_methods)] // Benchmarks measure wall-clock time, by definition.
    let start = Instant::now();
    for log in logs {
        let mut reader = StackReader::new(D::default());
        let fresh = TurnMachine::with_profile(Profile::LivekitAgents);
        if let Ok(v) = check_as(log.as_bytes(), &mut reader, Keep::Findings, fresh) {
            findings += v.findings.len();
            lines += v.lines;
        }
    }
    (start.elapsed().as_secs_f64(), findings, lines)
}

fn main() {
    let logs = logs();
    assert!(!logs.is_empty(), "no LiveKit log under fixtures/");
    let (mut with, mut without) = ((f64::MAX, 0, 0), (f64::MAX, 0, 0));
    for _ in 0..5 {
        let w = run::<Livekit>(&logs);
        let n = run::<NoSearch<Livekit>>(&logs);
        with = (with.0.min(w.0), w.1, w.2);
        without = (without.0.min(n.0), n.1, n.2);
    }
    println!(
        "unlogged search, {} LiveKit logs ({} lines): with {:.1} ms ({} findings), without \
         {:.1} ms ({} findings); with/without {:.2}x (best of 5, alternating)",
        logs.len(),
        with.2,
        with.0 * 1e3,
        with.1,
        without.0 * 1e3,
        without.1,
        with.0 / without.0
    );
}
