//! The `fuzz`, `replay` and `promote` commands.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::Value;
use turnfence_checks::fuzz::fence_gen::FenceTarget;
use turnfence_checks::fuzz::report::{self, Report};
use turnfence_checks::fuzz::turn_gen::TurnTarget;
use turnfence_checks::fuzz::{self, Target};
use turnfence_checks::trace::Machine;
use turnfence_model::fence::FenceMachine;
use turnfence_model::turn::TurnMachine;

pub struct Plan {
    pub seed: u64,
    pub first: u64,
    pub cases: u64,
    pub steps: usize,
    pub out: PathBuf,
    pub flaw: Option<String>,
}

/// A maker of turn machines, with the named flaw if this build has the flaw switch.
fn turn_maker(flaw: Option<&str>) -> Result<Box<dyn Fn() -> TurnMachine>, String> {
    match flaw {
        None => Ok(Box::new(TurnMachine::new)),
        #[cfg(feature = "flaws")]
        Some(name) => {
            let flaw: turnfence_model::turn::Flaw =
                serde_json::from_value(Value::String(name.into()))
                    .map_err(|_| format!("unknown turn flaw {name:?}"))?;
            Ok(Box::new(move || TurnMachine::with_flaw(flaw)))
        }
        #[cfg(not(feature = "flaws"))]
        Some(name) => Err(no_flaws(name)),
    }
}

fn fence_maker(flaw: Option<&str>) -> Result<Box<dyn Fn() -> FenceMachine>, String> {
    match flaw {
        None => Ok(Box::new(FenceMachine::new)),
        #[cfg(feature = "flaws")]
        Some(name) => {
            let flaw: turnfence_model::fence::Flaw =
                serde_json::from_value(Value::String(name.into()))
                    .map_err(|_| format!("unknown fence flaw {name:?}"))?;
            Ok(Box::new(move || FenceMachine::with_flaw(flaw)))
        }
        #[cfg(not(feature = "flaws"))]
        Some(name) => Err(no_flaws(name)),
    }
}

#[cfg(not(feature = "flaws"))]
fn no_flaws(name: &str) -> String {
    format!("flaw {name:?} needs the flaw switch: rebuild with `cargo run -p turnfence-checks --features flaws -- …`")
}

pub fn fuzz(machine: Machine, plan: &Plan) -> ExitCode {
    let flaw = plan.flaw.as_deref();
    let result = match machine {
        Machine::Turn => turn_maker(flaw).map(|m| run::<TurnTarget>(plan, m.as_ref())),
        Machine::Fence => fence_maker(flaw).map(|m| run::<FenceTarget>(plan, m.as_ref())),
    };
    result.unwrap_or_else(|e| {
        eprintln!("turnfence fuzz: {e}");
        ExitCode::from(2)
    })
}

fn run<T: Target>(plan: &Plan, make: &dyn Fn() -> T::Machine) -> ExitCode {
    let progress = std::io::stderr().is_terminal();
    #[allow(clippy::disallowed_methods)] // Progress and the summary's time are for a person.
    let start = std::time::Instant::now();
    let mut reached = std::collections::BTreeSet::new();
    let mut steps = 0usize;
    for n in 0..plan.cases {
        let i = plan.first + n;
        let seed = fuzz::case_seed(plan.seed, i);
        match fuzz::run_case::<T>(seed, plan.steps, None, make) {
            Ok(r) => {
                reached.extend(r);
                steps += plan.steps;
            }
            Err(found) => {
                if progress {
                    eprintln!();
                }
                let report = report::build::<T>(&found, plan.flaw.as_deref(), make);
                return match report::write(&report, &plan.out) {
                    Ok(path) => {
                        println!(
                            "case {i} (seed {seed}) broke {} at step {}: {}\nshrunk {} → {} inputs\nreport: {}\nreplay: {}",
                            report.violated.invariant,
                            report.violated.step,
                            report.violated.message,
                            report.generated_inputs,
                            report.shrunk_inputs,
                            path.display(),
                            report::replay_command(&path, plan.flaw.is_some())
                        );
                        ExitCode::from(1)
                    }
                    Err(e) => {
                        eprintln!("turnfence fuzz: cannot write the report: {e}");
                        ExitCode::from(2)
                    }
                };
            }
        }
        if progress && (n % 50 == 49 || n + 1 == plan.cases) {
            let s = start.elapsed().as_secs_f64().max(1e-9);
            eprint!(
                "\r{} case {}/{}  steps {steps}  invariants exercised {}  {:.0} steps/s   ",
                T::NAME,
                n + 1,
                plan.cases,
                reached.len(),
                steps as f64 / s
            );
            let _ = std::io::stderr().flush();
        }
    }
    if progress {
        eprintln!();
    }
    let names: Vec<&str> = reached.into_iter().collect();
    println!(
        "{} machine: {} cases (seed {}, cases {}..{}), {steps} steps, nothing broken; {} invariants exercised: {}; {:.1} s",
        T::NAME,
        plan.cases,
        plan.seed,
        plan.first,
        plan.first + plan.cases,
        names.len(),
        names.join(", "),
        start.elapsed().as_secs_f64()
    );
    ExitCode::SUCCESS
}

fn load(path: &Path) -> Result<Value, String> {
    #[allow(clippy::disallowed_methods)] // The CLI reads the report it is asked to replay.
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{} is not a report: {e}", path.display()))
}

pub fn replay(path: &Path) -> ExitCode {
    let outcome = load(path).and_then(|v| match v.get("machine").and_then(Value::as_str) {
        Some("turn") => replay_as::<TurnTarget>(v, turn_maker),
        Some("fence") => replay_as::<FenceTarget>(v, fence_maker),
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

type Maker<M> = Result<Box<dyn Fn() -> M>, String>;

fn replay_as<T: Target>(
    v: Value,
    maker: impl Fn(Option<&str>) -> Maker<T::Machine>,
) -> Result<bool, String> {
    let report: Report<T::Input, T::Output> =
        serde_json::from_value(v).map_err(|e| format!("not a {} report: {e}", T::NAME))?;
    let make = maker(report.flaw.as_deref());
    // Without the flaw switch the recorded run is still judged; only the re-run is skipped.
    let replayed = fuzz::replay_report::<T>(&report, make.as_ref().ok().map(|m| m.as_ref()));
    let target = &report.violated;
    let again = replayed
        .broken
        .iter()
        .find(|b| b.invariant == target.invariant && b.step == target.step);
    match again {
        Some(b) => println!(
            "VIOLATED {} at step {} ({} ms): {} [{}]",
            b.invariant,
            b.step,
            b.at,
            b.message,
            b.ids.join(", ")
        ),
        None => println!(
            "the recorded run no longer breaks {} at step {}",
            target.invariant, target.step
        ),
    }
    match (&make, replayed.rerun) {
        (Err(e), _) => println!("not re-run: {e}"),
        (Ok(_), None) => println!("not re-run"),
        (Ok(_), Some(None)) => {
            println!(
                "re-run: the {} machine gives the same outputs at every step",
                T::NAME
            )
        }
        (Ok(_), Some(Some(i))) => {
            println!(
                "re-run: the {} machine now gives other outputs from step {i}",
                T::NAME
            )
        }
    }
    Ok(again.is_some())
}

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
        "expect": "rejected",
        "invariant": invariant,
        "story": format!("promoted from the counterexample of seed {seed}{}",
            v.get("flaw").and_then(Value::as_str).map(|f| format!(" (planted flaw {f})")).unwrap_or_default()),
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
    let next = std::fs::read_dir(fixtures)
        .map_err(|e| format!("cannot read {}: {e}", fixtures.display()))?
        .filter_map(|e| e.ok()?.file_name().to_str()?.get(..4)?.parse::<u32>().ok())
        .filter(|n| (first..end).contains(n))
        .max()
        .map_or(first, |n| n + 1);
    let file = fixtures.join(format!("{next:04}_promoted_{invariant}_{seed}.jsonl"));
    turnfence_checks::gate::write_atomic(&file, &(lines.join("\n") + "\n"))
        .map_err(|e| e.to_string())?;
    Ok(file)
}

pub fn explore(
    machine: Machine,
    depth: usize,
    flaw: Option<&str>,
    custom: Option<&str>,
) -> ExitCode {
    use turnfence_checks::explore::{self, fence::FenceBounds, turn::TurnBounds};
    let turn_bounds = match custom.filter(|_| machine == Machine::Turn) {
        None => Ok(TurnBounds::ci()),
        Some(text) => serde_json::from_str(text)
            .map(|b| vec![("custom", b)])
            .map_err(|e| e.to_string()),
    };
    let fence_bounds = match custom.filter(|_| machine == Machine::Fence) {
        None => Ok(FenceBounds::ci()),
        Some(text) => serde_json::from_str(text)
            .map(|b| vec![("custom", b)])
            .map_err(|e| e.to_string()),
    };
    let (turn_bounds, fence_bounds) = match (turn_bounds, fence_bounds) {
        (Ok(t), Ok(f)) => (t, f),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("turnfence explore: bad --bounds: {e}");
            return ExitCode::from(2);
        }
    };
    let result = match machine {
        Machine::Turn => turn_maker(flaw).map(|make| {
            let mut code = ExitCode::SUCCESS;
            for (name, bounds) in turn_bounds {
                println!(
                    "bounds {name}: {}",
                    serde_json::to_string(&bounds).unwrap_or_default()
                );
                let start_at = Start::<TurnTarget> {
                    make: make.as_ref(),
                    fresh: make.as_ref(),
                    prefix: Vec::new(),
                };
                let c = walk::<TurnTarget>(&start_at, &bounds, depth, flaw, &|| {
                    explore::turn::coverage()
                });
                if c != ExitCode::SUCCESS {
                    code = c;
                }
            }
            code
        }),
        Machine::Fence => fence_maker(flaw).map(|make| {
            let started = || explore::fence::started(make.as_ref());
            let mut code = ExitCode::SUCCESS;
            for (name, bounds) in fence_bounds {
                println!(
                    "bounds {name}: {}",
                    serde_json::to_string(&bounds).unwrap_or_default()
                );
                let start_at = Start::<FenceTarget> {
                    make: &started,
                    fresh: make.as_ref(),
                    prefix: explore::fence::start_inputs(),
                };
                let c = walk::<FenceTarget>(&start_at, &bounds, depth, flaw, &|| {
                    explore::fence::coverage()
                });
                if c != ExitCode::SUCCESS {
                    code = c;
                }
            }
            code
        }),
    };
    result.unwrap_or_else(|e| {
        eprintln!("turnfence explore: {e}");
        ExitCode::from(2)
    })
}

/// Where an exploration starts: a maker of its first state, and the inputs that lead there from
/// a fresh machine (for the report, which replays from a fresh machine).
struct Start<'a, T: Target> {
    make: &'a dyn Fn() -> T::Machine,
    fresh: &'a dyn Fn() -> T::Machine,
    prefix: Vec<T::Input>,
}

fn walk<T: turnfence_checks::explore::Explorable>(
    start_at: &Start<T>,
    bounds: &T::Bounds,
    depth: usize,
    flaw: Option<&str>,
    coverage: &dyn Fn() -> turnfence_checks::explore::Coverage,
) -> ExitCode {
    let make = start_at.make;
    let tty = std::io::stderr().is_terminal();
    #[allow(clippy::disallowed_methods)] // Progress and the summary's time are for a person.
    let start = std::time::Instant::now();
    let mut progress = |d: usize, frontier: usize, states: usize| {
        if tty {
            let s = start.elapsed().as_secs_f64().max(1e-9);
            eprint!(
                "\rdepth {d}  frontier {frontier}  distinct states {states}  {:.0} states/s   ",
                states as f64 / s
            );
            let _ = std::io::stderr().flush();
        }
    };
    let found = turnfence_checks::explore::explore::<T>(make, bounds, depth, None, &mut progress);
    if tty {
        eprintln!();
    }
    let secs = start.elapsed().as_secs_f64();
    let (missing, wrong) = coverage().gaps(&found.coverage);
    println!(
        "{} machine: {} distinct states, {} transitions, depth {}{} in {secs:.2} s ({:.0} states/s); {} invariants reached; coverage {} points, missing {:?}, listed impossible but reached {:?}",
        T::NAME,
        found.states,
        found.transitions,
        found.depth,
        if found.counterexample.is_some() {
            " (stopped at the first counterexample)"
        } else if found.truncated {
            " (truncated at the depth bound)"
        } else {
            " (exhaustive)"
        },
        found.states as f64 / secs.max(1e-9),
        found.reached.len(),
        found.coverage.len(),
        missing,
        wrong
    );
    if found.truncated {
        println!("a path still growing at the depth bound:");
        for input in &found.deepest {
            println!(
                "  {}",
                report::describe(&serde_json::to_value(input).unwrap_or_default())
            );
        }
    }
    match found.counterexample {
        None => ExitCode::SUCCESS,
        Some((path, broken)) => {
            println!(
                "counterexample ({} inputs{}): {} broken: {}",
                path.len(),
                flaw.map(|f| format!(", flaw {f}")).unwrap_or_default(),
                broken.invariant,
                broken.message
            );
            let mut inputs = start_at.prefix.clone();
            inputs.extend(path.iter().cloned());
            let run = fuzz::replay::<T>(&inputs, start_at.fresh);
            let broken = fuzz::violations::<T>(&run, Some(&broken.invariant))
                .into_iter()
                .next()
                .unwrap_or(broken);
            let found = fuzz::Found::<T> {
                case: fuzz::Case {
                    seed: 0,
                    mix: fuzz::FaultMix::default(),
                    generated: inputs.len(),
                    inputs: inputs.clone(),
                },
                shrunk: inputs,
                broken,
            };
            let report = report::build::<T>(&found, flaw, start_at.fresh);
            match report::write(&report, Path::new(report::DIR)) {
                Ok(p) => println!(
                    "report: {}\nreplay: {}",
                    p.display(),
                    report::replay_command(&p, flaw.is_some())
                ),
                Err(e) => eprintln!("turnfence explore: cannot write the report: {e}"),
            }
            for input in &path {
                println!(
                    "  {}",
                    report::describe(&serde_json::to_value(input).unwrap_or_default())
                );
            }
            ExitCode::from(1)
        }
    }
}
