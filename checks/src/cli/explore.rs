//! `turnfence explore`: a machine explored breadth-first within its CI bounds (or the given
//! ones), with its coverage and the shortest counterexample if an invariant breaks.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use turnfence_checks::explore;
use turnfence_checks::fuzz::{self, report};

use turnfence_checks::report::junit;
use turnfence_model::Invariant;

use super::{on_machine, write_junit, Driven, Named, Task};

/// Explores machine `M` (with the flaw planted, if one is named) within each bound set (the
/// given ones, else the CI's and, if `deep`, the deeper ones after them), up to `depth` inputs;
/// with `symmetry`, up to a renaming of its interchangeable names; with `reduce`, with sleep sets.
pub fn run<M: Named>(
    depth: usize,
    flaw: Option<&str>,
    custom: Option<&str>,
    deep: bool,
    (symmetry, reduce): (bool, bool),
    junit_path: Option<&Path>,
) -> ExitCode {
    let walks = bound_sets::<M>(custom, deep, symmetry).and_then(|_| {
        on_machine::<M, _>(
            flaw,
            None,
            Walks {
                depth,
                flaw,
                custom,
                deep,
                symmetry,
                reduce,
                junit_path,
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

/// The bound sets to explore: the CI's (and the deeper ones after them, if `deep`), or the ones
/// given as JSON; each with symmetry on if asked.
fn bound_sets<M: Driven>(
    custom: Option<&str>,
    deep: bool,
    symmetry: bool,
) -> Result<Vec<(&'static str, M::Bounds)>, String> {
    let sets = match custom {
        None if deep => M::ci_bounds().into_iter().chain(M::deep_bounds()).collect(),
        None => M::ci_bounds(),
        Some(text) => serde_json::from_str(text)
            .map(|b| vec![("custom", b)])
            .map_err(|e| format!("bad --bounds: {e}"))?,
    };
    if !symmetry {
        return Ok(sets);
    }
    sets.into_iter()
        .map(|(name, b)| {
            let on = M::with_symmetry(&b).ok_or_else(|| {
                format!(
                    "--symmetry: the {} machine has no interchangeable names",
                    M::NAME
                )
            })?;
            Ok((name, on))
        })
        .collect()
}

/// Every bound set walked, on whichever machine was chosen.
struct Walks<'a> {
    depth: usize,
    flaw: Option<&'a str>,
    custom: Option<&'a str>,
    deep: bool,
    symmetry: bool,
    reduce: bool,
    junit_path: Option<&'a Path>,
}

impl Task for Walks<'_> {
    type Out = Result<ExitCode, String>;

    fn on<M: Driven>(self, make: &dyn Fn() -> M) -> Result<ExitCode, String> {
        let mut code = ExitCode::SUCCESS;
        let mut union = Union::default();
        let sets = bound_sets::<M>(self.custom, self.deep, self.symmetry)?;
        let count = sets.len();
        let mut cases = Vec::new();
        for (name, bounds) in sets {
            println!(
                "bounds {name}: {}",
                serde_json::to_string(&bounds).unwrap_or_default()
            );
            let (c, failure) = walk::<M>(
                make,
                &bounds,
                (self.depth, self.reduce),
                self.flaw,
                &mut union,
            );
            if c != ExitCode::SUCCESS {
                code = c;
            }
            cases.push(junit::Case {
                name: format!("explore {} bounds {name}", M::NAME),
                classname: format!("turnfence.explore.{}", M::NAME),
                failures: failure.into_iter().collect(),
                error: None,
                skipped: None,
            });
        }
        let gaps = union.verdict::<M>(count);
        cases.push(junit::Case {
            name: format!("explore {} coverage of the union", M::NAME),
            classname: format!("turnfence.explore.{}", M::NAME),
            failures: gaps.into_iter().collect(),
            error: None,
            skipped: None,
        });
        write_junit(self.junit_path, "turnfence explore", &cases);
        Ok(code)
    }
}

/// What every bound set explored so far reached between them.
#[derive(Default)]
struct Union {
    states: usize,
    broken: bool,
    truncated: bool,
    coverage: std::collections::BTreeSet<String>,
    reached: std::collections::BTreeSet<&'static str>,
}

impl Union {
    /// The verdict over every bound set, then the coverage of their union; a gap in it as a
    /// failure.
    fn verdict<M: Driven>(&self, sets: usize) -> Option<junit::Failure> {
        let verdict = if self.broken {
            "an invariant broke (above)"
        } else if self.truncated {
            "no violation up to the depth bound (not exhaustive: a bound set was cut off)"
        } else {
            "no violation: every state within the bounds explored"
        };
        println!(
            "VERDICT: {verdict}; {} bound set(s), {} distinct states",
            sets, self.states
        );
        let (missing, wrong) = M::coverage().gaps(&self.coverage);
        let required = M::coverage().required.len();
        if missing.is_empty() && wrong.is_empty() {
            println!(
                "coverage of the union: every one of the {required} required points reached or listed impossible; {} of {} invariants put to the test",
                self.reached.len(),
                <M::Invariant as turnfence_model::Invariant>::ALL.len()
            );
            None
        } else {
            let said = format!(
                "coverage of the union: missing {missing:?}, listed impossible but reached {wrong:?}"
            );
            println!("{said}");
            Some(junit::Failure {
                message: "coverage gap".to_owned(),
                kind: "coverage".to_owned(),
                text: said,
            })
        }
    }
}

/// Explores one bound set; on a counterexample, writes its report (replayable from a fresh
/// machine: the prelude comes first).
fn walk<M: Driven>(
    make: &dyn Fn() -> M,
    bounds: &M::Bounds,
    (depth, reduce): (usize, bool),
    flaw: Option<&str>,
    union: &mut Union,
) -> (ExitCode, Option<junit::Failure>) {
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
    let found = explore::explore_with::<M>(make, bounds, depth, None, reduce, &mut progress);
    if tty {
        eprintln!();
    }
    let secs = start.elapsed().as_secs_f64();
    let verdict = if found.counterexample.is_some() {
        "BROKEN"
    } else if found.truncated {
        "no violation up to the depth bound"
    } else {
        "no violation"
    };
    println!(
        "{verdict} ({} machine): {} distinct states, {} transitions, depth {}{} in {secs:.2} s ({:.0} states/s); {} invariants reached, {} coverage points",
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
    );
    if M::symmetry(bounds) {
        println!(
            "reduced (symmetry): {} classes, one state of each expanded; a counterexample is a \
             shortest and replays as recorded; rerun without --symmetry to visit every state",
            found.states
        );
    }
    if found.reduced {
        println!(
            "reduced (sleep sets): {} transitions taken, the others left asleep; the states and \
             the verdict are the full run's, a counterexample need not be a shortest: rerun \
             without --reduce for that",
            found.transitions
        );
    }
    union.states += found.states;
    union.broken |= found.counterexample.is_some();
    union.truncated |= found.truncated;
    union.coverage.extend(found.coverage.iter().cloned());
    union.reached.extend(found.reached.iter().map(|i| i.name()));
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
        None => (ExitCode::SUCCESS, None),
        Some((path, broken)) => {
            let said = format!(
                "counterexample ({} inputs{}): {} broken: {}",
                path.len(),
                flaw.map(|f| format!(", flaw {f}")).unwrap_or_default(),
                broken.name(),
                broken.message
            );
            println!("{said}");
            let failure = junit::Failure {
                message: format!("{} broken", broken.name()),
                kind: broken.name().to_owned(),
                text: said,
            };
            write_report::<M>(make, &path, broken, flaw);
            for input in &path {
                println!(
                    "  {}",
                    report::describe(&serde_json::to_value(input).unwrap_or_default())
                );
            }
            (ExitCode::from(1), Some(failure))
        }
    }
}

/// Writes a counterexample's report: its inputs after the prelude, replayed from a fresh machine.
fn write_report<M: Driven>(
    make: &dyn Fn() -> M,
    path: &[M::Input],
    broken: turnfence_checks::fuzz::Broken<M>,
    flaw: Option<&str>,
) {
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
}
