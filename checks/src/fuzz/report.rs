//! Counterexample reports: a JSON file to replay and promote, and a Markdown file for a person —
//! the seed, the fault mix, the shrunk inputs with their outputs and state changes as a table,
//! and a Mermaid sequence diagram that renders on a code-hosting page.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use turnfence_model::{Machine, Millis};

use super::{Broken, FaultMix, Found, Fuzz, Recorded};

/// A counterexample, as written to `<invariant>-<seed>.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(bound(serialize = "", deserialize = ""))]
pub struct Report<M: Machine> {
    pub machine: String,
    pub seed: u64,
    /// The planted flaw the run had switched on, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flaw: Option<String>,
    /// The rule choices the machine followed, where not the lab's (a flaw's own, or `--profile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    pub mix: FaultMix,
    pub violated: Broken<M>,
    pub generated_inputs: usize,
    pub shrunk_inputs: usize,
    pub steps: Vec<Recorded<M::Input, M::Output>>,
}

impl<M: Machine> PartialEq for Report<M> {
    fn eq(&self, other: &Report<M>) -> bool {
        (
            &self.machine,
            self.seed,
            &self.flaw,
            &self.profile,
            &self.mix,
            &self.violated,
            self.generated_inputs,
            self.shrunk_inputs,
            &self.steps,
        ) == (
            &other.machine,
            other.seed,
            &other.flaw,
            &other.profile,
            &other.mix,
            &other.violated,
            other.generated_inputs,
            other.shrunk_inputs,
            &other.steps,
        )
    }
}

impl<M: Machine> Report<M> {
    /// The inputs of the shrunk run, in order (time-passing steps included).
    pub fn inputs(&self) -> Vec<M::Input> {
        self.steps.iter().map(|s| s.step.input.clone()).collect()
    }

    /// The file stem: `<invariant>-<seed>`.
    pub fn stem(&self) -> String {
        format!("{}-{}", self.violated.name(), self.seed)
    }
}

/// Builds the report of a shrunk counterexample.
pub fn build<M: Fuzz>(found: &Found<M>, flaw: Option<&str>, make: &dyn Fn() -> M) -> Report<M> {
    let run = super::replay::<M>(&found.shrunk, make);
    Report {
        machine: M::NAME.to_owned(),
        seed: found.case.seed,
        flaw: flaw.map(str::to_owned),
        profile: make().profile_name().map(str::to_owned),
        mix: found.case.mix.clone(),
        violated: found.broken.clone(),
        generated_inputs: found.case.generated,
        shrunk_inputs: found.shrunk.len(),
        steps: run.steps,
    }
}

/// The command that replays a report.
pub fn replay_command(path: &Path, flaw: bool) -> String {
    let features = if flaw { " --features flaws" } else { "" };
    format!(
        "cargo run -p turnfence-checks{features} --bin turnfence -- replay {}",
        path.display()
    )
}

/// Where reports go, relative to the workspace (or the working directory of the CLI).
pub const DIR: &str = "target/turnfence/counterexamples";

/// Writes `<dir>/<invariant>-<seed>.json` and `.md`; returns the JSON path. The Markdown's
/// replay command names the JSON where it was written (as `dir` says it: relative stays relative).
pub fn write<M: Fuzz>(report: &Report<M>, dir: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let name = format!("{}.json", report.stem());
    let json = dir.join(&name);
    let md = dir.join(format!("{}.md", report.stem()));
    crate::shared::write_atomic(&json, &to_json(report))?;
    crate::shared::write_atomic(&md, &markdown(report, &json))?;
    Ok(json)
}

/// The report's JSON text.
pub fn to_json<M: Machine>(report: &Report<M>) -> String {
    serde_json::to_string_pretty(report).unwrap_or_default() + "\n"
}

/// A JSON input or output as `kind field=value …`, short enough for a table cell.
pub fn describe(value: &Value) -> String {
    let Value::Object(m) = value else {
        return value.to_string();
    };
    let tag = ["input", "output"]
        .iter()
        .find_map(|k| m.get(*k).and_then(Value::as_str))
        .unwrap_or("?");
    let fields: Vec<String> = m
        .iter()
        .filter(|(k, _)| !["input", "output", "at"].contains(&k.as_str()))
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) if s.len() > 12 && s.chars().all(|c| c.is_ascii_hexdigit()) => {
                    format!("{}…", &s[..8])
                }
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            format!("{k}={v}")
        })
        .collect();
    if fields.is_empty() {
        tag.to_owned()
    } else {
        format!("{tag} {}", fields.join(" "))
    }
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn value<T: Serialize>(x: &T) -> Value {
    serde_json::to_value(x).unwrap_or(Value::Null)
}

fn at_of(v: &Value) -> Millis {
    v.get("at").and_then(Value::as_u64).unwrap_or(0)
}

/// The Markdown report.
pub fn markdown<M: Fuzz>(r: &Report<M>, json: &Path) -> String {
    let b = &r.violated;
    let mut out = String::new();
    out.push_str(&format!(
        "# Counterexample: `{}` ({} machine)\n\n",
        b.name(),
        r.machine
    ));
    out.push_str(&format!(
        "At step {} ({} ms): {}. Ids: {}.\n\n",
        b.step,
        b.at,
        b.message,
        if b.ids.is_empty() {
            "none".to_owned()
        } else {
            b.ids.join(", ")
        }
    ));
    out.push_str("| | |\n|---|---|\n");
    out.push_str(&format!("| seed | `{}` |\n", r.seed));
    if let Some(f) = &r.flaw {
        out.push_str(&format!("| planted flaw | `{f}` |\n"));
    }
    if let Some(p) = &r.profile {
        out.push_str(&format!("| profile | `{p}` |\n"));
    }
    out.push_str(&format!("| fault mix | {} |\n", M::faults(&r.mix)));
    out.push_str(&format!(
        "| inputs | {} generated, shrunk to {} |\n\n",
        r.generated_inputs, r.shrunk_inputs
    ));
    out.push_str(&format!(
        "Replay: `{}`\n\n## Steps\n\n| # | at (ms) | input | outputs | state changes |\n|---|---|---|---|---|\n",
        replay_command(json, r.flaw.is_some())
    ));
    for (i, s) in r.steps.iter().enumerate() {
        let input = value(&s.step.input);
        let outputs: Vec<String> = s.step.outputs.iter().map(|o| describe(&value(o))).collect();
        let mark = if i == b.step { " ⚠" } else { "" };
        out.push_str(&format!(
            "| {i}{mark} | {} | {} | {} | {} |\n",
            at_of(&input),
            cell(&describe(&input)),
            cell(&if outputs.is_empty() {
                "—".to_owned()
            } else {
                outputs.join("<br>")
            }),
            cell(&if s.changes.is_empty() {
                "—".to_owned()
            } else {
                s.changes.join("<br>")
            }),
        ));
    }
    out.push_str("\n## Sequence\n\n```mermaid\n");
    out.push_str(&mermaid(r));
    out.push_str("```\n");
    out
}

/// Who sends an input or an output, and who takes it.
fn arrow(machine: &str, v: &Value) -> (String, String) {
    let input = v.get("input").and_then(Value::as_str);
    let tag = input
        .or_else(|| v.get("output").and_then(Value::as_str))
        .unwrap_or("");
    let w = format!(
        "W_{}",
        v.get("worker").and_then(Value::as_str).unwrap_or("worker")
    );
    let (from, to) = match (machine, input.is_some(), tag) {
        ("fence", true, "worker_start" | "request") => (w.as_str(), "Transport"),
        ("fence", true, "supervisor_step") => ("Transport", "Supervisor"),
        ("fence", true, "drop_event") => ("Transport", "Transport"),
        ("fence", true, "owner_message") => ("Owner", "Supervisor"),
        ("fence", true, _) => ("Clock", "Supervisor"),
        ("fence", false, "event_queued" | "resent") => (w.as_str(), "Transport"),
        ("fence", false, "ack_consumed" | "verdict" | "seal_believed") => ("Transport", w.as_str()),
        ("fence", false, "ack_written" | "ack_lost" | "acks_pruned") => ("Supervisor", "Transport"),
        ("fence", false, _) => ("Supervisor", "Table"),
        (_, true, "accept" | "stop") => ("Client", "TurnManager"),
        (_, true, "speech_started") => ("VAD", "TurnManager"),
        (_, true, "delta" | "model_done") => ("Model", "DeliveryGate"),
        (
            _,
            true,
            "spawn" | "checkpoint" | "child_completed" | "commit_sent" | "commit_acked"
            | "commit_failed",
        ) => ("Tool", "TurnManager"),
        (_, true, "frame_played") => ("Speaker", "TurnManager"),
        (_, true, "client_ack" | "client_receive" | "disconnect" | "resume") => ("Client", "Store"),
        (_, true, _) => ("Clock", "TurnManager"),
        (
            _,
            false,
            "delivered" | "stop_answered" | "terminal" | "turn_refused" | "deadline_exceeded",
        ) => ("TurnManager", "Client"),
        (_, false, "late_dropped") => ("DeliveryGate", "DeliveryGate"),
        (_, false, "played" | "playback_cleared") => ("TurnManager", "Speaker"),
        (_, false, "persisted" | "replayed" | "resume_refused") => ("TurnManager", "Store"),
        (_, false, "rendered" | "duplicate_ignored") => ("Store", "Client"),
        (_, false, _) => ("TurnManager", "Tool"),
    };
    (from.to_owned(), to.to_owned())
}

fn mermaid_text(s: &str) -> String {
    s.replace('"', "")
        .replace('{', "(")
        .replace('}', ")")
        .replace(';', ",")
        .replace('#', "no. ")
}

fn mermaid<M: Machine>(r: &Report<M>) -> String {
    let mut lines = Vec::new();
    let mut actors: Vec<String> = Vec::new();
    let note = |a: &str, actors: &mut Vec<String>| {
        if !actors.iter().any(|x| x == a) {
            actors.push(a.to_owned());
        }
    };
    for (i, s) in r.steps.iter().enumerate() {
        let input = value(&s.step.input);
        let (from, to) = arrow(&r.machine, &input);
        note(&from, &mut actors);
        note(&to, &mut actors);
        lines.push(format!(
            "  {from}->>{to}: {}",
            mermaid_text(&describe(&input))
        ));
        for o in &s.step.outputs {
            let o = value(o);
            let (from, to) = arrow(&r.machine, &o);
            note(&from, &mut actors);
            note(&to, &mut actors);
            lines.push(format!("  {from}-->>{to}: {}", mermaid_text(&describe(&o))));
        }
        if i == r.violated.step {
            let first = actors.first().cloned().unwrap_or_else(|| "Clock".into());
            lines.push(format!(
                "  Note over {first}: {} broken here",
                r.violated.name()
            ));
        }
    }
    let mut out = String::from("sequenceDiagram\n");
    for a in &actors {
        let label = a
            .strip_prefix("W_")
            .map_or_else(|| a.clone(), |w| format!("worker {w}"));
        out.push_str(&format!("  participant {a} as {label}\n"));
    }
    for l in lines {
        out.push_str(&l);
        out.push('\n');
    }
    out
}
