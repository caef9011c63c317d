//! `turnfence`: the thin command line over the verification suite.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cli_fuzz;
use turnfence_checks::gate;
use turnfence_checks::trace::{self, Dialect, Machine};
use turnfence_model::turn::TurnMachine;

#[derive(Parser)]
#[command(
    name = "turnfence",
    version,
    about = "Proves the cancellation machinery of conversational agents correct."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs the release gate: the eight scenarios through the turn machine, 24 computed checks.
    /// Exit 0 on PASS, 1 on FAIL, 2 on an input or IO error.
    Gate {
        /// One scenario, or `all`.
        #[arg(long, default_value = "all", value_parser = scenario_name)]
        scenario: String,
        /// Directory for the evidence files.
        #[arg(long, default_value = "lab-output")]
        output: PathBuf,
        /// Remove the evidence files a previous run may have left first.
        #[arg(long)]
        clean: bool,
        /// Print one JSON line (`status`, `report`) instead of the gate text.
        #[arg(long)]
        agent: bool,
    },
    /// Checks a JSON Lines trace against the turn machine. Exit 0: it conforms; 1: violations;
    /// 2: an input error (malformed line, unknown event or field, time going backwards, …).
    Check {
        /// The trace (`-` for standard input).
        file: PathBuf,
        #[arg(long, value_enum, default_value = "canonical")]
        dialect: Dialect,
        /// The machine the trace is of; by default the meta line's `machine`, else `turn`.
        #[arg(long, value_enum)]
        machine: Option<Machine>,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Deep random runs: `cases` cases of `steps` inputs each, case i seeded from (seed, i).
    /// Shard across machines by giving each a different `--first` (a range of case numbers).
    /// Exit 0: nothing broken; 1: a counterexample, shrunk and reported.
    Fuzz {
        #[arg(long, value_enum)]
        machine: Machine,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        #[arg(long, default_value_t = 1000)]
        cases: u64,
        /// The first case number (for sharding: `--first 0`, `--first 100000`, …).
        #[arg(long, default_value_t = 0)]
        first: u64,
        #[arg(long, default_value_t = 200)]
        steps: usize,
        /// Where counterexample reports go.
        #[arg(long, default_value = turnfence_checks::fuzz::report::DIR)]
        out: PathBuf,
        /// Run with a planted flaw switched on (builds with `--features flaws` only).
        #[arg(long)]
        flaw: Option<String>,
    },
    /// Explores a machine breadth-first within its CI bounds, up to `depth` inputs: distinct
    /// states, transitions, coverage, and the shortest counterexample if an invariant breaks.
    Explore {
        #[arg(long, value_enum)]
        machine: Machine,
        #[arg(long, default_value_t = 64)]
        depth: usize,
        /// Explore with a planted flaw switched on (builds with `--features flaws` only).
        #[arg(long)]
        flaw: Option<String>,
        /// Instead of the CI bounds, these (as JSON, e.g. '{"turns":1,"children_per_turn":2,
        /// "deltas_per_turn":2,"deadline_ms":100,"client":true}').
        #[arg(long)]
        bounds: Option<String>,
    },
    /// Re-runs a counterexample report and prints its verdict. Exit 1 if it still breaks its
    /// invariant.
    Replay { file: PathBuf },
    /// Turns a counterexample report into a rejected fixture (`fixtures/rejected/NNNN_….jsonl`).
    Promote {
        file: PathBuf,
        #[arg(long, default_value = "fixtures/rejected")]
        fixtures: PathBuf,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Format {
    Text,
    Json,
}

fn scenario_name(s: &str) -> Result<String, String> {
    if s == "all" || gate::NAMES.contains(&s) {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "expected all or one of: {}",
            gate::NAMES.join(", ")
        ))
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Gate {
            scenario,
            output,
            clean,
            agent,
        } => run_gate(&scenario, output, clean, agent),
        Command::Check {
            file,
            dialect,
            machine,
            format,
        } => run_check(&file, dialect, machine, format),
        Command::Fuzz {
            machine,
            seed,
            cases,
            first,
            steps,
            out,
            flaw,
        } => {
            let plan = cli_fuzz::Plan {
                seed,
                first,
                cases,
                steps,
                out,
                flaw,
            };
            cli_fuzz::fuzz(machine, &plan)
        }
        Command::Explore {
            machine,
            depth,
            flaw,
            bounds,
        } => cli_fuzz::explore(machine, depth, flaw.as_deref(), bounds.as_deref()),
        Command::Replay { file } => cli_fuzz::replay(&file),
        Command::Promote { file, fixtures } => cli_fuzz::promote(&file, &fixtures),
    }
}

fn run_gate(scenario: &str, output: PathBuf, clean: bool, agent: bool) -> ExitCode {
    let names: Vec<&str> = if scenario == "all" {
        gate::NAMES.to_vec()
    } else {
        vec![scenario]
    };
    let run = gate::run(&names, TurnMachine::new);
    if let Err(e) = gate::write_evidence(&run, &output, clean) {
        eprintln!(
            "turnfence gate: cannot write evidence to {}: {e}",
            output.display()
        );
        return ExitCode::from(2);
    }
    let dir = std::path::absolute(&output).unwrap_or(output);
    if agent {
        let line = serde_json::json!({
            "status": run.status(),
            "report": dir.join("report.json"),
        });
        write_stdout(&format!("{line}\n"));
    } else {
        write_stdout(&format!(
            "{}\nEvidence directory: {}\n",
            run.acceptance(),
            dir.display()
        ));
    }
    if run.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn run_check(
    file: &std::path::Path,
    dialect: Dialect,
    machine: Option<Machine>,
    format: Format,
) -> ExitCode {
    #[allow(clippy::disallowed_methods)] // The CLI reads the trace it is asked to check.
    let verdict = if file.as_os_str() == "-" {
        trace::check_input(std::io::stdin().lock(), dialect, machine)
    } else {
        match std::fs::File::open(file) {
            Ok(f) => trace::check_input(std::io::BufReader::new(f), dialect, machine),
            Err(e) => Err(trace::InputError::at(
                0,
                format!("cannot read {}: {e}", file.display()),
            )),
        }
    };
    let v = match verdict {
        Ok(v) => v,
        Err(e) => {
            match format {
                Format::Text => eprintln!("turnfence check: {}: {e}", file.display()),
                Format::Json => write_stdout(&format!(
                    "{}\n",
                    serde_json::json!({ "status": "input_error", "error": e })
                )),
            }
            return ExitCode::from(2);
        }
    };
    let status = if v.conforms() {
        "conforms"
    } else {
        "violations"
    };
    let text = match format {
        Format::Text => trace::render_text(&v),
        Format::Json => format!(
            "{}\n",
            serde_json::json!({ "status": status, "verdict": v })
        ),
    };
    write_stdout(&text);
    if v.conforms() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Writes to standard output; a reader that went away (a closed pipe) is not an error of ours.
fn write_stdout(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}
