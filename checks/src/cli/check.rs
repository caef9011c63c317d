//! `turnfence check PATH...`: traces judged against a machine — one file as a full report, or
//! many (files, and every `*.jsonl`, `*.ndjson` and JSON `*.log` beneath a directory, the rest
//! listed as skipped) on every core, a line each and a summary. Each trace is read as its own
//! meta line says unless a flag overrides it.

use std::io::{BufReader, IsTerminal};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;
use serde_json::json;
use turnfence_checks::junit;
use turnfence_checks::report::baseline::{self, Baseline, Entry, Matcher};
use turnfence_checks::report::markdown;
use turnfence_checks::trace::{
    self, Dialect, Flags, InputError, Machine, Profile, Reading, Verdict,
};

use super::story_lines::{self, Extra, Source, Wants};
use super::{write_stdout, Format};

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
    /// The choices that override each trace's meta line.
    fn flags(&self) -> Flags {
        Flags {
            dialect: self.dialect,
            machine: self.machine,
            profile: self.profile,
            session_key: self.session_key.clone(),
        }
    }
}

/// One trace's outcome.
enum Outcome {
    /// Its verdict (less the findings the baseline acknowledges), how it was read, and what was
    /// read again of its findings' lines.
    Judged(Verdict, Reading, Extra),
    /// Not readable as a trace (exit 2): an input error at a line, or a file that cannot be
    /// opened (no line); how it was being read, if its first line said.
    Unreadable(InputError, Option<Reading>),
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
    // Standard input is read once: kept whole where its findings' lines are read again.
    let kept = ((fingerprints || stories) && traces.iter().any(|t| is_stdin(t))).then(read_stdin);
    let done = AtomicUsize::new(0);
    let progress = traces.len() > 1 && std::io::stderr().is_terminal();
    let mut outcomes: Vec<Outcome> = traces
        .par_iter()
        .map(|t| {
            let outcome = judge(t, ask, kept.as_deref());
            if progress {
                let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                eprint!("\rchecked {n}/{}", traces.len());
            }
            outcome
        })
        .collect();
    if progress {
        eprintln!();
    }
    let mut matcher = baseline.as_ref().map(Matcher::new);
    for (t, outcome) in traces.iter().zip(outcomes.iter_mut()) {
        if let Outcome::Judged(v, reading, extra) = outcome {
            let source = match &kept {
                Some(bytes) if is_stdin(t) => Source::Kept(bytes),
                _ => Source::File(t),
            };
            let wants = Wants {
                stories,
                fingerprints,
                matcher: matcher.as_mut(),
            };
            *extra = story_lines::after(&t.display().to_string(), &source, v, reading, wants);
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
        if let Err(e) = turnfence_checks::gate::write_atomic(path, &baseline::write(entries)) {
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
            &junit_cases(&named, stale, ask),
        );
    }
    match ask.format {
        Format::Junit => write_stdout(&junit_report(&named, stale, ask)),
        Format::Json if single => write_stdout(&format!("{}\n", json_one(named[0].1, stale))),
        Format::Json => write_stdout(&format!("{}\n", json_many(&named, &skipped, stale))),
        Format::Text if single => text_one(named[0].0, named[0].1, ask.max_findings, stale),
        Format::Text => write_stdout(&text_many(&named, stale)),
        Format::Markdown => write_stdout(&markdown_report(&named, stale)),
    }
    exit_code(&outcomes, stale, ask)
}

fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// All of standard input (what could not be read is left out: the checker then reads less).
fn read_stdin() -> Vec<u8> {
    use std::io::Read;
    let mut bytes = Vec::new();
    let _ = std::io::stdin().lock().read_to_end(&mut bytes);
    bytes
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
/// longest lines (a realtime audio delta of 100 ms is 13 kB).
const READ_BUFFER: usize = 1 << 20;

#[allow(clippy::disallowed_methods)] // The CLI reads the traces it is asked to check.
fn judge(path: &Path, ask: &Ask, kept: Option<&[u8]>) -> Outcome {
    let checked = if let (true, Some(bytes)) = (is_stdin(path), kept) {
        trace::check_input(bytes, &ask.flags())
    } else if is_stdin(path) {
        trace::check_input(std::io::stdin().lock(), &ask.flags())
    } else {
        match std::fs::File::open(path) {
            Ok(f) => trace::check_input(BufReader::with_capacity(READ_BUFFER, f), &ask.flags()),
            // Not a line of a trace: the file itself could not be opened.
            Err(e) => {
                let message = format!("cannot read {}: {e}", path.display());
                return Outcome::Unreadable(InputError::at(0, message), None);
            }
        }
    };
    match checked.verdict {
        Ok(verdict) => Outcome::Judged(
            verdict,
            checked.reading.unwrap_or_default(),
            Extra::default(),
        ),
        Err(e) => Outcome::Unreadable(e, checked.reading),
    }
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

/// One trace, as a full report (an input error on standard error).
fn text_one(path: &Path, outcome: &Outcome, max_findings: usize, stale: Option<&[&Entry]>) {
    match outcome {
        Outcome::Judged(v, reading, extra) => {
            for o in &reading.overrides {
                eprintln!("turnfence check: {}: {o}", path.display());
            }
            let mut text = trace::render_text(v, max_findings);
            text.push_str(&baselined_text(extra));
            text.push_str(&stale_text(stale));
            write_stdout(&text);
        }
        Outcome::Unreadable(e, reading) => {
            for o in reading.iter().flat_map(|r| &r.overrides) {
                eprintln!("turnfence check: {}: {o}", path.display());
            }
            if e.line == 0 {
                eprintln!("turnfence check: {}", e.message);
            } else {
                eprintln!("turnfence check: {}: {e}", path.display());
            }
        }
    }
}

/// The findings a baseline acknowledged, a line each with its reason.
fn baselined_text(extra: &Extra) -> String {
    let mut out = String::new();
    if !extra.acknowledged.is_empty() {
        out.push_str(&format!(
            "baselined: {} findings acknowledged in the baseline\n",
            extra.acknowledged.len()
        ));
    }
    for a in &extra.acknowledged {
        let f = &a.finding;
        out.push_str(&format!(
            "  baselined {} at line {} ({}): {}\n",
            f.name(),
            f.line,
            f.session,
            a.reason
        ));
    }
    out
}

/// The baseline's stale entries, a warning each.
fn stale_text(stale: Option<&[&Entry]>) -> String {
    stale
        .unwrap_or_default()
        .iter()
        .map(|e| format!("warning: {}\n", baseline::stale_line(e)))
        .collect()
}

/// Many traces: a line each, then the summary.
fn text_many(named: &[(&Path, &Outcome)], stale: Option<&[&Entry]>) -> String {
    let mut out = String::new();
    let (mut conform, mut violations, mut unreadable, mut baselined) = (0, 0, 0, 0);
    for (path, outcome) in named {
        let path = path.display();
        let acknowledged = match outcome {
            Outcome::Judged(_, _, extra) if !extra.acknowledged.is_empty() => {
                baselined += extra.acknowledged.len();
                format!(" ({} baselined)", extra.acknowledged.len())
            }
            _ => String::new(),
        };
        match outcome {
            Outcome::Judged(v, reading, _) if v.conforms() => {
                conform += 1;
                out.push_str(&format!(
                    "PASS  {path} ({} lines){acknowledged}{}\n",
                    v.lines,
                    said(reading)
                ));
            }
            Outcome::Judged(v, reading, _) => {
                violations += 1;
                let counts: Vec<String> = v
                    .counts()
                    .iter()
                    .map(|(name, n)| format!("{name} {n}"))
                    .collect();
                let first = v.findings.first().map_or(0, |f| f.line);
                out.push_str(&format!(
                    "FAIL  {path}: {} findings ({}), the first at line {first}{acknowledged}{}\n",
                    v.findings.len(),
                    counts.join(", "),
                    said(reading)
                ));
            }
            Outcome::Unreadable(e, reading) => {
                unreadable += 1;
                let said = reading.as_ref().map(said).unwrap_or_default();
                out.push_str(&format!("ERROR {path}: {e}{said}\n"));
            }
        }
    }
    out.push_str(&stale_text(stale));
    let baselined = match stale {
        Some(stale) => format!(
            ", {baselined} findings baselined, {} stale baseline entries",
            stale.len()
        ),
        None => String::new(),
    };
    out.push_str(&format!(
        "{} traces: {conform} conform, {violations} with violations, {unreadable} unreadable{baselined}\n",
        named.len()
    ));
    out
}

/// A flag that overrode the trace's meta line, as a clause.
fn said(reading: &Reading) -> String {
    if reading.overrides.is_empty() {
        String::new()
    } else {
        format!(" [{}]", reading.overrides.join("; "))
    }
}

/// One trace as JSON; `stale`, where a baseline was given and this is the whole report, its
/// stale entries.
fn json_one(outcome: &Outcome, stale: Option<&[&Entry]>) -> serde_json::Value {
    let mut one = json_trace(outcome);
    if let Some(stale) = stale {
        one["stale_baseline"] = json!(stale);
    }
    one
}

fn json_trace(outcome: &Outcome) -> serde_json::Value {
    match outcome {
        Outcome::Judged(v, reading, extra) => {
            let status = if v.conforms() {
                "conforms"
            } else {
                "violations"
            };
            let mut one = json!({
                "status": status,
                "dialect": reading.dialect.name(),
                "machine": reading.machine.name(),
                "profile": reading.profile.name(),
                "overrides": reading.overrides,
                "verdict": v,
            });
            if !extra.acknowledged.is_empty() {
                one["baselined"] = extra
                    .acknowledged
                    .iter()
                    .map(|a| json!({ "finding": a.finding, "reason": a.reason }))
                    .collect();
            }
            one
        }
        Outcome::Unreadable(e, _) if e.line == 0 => {
            json!({ "status": "input_error", "error": { "message": e.message } })
        }
        Outcome::Unreadable(e, reading) => json!({
            "status": "input_error",
            "overrides": reading.as_ref().map(|r| r.overrides.clone()).unwrap_or_default(),
            "error": e,
        }),
    }
}

fn json_many(
    named: &[(&Path, &Outcome)],
    skipped: &[(PathBuf, String)],
    stale: Option<&[&Entry]>,
) -> serde_json::Value {
    let traces: Vec<serde_json::Value> = named
        .iter()
        .map(|(path, outcome)| {
            let mut one = json_trace(outcome);
            one["path"] = json!(path.display().to_string());
            one
        })
        .collect();
    let count = |status: &str| traces.iter().filter(|t| t["status"] == status).count();
    let baselined: usize = traces
        .iter()
        .filter_map(|t| t["baselined"].as_array().map(Vec::len))
        .sum();
    let mut many = json!({
        "summary": {
            "traces": traces.len(),
            "conform": count("conforms"),
            "violations": count("violations"),
            "unreadable": count("input_error"),
        },
        "traces": traces,
        "skipped": skipped
            .iter()
            .map(|(p, why)| json!({ "path": p.display().to_string(), "reason": why }))
            .collect::<Vec<_>>(),
    });
    if let Some(stale) = stale {
        many["summary"]["baselined"] = json!(baselined);
        many["stale_baseline"] = json!(stale);
    }
    many
}

/// A finding as a JUnit failure's text: the file and line, the session and time, the line its
/// story starts at, its ids and sentence, then what it explains, a line each.
fn failure_text(file: &str, f: &trace::Finding) -> String {
    let since = f
        .since
        .map_or_else(String::new, |s| format!("; its story starts at line {s}"));
    let mut text = format!(
        "{file}:{} ({} at {} ms{since}): {} [{}]: {}",
        f.line,
        f.session,
        f.at,
        f.name(),
        f.ids.join(", "),
        f.message
    );
    for d in &f.derived {
        text.push_str(&format!("\n  explains {}: {}", d.name(), d.message));
    }
    text
}

/// The JUnit document: one test case per trace, one failure per finding; one skipped case per
/// rule left unjudged.
fn junit_report(named: &[(&Path, &Outcome)], stale: Option<&[&Entry]>, ask: &Ask) -> String {
    junit::render("turnfence check", &junit_cases(named, stale, ask))
}

/// The test cases: beside a trace's, one skipped case per finding the baseline acknowledges (with
/// its reason), and one per stale entry (skipped, or failed with `--strict-baseline`).
fn junit_cases(
    named: &[(&Path, &Outcome)],
    stale: Option<&[&Entry]>,
    ask: &Ask,
) -> Vec<junit::Case> {
    let mut cases: Vec<junit::Case> = Vec::new();
    for (path, outcome) in named {
        let name = path.display().to_string();
        match outcome {
            Outcome::Judged(v, reading, extra) => {
                let classname = format!("turnfence.check.{}", reading.machine.name());
                cases.push(junit::Case {
                    name: name.clone(),
                    classname: classname.clone(),
                    failures: v
                        .findings
                        .iter()
                        .map(|f| junit::Failure {
                            message: format!("{name}:{}: {}", f.line, f.name()),
                            kind: f.name().to_owned(),
                            text: failure_text(&name, f),
                        })
                        .collect(),
                    error: None,
                    skipped: None,
                });
                for n in &v.not_judged {
                    let ids = if n.ids.is_empty() {
                        String::new()
                    } else {
                        format!(" [{}]", n.ids.join(", "))
                    };
                    cases.push(junit::Case {
                        name: format!("{name} :: {} ({}){ids}", n.rule, n.session),
                        classname: classname.clone(),
                        failures: Vec::new(),
                        error: None,
                        skipped: Some(trace::not_judged_line(n)),
                    });
                }
                for a in &extra.acknowledged {
                    let f = &a.finding;
                    cases.push(junit::Case {
                        name: format!("{name} :: {} at line {} ({})", f.name(), f.line, f.session),
                        classname: classname.clone(),
                        failures: Vec::new(),
                        error: None,
                        skipped: Some(format!("baselined: {}", a.reason)),
                    });
                }
            }
            Outcome::Unreadable(e, _) => cases.push(junit::Case {
                name,
                classname: "turnfence.check".to_owned(),
                failures: Vec::new(),
                error: Some(e.to_string()),
                skipped: None,
            }),
        }
    }
    for e in stale.unwrap_or_default() {
        let line = baseline::stale_line(e);
        let failures = if ask.strict_baseline {
            vec![junit::Failure {
                message: format!("{}: stale baseline entry {}", e.trace, e.rule),
                kind: "stale_baseline".to_owned(),
                text: line.clone(),
            }]
        } else {
            Vec::new()
        };
        cases.push(junit::Case {
            name: format!("baseline :: {} {} ({})", e.trace, e.rule, e.fingerprint),
            classname: "turnfence.check.baseline".to_owned(),
            skipped: (!ask.strict_baseline).then_some(line),
            failures,
            error: None,
        });
    }
    cases
}

/// The Markdown report (`--format markdown`).
fn markdown_report(named: &[(&Path, &Outcome)], stale: Option<&[&Entry]>) -> String {
    let paths: Vec<String> = named.iter().map(|(p, _)| p.display().to_string()).collect();
    let traces: Vec<markdown::Trace> = named
        .iter()
        .zip(&paths)
        .map(|((_, outcome), path)| markdown::Trace {
            path,
            outcome: match outcome {
                Outcome::Judged(verdict, _, extra) => markdown::Outcome::Judged {
                    verdict,
                    stories: &extra.stories,
                    acknowledged: &extra.acknowledged,
                },
                Outcome::Unreadable(e, _) => markdown::Outcome::Unreadable(e),
            },
        })
        .collect();
    markdown::render(&traces, stale.unwrap_or_default())
}
