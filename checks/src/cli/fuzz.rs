//! `turnfence fuzz`: deep random runs of a machine, sharded by case number.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use turnfence_checks::fuzz::{self, report};
use turnfence_model::Invariant;

use turnfence_checks::report::junit;

use super::{on_machine, write_junit, Driven, Named, Task};

/// What to run: `cases` cases from case number `first`, each of `steps` inputs (the command's
/// options).
#[derive(clap::Args)]
pub struct Plan {
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[arg(long, default_value_t = 1000)]
    pub cases: u64,
    /// The first case number (for sharding: `--first 0`, `--first 100000`, …).
    #[arg(long, default_value_t = 0)]
    pub first: u64,
    #[arg(long, default_value_t = 200)]
    pub steps: usize,
    /// Where counterexample reports go.
    #[arg(long, default_value = report::DIR)]
    pub out: PathBuf,
    /// Run with a planted flaw switched on (builds with `--features flaws` only).
    #[arg(long)]
    pub flaw: Option<String>,
    /// The rule choices the machine follows (`lab` by default): the turn machine takes any of
    /// the possible values, the fence machine `lab` only; a flaw runs under its own.
    #[arg(long, value_parser = super::profile_arg())]
    pub profile: Option<turnfence_checks::trace::Profile>,
    /// Also write the outcome as JUnit XML to this file.
    #[arg(long)]
    pub junit: Option<PathBuf>,
}

/// Runs the plan on machine `M` (with the plan's flaw planted, if it names one).
pub fn run<M: Named>(plan: &Plan) -> ExitCode {
    match on_machine::<M, _>(plan.flaw.as_deref(), plan.profile, Cases(plan)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("turnfence fuzz: {e}");
            ExitCode::from(2)
        }
    }
}

/// The plan's cases, on whichever machine was chosen.
struct Cases<'a>(&'a Plan);

impl Task for Cases<'_> {
    type Out = ExitCode;

    fn on<M: Driven>(self, make: &dyn Fn() -> M) -> ExitCode {
        cases::<M>(self.0, make)
    }
}

/// Runs the plan's cases; stops at the first counterexample, reported.
fn cases<M: Driven>(plan: &Plan, make: &dyn Fn() -> M) -> ExitCode {
    let progress = std::io::stderr().is_terminal();
    #[allow(clippy::disallowed_methods)] // Progress and the summary's time are for a person.
    let start = std::time::Instant::now();
    let mut reached = std::collections::BTreeSet::new();
    let mut steps = 0usize;
    for n in 0..plan.cases {
        let i = plan.first + n;
        let seed = fuzz::case_seed(plan.seed, i);
        match fuzz::run_case::<M>(seed, plan.steps, None, make) {
            Ok(r) => {
                reached.extend(r);
                steps += plan.steps;
            }
            Err(found) => {
                if progress {
                    eprintln!();
                }
                let report = report::build::<M>(&found, plan.flaw.as_deref(), make);
                return match report::write(&report, &plan.out) {
                    Ok(path) => {
                        let said = format!(
                            "case {i} (seed {seed}) broke {} at step {}: {}\nshrunk {} → {} inputs\nreport: {}\nreplay: {}",
                            report.violated.name(),
                            report.violated.step,
                            report.violated.message,
                            report.generated_inputs,
                            report.shrunk_inputs,
                            path.display(),
                            report::replay_command(&path, plan.flaw.is_some())
                        );
                        println!("{said}");
                        let failure = junit::Failure {
                            message: format!("case {i}: {}", report.violated.name()),
                            kind: report.violated.name().to_owned(),
                            text: said,
                        };
                        write_junit(
                            plan.junit.as_deref(),
                            "turnfence fuzz",
                            &[case::<M>(plan, vec![failure])],
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
                M::NAME,
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
    let names: Vec<&str> = reached
        .into_iter()
        .map(|i: M::Invariant| i.name())
        .collect();
    println!(
        "{} machine: {} cases (seed {}, cases {}..{}), {steps} steps, nothing broken; {} invariants exercised: {}; {:.1} s",
        M::NAME,
        plan.cases,
        plan.seed,
        plan.first,
        plan.first + plan.cases,
        names.len(),
        names.join(", "),
        start.elapsed().as_secs_f64()
    );
    write_junit(
        plan.junit.as_deref(),
        "turnfence fuzz",
        &[case::<M>(plan, Vec::new())],
    );
    ExitCode::SUCCESS
}

/// The run as one JUnit test case: its machine, seed and range of cases.
fn case<M: Driven>(plan: &Plan, failures: Vec<junit::Failure>) -> junit::Case {
    junit::Case {
        name: format!(
            "fuzz {} seed {} cases {}..{}",
            M::NAME,
            plan.seed,
            plan.first,
            plan.first + plan.cases
        ),
        classname: format!("turnfence.fuzz.{}", M::NAME),
        failures,
        error: None,
        skipped: None,
    }
}
