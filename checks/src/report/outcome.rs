//! One trace's outcome as `check` reports it, in each format: text (one trace in full, or a line
//! each and a summary), JSON, JUnit and Markdown, each with the findings a baseline acknowledged
//! and its stale entries.

use std::path::{Path, PathBuf};

use super::baseline::{self, Entry};
use super::junit;
use super::markdown;
use super::text::{not_judged_line, render_text};
use crate::trace::{Finding, InputError, Reading, Verdict};
use serde_json::json;

use super::story_lines::Extra;

/// One trace's outcome.
pub enum Outcome {
    /// Its verdict (less the findings the baseline acknowledges), how it was read, and what was
    /// read again of its findings' lines.
    Judged(Verdict, Reading, Extra),
    /// Not readable as a trace (exit 2): an input error at a line, or a file that cannot be
    /// opened (no line); how it was being read, if its first line said.
    Unreadable(InputError, Option<Reading>),
}

/// One trace, as a full report: the report (for standard output), and the notes of how it was
/// read and its input error, a line each (for standard error).
pub fn text_one(
    path: &Path,
    outcome: &Outcome,
    max_findings: usize,
    stale: Option<&[&Entry]>,
) -> (String, Vec<String>) {
    match outcome {
        Outcome::Judged(v, reading, extra) => {
            let notes = reading
                .overrides
                .iter()
                .map(|o| format!("turnfence check: {}: {o}", path.display()))
                .collect();
            let mut text = render_text(v, max_findings);
            text.push_str(&baselined_text(extra));
            text.push_str(&stale_text(stale));
            (text, notes)
        }
        Outcome::Unreadable(e, reading) => {
            let mut notes: Vec<String> = reading
                .iter()
                .flat_map(|r| &r.overrides)
                .map(|o| format!("turnfence check: {}: {o}", path.display()))
                .collect();
            notes.push(if e.line == 0 {
                format!("turnfence check: {}", e.message)
            } else {
                format!("turnfence check: {}: {e}", path.display())
            });
            (String::new(), notes)
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
pub fn text_many(named: &[(&Path, &Outcome)], stale: Option<&[&Entry]>) -> String {
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

/// Where the trace's reading departs from what it was told (a dialect recognised, a flag not
/// used and why), as a clause.
fn said(reading: &Reading) -> String {
    if reading.overrides.is_empty() {
        String::new()
    } else {
        format!(" [{}]", reading.overrides.join("; "))
    }
}

/// One trace as JSON; `stale`, where a baseline was given and this is the whole report, its
/// stale entries.
pub fn json_one(outcome: &Outcome, stale: Option<&[&Entry]>) -> serde_json::Value {
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

pub fn json_many(
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
fn failure_text(file: &str, f: &Finding) -> String {
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
pub fn junit_report(named: &[(&Path, &Outcome)], stale: Option<&[&Entry]>, strict: bool) -> String {
    junit::render("turnfence check", &junit_cases(named, stale, strict))
}

/// The test cases: beside a trace's, one skipped case per finding the baseline acknowledges (with
/// its reason), and one per stale entry (skipped, or failed with `--strict-baseline`).
pub fn junit_cases(
    named: &[(&Path, &Outcome)],
    stale: Option<&[&Entry]>,
    strict: bool,
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
                        skipped: Some(not_judged_line(n)),
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
        let failures = if strict {
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
            skipped: (!strict).then_some(line),
            failures,
            error: None,
        });
    }
    cases
}

/// The Markdown report (`--format markdown`).
pub fn markdown_report(named: &[(&Path, &Outcome)], stale: Option<&[&Entry]>) -> String {
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
