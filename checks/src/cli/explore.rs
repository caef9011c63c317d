//! `turnfence explore`: a machine explored breadth-first within its CI bounds (or the given
//! ones), with its coverage and the shortest counterexample if an invariant breaks.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use turnfence_checks::explore;
use turnfence_checks::fuzz::{self, report};

use super::{on_machine, Driven, Named, Task};

/// Explores machine `M` (with the flaw planted, if one is named) within each bound set, up to
/// `depth` inputs.
pub fn run<M: Named>(depth: usize, flaw: Option<&str>, custom: Option<&str>) -> ExitCode {
    let walks = bound_sets::<M>(custom).and_then(|_| {
        on_machine::<M, _>(
            flaw,
            Walks {
                depth,
                flaw,
                custom,
            },
        )
    });
    match walks.and_then(|code| code) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("turnfence explore: {e}");
            ExitCode::from(2)
        }
    }
}

/// The bound sets to explore: the CI's, or the ones given as JSON.
fn bound_sets<M: Driven>(custom: Option<&str>) -> Result<Vec<(&'static str, M::Bounds)>, String> {
    match custom {
        None => Ok(M::ci_bounds()),
        Some(text) => serde_json::from_str(text)
            .map(|b| vec![("custom", b)])
            .map_err(|e| format!("bad --bounds: {e}")),
    }
}

/// Every bound set walked, on whichever machine was chosen.
struct Walks<'a> {
    depth: usize,
    flaw: Option<&'a str>,
    custom: Option<&'a str>,
}

impl Task for Walks<'_> {
    type Out = Result<ExitCode, String>;

    fn on<M: Driven>(self, make: &dyn Fn() -> M) -> Result<ExitCode, String> {
        let mut code = ExitCode::SUCCESS;
        for (name, bounds) in bound_sets::<M>(self.custom)? {
            println!(
                "bounds {name}: {}",
                serde_json::to_string(&bounds).unwrap_or_default()
            );
            let c = walk::<M>(make, &bounds, self.depth, self.flaw);
            if c != ExitCode::SUCCESS {
                code = c;
            }
        }
        Ok(code)
    }
}

/// Explores one bound set; on a counterexample, writes its report (replayable from a fresh
/// machine: the prelude comes first).
fn walk<M: Driven>(
    make: &dyn Fn() -> M,
    bounds: &M::Bounds,
    depth: usize,
    flaw: Option<&str>,
) -> ExitCode {
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
    let found = explore::explore::<M>(make, bounds, depth, None, &mut progress);
    if tty {
        eprintln!();
    }
    let secs = start.elapsed().as_secs_f64();
    let (missing, wrong) = M::coverage().gaps(&found.coverage);
    println!(
        "{} machine: {} distinct states, {} transitions, depth {}{} in {secs:.2} s ({:.0} states/s); {} invariants reached; coverage {} points, missing {:?}, listed impossible but reached {:?}",
        M::NAME,
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
                broken.name(),
                broken.message
            );
            let mut inputs = M::prelude();
            inputs.extend(path.iter().cloned());
            let run = fuzz::replay::<M>(&inputs, make);
            let broken = fuzz::violations::<M>(&run, Some(broken.invariant))
                .into_iter()
                .next()
                .unwrap_or(broken);
            let found = fuzz::Found::<M> {
                case: fuzz::Case {
                    seed: 0,
                    mix: fuzz::FaultMix::default(),
                    generated: inputs.len(),
                    inputs: inputs.clone(),
                },
                shrunk: inputs,
                broken,
            };
            let report = report::build::<M>(&found, flaw, make);
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
