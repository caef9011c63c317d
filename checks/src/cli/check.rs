//! `turnfence check PATH...`: traces judged against a machine — one file as a full report, or
//! many (files, and every `*.jsonl`, `*.ndjson` and JSON `*.log` beneath a directory, the rest
//! listed as skipped) on every core, a line each and a summary. Each trace is read as its own
//! meta line says, else as its first line shows, else as the flags say.

use std::collections::BTreeMap;
use std::io::{BufReader, IsTerminal};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use rayon::prelude::*;
use turnfence_checks::dialect::{self, Flags};
use turnfence_checks::report::baseline::{self, Baseline, Entry, Matcher};
use turnfence_checks::trace::{Dialect, InputError, Machine, Profile};

use super::{write_stdout, Format};
use turnfence_checks::report::outcome::{
    json_many, json_one, junit_cases, junit_report, markdown_report, text_many, text_one, Outcome,
};
use turnfence_checks::report::story_lines::{self, Extra, Kept, Wants};
use turnfence_checks::report::words::Said;

/// What the command was asked for.
pub struct Ask {
    pub dialect: Option<Dialect>,
    pub machine: Option<Machine>,
    pub profile: Option<Profile>,
    pub session_key: Option<String>,
    pub format: Format,
    /// Also write the JUnit document here.
    pub junit: Option<PathBuf>,
    pub max_findings: usize,
    /// Acknowledged findings: only the others fail.
    pub baseline: Option<PathBuf>,
    /// Write the current findings as a baseline here.
    pub write_baseline: Option<PathBuf>,
    /// A baseline entry that no longer occurs fails the run.
    pub strict_baseline: bool,
}

impl Ask {
    /// The choices for each trace that does not say its own.
    pub fn flags(&self) -> Flags {
        Flags {
            dialect: self.dialect,
            machine: self.machine,
            profile: self.profile,
            session_key: self.session_key.clone(),
        }
    }
}

/// The extensions of the files a directory's traces are read from.
pub const TRACE_EXTENSIONS: &[&str] = &["jsonl", "ndjson", "log"];

/// Checks every trace the paths name.
pub fn run(paths: &[PathBuf], ask: &Ask) -> ExitCode {
    let baseline = match ask.baseline.as_deref().map(read_baseline).transpose() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("turnfence check: {e}");
            return ExitCode::from(2);
        }
    };
    let (traces, skipped) = traces(paths);
    for (path, why) in &skipped {
        eprintln!("turnfence check: skipped {}: {why}", path.display());
    }
    let single = paths.len() == 1 && traces.len() == 1 && !paths[0].is_dir();
    let fingerprints = baseline.is_some() || ask.write_baseline.is_some();
    let stories = matches!(ask.format, Format::Markdown);
    let done = AtomicUsize::new(0);
    let progress = traces.len() > 1 && std::io::stderr().is_terminal();
    let (mut outcomes, kept): (Vec<Outcome>, Vec<BTreeMap<usize, Said>>) = traces
        .par_iter()
        .map(|t| {
            let outcome = judge(t, ask, fingerprints || stories);
            if progress {
                let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                eprint!("\rchecked {n}/{}", traces.len());
            }
            outcome
        })
        .unzip();
    if progress {
        eprintln!();
    }
    let mut matcher = baseline.as_ref().map(Matcher::new);
    for ((t, outcome), lines) in traces.iter().zip(outcomes.iter_mut()).zip(&kept) {
        if let Outcome::Judged(v, _, extra) = outcome {
            let wants = Wants {
                stories,
                fingerprints,
                matcher: matcher.as_mut(),
            };
            *extra = story_lines::after(&t.display().to_string(), lines, v, wants);
        }
    }
    let stale: Option<Vec<&Entry>> = matcher.as_ref().map(Matcher::stale);
    let stale = stale.as_deref();
    if let Some(path) = &ask.write_baseline {
        let entries = outcomes
            .iter()
            .flat_map(|o| match o {
                Outcome::Judged(_, _, extra) => extra.entries.clone(),
                Outcome::Unreadable(..) => Vec::new(),
            })
            .collect();
        if let Err(e) = turnfence_checks::shared::write_atomic(path, &baseline::write(entries)) {
            eprintln!("turnfence check: cannot write {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    let named: Vec<(&Path, &Outcome)> = traces
        .iter()
        .map(PathBuf::as_path)
        .zip(outcomes.iter())
        .collect();
    if let Some(path) = &ask.junit {
        super::write_junit(
            Some(path),
            "turnfence check",
            &junit_cases(&named, stale, ask.strict_baseline),
        );
    }
    match ask.format {
        Format::Junit => write_stdout(&junit_report(&named, stale, ask.strict_baseline)),
        Format::Json if single => write_stdout(&format!("{}\n", json_one(named[0].1, stale))),
        Format::Json => write_stdout(&format!("{}\n", json_many(&named, &skipped, stale))),
        Format::Text if single => {
            let (text, notes) = text_one(named[0].0, named[0].1, ask.max_findings, stale);
            for note in notes {
                eprintln!("{note}");
            }
            write_stdout(&text);
        }
        Format::Text => write_stdout(&text_many(&named, stale)),
        Format::Markdown => write_stdout(&markdown_report(&named, stale)),
    }
    exit_code(&outcomes, stale, ask)
}

fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// The baseline file, read strictly: an error names the file and its line or entry.
#[allow(clippy::disallowed_methods)] // The CLI reads the baseline it is given.
fn read_baseline(path: &Path) -> Result<Baseline, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the baseline {}: {e}", path.display()))?;
    baseline::parse(&text).map_err(|e| format!("baseline {}: {e}", path.display()))
}

/// The traces the paths name: a file as it is (`-`: standard input), a directory's `*.jsonl`,
/// `*.ndjson` and `*.log` files at any depth, sorted; a path that does not exist stays, to be
/// reported unreadable. Beside them, each file of a directory left out, with why.
fn traces(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<(PathBuf, String)>) {
    let (mut out, mut skipped) = (Vec::new(), Vec::new());
    for path in paths {
        if path.is_dir() {
            let mut found = Vec::new();
            walk(path, &mut found, &mut skipped);
            found.sort();
            out.extend(found);
        } else {
            out.push(path.clone());
        }
    }
    skipped.sort();
    (out, skipped)
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>, skipped: &mut Vec<(PathBuf, String)>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            skipped.push((dir.to_path_buf(), format!("cannot read the directory: {e}")));
            return;
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, found, skipped);
        } else if path
            .extension()
            .and_then(|x| x.to_str())
            .is_some_and(|x| TRACE_EXTENSIONS.contains(&x))
        {
            // A `*.log` may be a text log: read as a trace where it opens with a JSON object.
            if path.extension().is_some_and(|x| x == "log") && !opens_with_object(&path) {
                let why = "a *.log whose first line is not a JSON object (a text log)";
                skipped.push((path, why.to_owned()));
            } else {
                found.push(path);
            }
        } else {
            let why = format!(
                "not a trace by its name (a directory's traces are its {} files)",
                TRACE_EXTENSIONS
                    .iter()
                    .map(|x| format!("*.{x}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            skipped.push((path, why));
        }
    }
}

/// Whether the file's first bytes, past white space, open a JSON object.
#[allow(clippy::disallowed_methods)] // The CLI reads the traces it is asked to check.
fn opens_with_object(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    head[..n]
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| *b == b'{')
}

/// The buffer a trace file is read through: a line it holds whole is read where it lies, and one
/// that crosses a refill is gathered apart first (a copy more), so it is large beside a stack's
/// longest lines (an audio delta of 100 ms in base64 is 13 kB).
const READ_BUFFER: usize = 1 << 20;

/// The trace at `path` (`-`: standard input) judged in one pass; with `keep_lines`, the lines its
/// findings' stories and fingerprints need kept as it is read (nothing reads it again).
#[allow(clippy::disallowed_methods)] // The CLI reads the traces it is asked to check.
fn judge(path: &Path, ask: &Ask, keep_lines: bool) -> (Outcome, BTreeMap<usize, Said>) {
    let kept = keep_lines.then(|| Arc::new(Kept::default()));
    let flags = ask.flags();
    let check = |input: &mut dyn std::io::BufRead| match &kept {
        Some(kept) => dialect::check_input_keeping_lines(input, &flags, kept.clone()),
        None => dialect::check_input(input, &flags),
    };
    let checked = if is_stdin(path) {
        check(&mut std::io::stdin().lock())
    } else {
        match std::fs::File::open(path) {
            Ok(f) => check(&mut BufReader::with_capacity(READ_BUFFER, f)),
            // Not a line of a trace: the file itself could not be opened.
            Err(e) => {
                let message = format!("cannot read {}: {e}", path.display());
                let outcome = Outcome::Unreadable(InputError::at(0, message), None);
                return (outcome, BTreeMap::new());
            }
        }
    };
    let lines = kept.map(|k| k.lines()).unwrap_or_default();
    let outcome = match checked.verdict {
        Ok(verdict) => Outcome::Judged(
            verdict,
            checked.reading.unwrap_or_default(),
            Extra::default(),
        ),
        Err(e) => Outcome::Unreadable(e, checked.reading),
    };
    (outcome, lines)
}

/// 2 if any trace is unreadable, else 0 where a baseline is written, else 1 if any has findings
/// the baseline does not acknowledge (or, with `--strict-baseline`, the baseline has stale
/// entries), else 0.
fn exit_code(outcomes: &[Outcome], stale: Option<&[&Entry]>, ask: &Ask) -> ExitCode {
    if outcomes
        .iter()
        .any(|o| matches!(o, Outcome::Unreadable(..)))
    {
        ExitCode::from(2)
    } else if ask.write_baseline.is_some() {
        ExitCode::SUCCESS
    } else if outcomes
        .iter()
        .any(|o| matches!(o, Outcome::Judged(v, ..) if !v.conforms()))
        || (ask.strict_baseline && stale.is_some_and(|s| !s.is_empty()))
    {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
