//! `turnfence replay` and `turnfence promote`: a counterexample report judged again, and turned
//! into a rejected fixture.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::Value;
use turnfence_checks::fuzz::{self, report::Report};
use turnfence_model::fence::FenceMachine;
use turnfence_model::turn::TurnMachine;
use turnfence_model::Machine;

use super::{on_machine, Driven, Named, Task};

fn load(path: &Path) -> Result<Value, String> {
    #[allow(clippy::disallowed_methods)] // The CLI reads the report it is asked to replay.
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{} is not a report: {e}", path.display()))
}

/// Replays a counterexample report: exit 1 if it still breaks its invariant.
pub fn replay(path: &Path) -> ExitCode {
    let outcome = load(path).and_then(|v| match v.get("machine").and_then(Value::as_str) {
        Some(<TurnMachine>::NAME) => replay_as::<TurnMachine>(v),
        Some(<FenceMachine>::NAME) => replay_as::<FenceMachine>(v),
        other => Err(format!("unknown machine {other:?}")),
    });
    match outcome {
        Ok(true) => ExitCode::from(1),
        Ok(false) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("turnfence replay: {e}");
            ExitCode::from(2)
        }
    }
}

/// Replays a report of machine `M`, re-running it on `M` with the report's flaw planted if it
/// names one.
fn replay_as<M: Named>(v: Value) -> Result<bool, String> {
    let flaw = v.get("flaw").and_then(Value::as_str).map(str::to_owned);
    let profile = match v.get("profile").and_then(Value::as_str) {
        None => None,
        Some(name) => Some(
            turnfence_checks::trace::Profile::from_name(name)
                .ok_or_else(|| format!("the report names an unknown profile {name:?}"))?,
        ),
    };
    match on_machine::<M, _>(flaw.as_deref(), profile, Rerun(&v)) {
        Ok(replayed) => replayed,
        // Without the flaw switch the recorded run is still judged, by the rules it ran under;
        // only the re-run is skipped.
        Err(e) => {
            let rules = profile.unwrap_or_default();
            let monitor = M::for_profile(rules)
                .map(|m| m.monitor())
                .ok_or_else(|| format!("the {} machine has no profile {rules:?}", M::NAME))?;
            judge::<M>(&v, monitor, Err(e))
        }
    }
}

/// The report judged, and re-run on whichever machine was chosen.
struct Rerun<'a>(&'a Value);

impl Task for Rerun<'_> {
    type Out = Result<bool, String>;

    fn on<M: Driven>(self, make: &dyn Fn() -> M) -> Result<bool, String> {
        judge::<M>(self.0, make().monitor(), Ok(make))
    }
}

/// Judges the report's recorded run again and, given a maker, re-runs its inputs; prints both.
/// `true` if the recorded run still breaks its invariant.
fn judge<M: Machine>(
    v: &Value,
    monitor: M::Monitor,
    make: Result<&dyn Fn() -> M, String>,
) -> Result<bool, String> {
    let report: Report<M> =
        serde_json::from_value(v.clone()).map_err(|e| format!("not a {} report: {e}", M::NAME))?;
    let replayed = fuzz::replay_report::<M>(&report, monitor, make.as_ref().ok().copied());
    let target = &report.violated;
    let again = replayed
        .broken
        .iter()
        .find(|b| b.invariant == target.invariant && b.step == target.step);
    match again {
        Some(b) => println!(
            "VIOLATED {} at step {} ({} ms): {} [{}]",
            b.name(),
            b.step,
            b.at,
            b.message,
            b.ids.join(", ")
        ),
        None => println!(
            "the recorded run no longer breaks {} at step {}",
            target.name(),
            target.step
        ),
    }
    match (&make, replayed.rerun) {
        (Err(e), _) => println!("not re-run: {e}"),
        (Ok(_), None) => println!("not re-run"),
        (Ok(_), Some(None)) => {
            println!(
                "re-run: the {} machine gives the same outputs at every step",
                M::NAME
            )
        }
        (Ok(_), Some(Some(i))) => {
            println!(
                "re-run: the {} machine now gives other outputs from step {i}",
                M::NAME
            )
        }
    }
    Ok(again.is_some())
}

/// Writes a report as a rejected fixture.
pub fn promote(path: &Path, fixtures: &Path) -> ExitCode {
    match promote_to(path, fixtures) {
        Ok(written) => {
            println!("{}", written.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("turnfence promote: {e}");
            ExitCode::from(2)
        }
    }
}

fn promote_to(path: &Path, fixtures: &Path) -> Result<PathBuf, String> {
    let v = load(path)?;
    let machine = v
        .get("machine")
        .and_then(Value::as_str)
        .unwrap_or("turn")
        .to_owned();
    let invariant = v["violated"]["invariant"]
        .as_str()
        .unwrap_or("unknown")
        .to_owned();
    let seed = v["seed"].as_u64().unwrap_or(0);
    let mut lines = vec![serde_json::json!({ "meta": {
        "dialect": "canonical",
        "machine": machine,
        "fixture": {
            "expect": "rejected",
            "invariant": invariant,
            "story": format!("promoted from the counterexample of seed {seed}{}",
                v.get("flaw").and_then(Value::as_str).map(|f| format!(" (planted flaw {f})")).unwrap_or_default()),
        },
    }})
    .to_string()];
    for step in v["steps"].as_array().cloned().unwrap_or_default() {
        let at = step["input"]["at"].clone();
        let mut input = step["input"].clone();
        if let Some(o) = input.as_object_mut() {
            o.insert("session".into(), "promoted".into());
        }
        lines.push(input.to_string());
        for out in step["outputs"].as_array().cloned().unwrap_or_default() {
            let mut line = serde_json::Map::new();
            line.insert("at".into(), at.clone());
            line.insert("session".into(), "promoted".into());
            if let Value::Object(fields) = out {
                line.extend(fields);
            }
            lines.push(Value::Object(line).to_string());
        }
    }
    // Turn fixtures are numbered from 1, fence fixtures from 100 (fixtures/README.md).
    let (first, end) = if machine == "fence" {
        (100, 10_000)
    } else {
        (1, 100)
    };
    let text = lines.join("\n") + "\n";
    std::fs::create_dir_all(fixtures)
        .map_err(|e| format!("cannot create {}: {e}", fixtures.display()))?;
    let existing: Vec<PathBuf> = std::fs::read_dir(fixtures)
        .map_err(|e| format!("cannot read {}: {e}", fixtures.display()))?
        .filter_map(|e| Some(e.ok()?.path()))
        .collect();
    // The same report promoted again is the fixture it already made.
    let stem = format!("_promoted_{invariant}_{seed}.jsonl");
    #[allow(clippy::disallowed_methods)] // The CLI compares the fixtures it is asked to extend.
    let same = existing.iter().find(|p| {
        p.to_string_lossy().ends_with(&stem) && std::fs::read_to_string(p).is_ok_and(|t| t == text)
    });
    if let Some(path) = same {
        return Ok(path.clone());
    }
    let next = existing
        .iter()
        .filter_map(|p| p.file_name()?.to_str()?.get(..4)?.parse::<u32>().ok())
        .filter(|n| (first..end).contains(n))
        .max()
        .map_or(first, |n| n + 1);
    let file = fixtures.join(format!("{next:04}{stem}"));
    turnfence_checks::shared::write_atomic(&file, &text).map_err(|e| e.to_string())?;
    Ok(file)
}
