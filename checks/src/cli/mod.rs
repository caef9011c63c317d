//! The commands of the `turnfence` CLI, one thin file each: `gate`, `check`, `fuzz`, `explore`,
//! `replay` and `promote`. Whatever a command does to a machine it does through the model's
//! `Machine` trait, so `fuzz`, `explore` and `replay` are written once for both machines.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use turnfence_checks::dialect::{self, DIALECTS};
use turnfence_checks::explore::Explore;
use turnfence_checks::fuzz::Fuzz;
use turnfence_checks::gate as suite_gate;
use turnfence_checks::trace::conform::Conform;
use turnfence_checks::trace::{Dialect, Machine, Profile};
use turnfence_model::Plantable;

mod check;
mod explore;
mod follow;
mod fuzz;
mod gate;
mod replay;

/// What the generic commands need of a machine.
pub trait Driven: Fuzz + Explore {}

impl<M: Fuzz + Explore> Driven for M {}

/// A machine the command line names: driven sound (under a profile it has), or with a flaw
/// planted (a build with the `flaws` feature only).
pub trait Named: Driven + Conform + Plantable<Planted: Driven> {}

impl<M: Driven + Conform + Plantable<Planted: Driven>> Named for M {}

/// What a generic command does once its machine's type is chosen (sound or planted).
pub trait Task {
    type Out;

    /// Runs the task on machines made by `make`.
    fn on<M: Driven>(self, make: &dyn Fn() -> M) -> Self::Out;
}

/// Calls a generic command with the named machine's type as `M`.
macro_rules! by_machine {
    ($machine:expr, $module:ident :: $f:ident ($($arg:expr),*)) => {
        match $machine {
            Machine::Turn => $module::$f::<turnfence_model::turn::TurnMachine>($($arg),*),
            Machine::Fence => $module::$f::<turnfence_model::fence::FenceMachine>($($arg),*),
        }
    };
}

#[derive(Parser)]
#[command(
    name = "turnfence",
    version,
    about = "Proves the cancellation machinery of conversational agents correct."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs the release gate: the eight scenarios through the turn machine, 24 computed checks
    /// (with a real stack's `--profile`, that profile's own scenarios and checks, if it has any).
    /// Exit 0 on PASS, 1 on FAIL, 2 on an input or IO error.
    Gate {
        /// One scenario of the profile's gate, or `all`.
        #[arg(long, default_value = "all", value_parser = scenario_name)]
        scenario: String,
        /// The rule choices of the machine the scenarios run on, and so which gate runs.
        #[arg(long, default_value = "lab", value_parser = profile_arg())]
        profile: turnfence_checks::trace::Profile,
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
    /// Checks JSON Lines traces against their machine, each read as its meta line says, else as
    /// its first line shows, else as the flags say. Exit 0: every one conforms; 1: violations in
    /// any; 2: any unreadable (a malformed line, an unknown event or field, time going
    /// backwards, a file that cannot be read, …).
    Check {
        /// Traces: files (`-` for standard input) and directories (every `*.jsonl`, `*.ndjson` and JSON `*.log` beneath; other files are listed as skipped).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// The dialect of a trace whose meta line names none and whose first line is no stack's
        /// (else `canonical`). A trace's own meta line or first line wins, and a flag it
        /// contradicts is reported not used.
        #[arg(long, value_parser = dialect_arg())]
        dialect: Option<Dialect>,
        /// The machine of a trace whose meta line names none (else `turn`; a stack's log is a
        /// turn trace).
        #[arg(long, value_enum)]
        machine: Option<Machine>,
        /// The rule choices of a trace whose meta line names none (else its dialect's own, a
        /// real stack's, or `lab`); a stack's log is read under its own profile or the lab's.
        #[arg(long, value_parser = profile_arg())]
        profile: Option<turnfence_checks::trace::Profile>,
        /// The field of a line that names its session (a room, a call id), for a log of many
        /// sessions; by default the meta line's `session_key`, else `session` (read by the
        /// dialects that name sessions by a field of their own choosing).
        #[arg(long, value_name = "FIELD")]
        session_key: Option<String>,
        /// How the outcome is written: `text`; `json`, every finding; `junit`, JUnit XML;
        /// `markdown`, a table of the traces and each finding's story as a Mermaid sequence
        /// diagram in the stack's words, within a GitHub comment's 65 536 characters.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Also write the outcome as JUnit XML to this file (as `fuzz` and `explore` do; the
        /// same document `--format junit` prints).
        #[arg(long)]
        junit: Option<PathBuf>,
        /// At most this many findings in the text report of one trace (every one is still
        /// counted; the JSON report keeps them all).
        #[arg(long, default_value_t = turnfence_checks::report::text::MAX_TEXT_FINDINGS)]
        max_findings: usize,
        /// Acknowledged findings (a file `--write-baseline` wrote): only the others fail;
        /// those it holds are reported baselined, its entries that no longer occur stale. A
        /// malformed file is an input error (exit 2).
        #[arg(long, value_name = "FILE")]
        baseline: Option<PathBuf>,
        /// Write the current findings as a baseline to this file (reason "acknowledged", for a
        /// person to replace) and exit 0 unless a trace is unreadable.
        #[arg(long, value_name = "FILE")]
        write_baseline: Option<PathBuf>,
        /// With `--baseline`: an entry that no longer occurs fails the run (exit 1).
        #[arg(long, requires = "baseline")]
        strict_baseline: bool,
        /// Judge one log as it is written: a file followed as `tail -F` follows it (through
        /// rotation and truncation), or `-`, a pipe, to its end. Each finding is printed when the
        /// line that decides it is read (`--format text` or `json`, one object per line), the
        /// summary at the end of the input or on SIGINT/SIGTERM; exit 0 then.
        #[arg(long)]
        follow: bool,
        /// With `--follow`: a session without a line for this many seconds is ended, its
        /// end-of-session rules reported not judged (never as findings).
        #[arg(long, value_name = "SECONDS", requires = "follow")]
        idle_timeout: Option<f64>,
        /// With `--follow`: exit 1 at the first finding.
        #[arg(long, requires = "follow")]
        fail_fast: bool,
    },
    /// Deep random runs: `cases` cases of `steps` inputs each, case i seeded from (seed, i).
    /// Shard across machines by giving each a different `--first` (a range of case numbers).
    /// Exit 0: nothing broken; 1: a counterexample, shrunk and reported.
    Fuzz {
        #[arg(long, value_enum)]
        machine: Machine,
        #[command(flatten)]
        plan: fuzz::Plan,
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
        /// The CI bound sets and then the deeper ones CI also explores (`ci/explore.sh`): the
        /// fence machine's take a minute or so and a few GB.
        #[arg(long, conflicts_with = "bounds")]
        deep: bool,
        /// Explore every bound set up to a renaming of its interchangeable names (symmetry
        /// reduction: the fence machine's tokens and request ids, the turn machine's children of
        /// one turn in another spawn order), one state per class.
        #[arg(long)]
        symmetry: bool,
        /// Partial-order reduction (sleep sets): an input is not taken where an independent one
        /// taken first reaches the same successor. The same states and verdict, fewer
        /// transitions; a counterexample is then one found, not a shortest (rerun without
        /// `--reduce` for that). Off by default; not with `--symmetry`.
        #[arg(long, conflicts_with = "symmetry")]
        reduce: bool,
        /// Also write the outcome as JUnit XML to this file (a test case per bound set, and one
        /// for the coverage of their union).
        #[arg(long)]
        junit: Option<PathBuf>,
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
pub enum Format {
    Text,
    Json,
    /// JUnit XML, for CI dashboards.
    Junit,
    /// Markdown with Mermaid diagrams, for a pull request comment.
    Markdown,
}

fn scenario_name(s: &str) -> Result<String, String> {
    if s == "all" || suite_gate::scenarios::profile_of(s).is_some() {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "expected all or one of: {}",
            Profile::ALL
                .iter()
                .flat_map(|p| suite_gate::scenarios::names(*p))
                .copied()
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}

/// Runs one command.
pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Gate {
            scenario,
            profile,
            output,
            clean,
            agent,
        } => gate::run(&scenario, profile, output, clean, agent),
        Command::Check {
            paths,
            dialect,
            machine,
            profile,
            session_key,
            format,
            junit,
            max_findings,
            baseline,
            write_baseline,
            strict_baseline,
            follow,
            idle_timeout,
            fail_fast,
        } => {
            let ask = check::Ask {
                dialect,
                machine,
                profile,
                session_key,
                format,
                junit,
                max_findings,
                baseline,
                write_baseline,
                strict_baseline,
            };
            if follow {
                return follow::start(&paths, &ask, idle_timeout, fail_fast);
            }
            check::run(&paths, &ask)
        }
        Command::Fuzz { machine, plan } => by_machine!(machine, fuzz::run(&plan)),
        Command::Explore {
            machine,
            depth,
            flaw,
            bounds,
            deep,
            symmetry,
            reduce,
            junit,
        } => by_machine!(
            machine,
            explore::run(
                depth,
                flaw.as_deref(),
                bounds.as_deref(),
                deep,
                (symmetry, reduce),
                junit.as_deref()
            )
        ),
        Command::Replay { file } => replay::replay(&file),
        Command::Promote { file, fixtures } => replay::promote(&file, &fixtures),
    }
}

/// Runs `task` on the sound machine `M` (made with `profile`, if one is given), or on `M` with
/// the flaw `flaw` planted if one is given (under the flaw's own profile: a different `profile`
/// is an error).
pub fn on_machine<M: Named, T: Task>(
    flaw: Option<&str>,
    profile: Option<Profile>,
    task: T,
) -> Result<T::Out, String> {
    match flaw {
        None => {
            let p = profile.unwrap_or_default();
            let fresh = M::for_profile(p)
                .ok_or_else(|| format!("the {} machine has no profile {:?}", M::NAME, p.name()))?;
            Ok(task.on::<M>(&move || fresh.clone()))
        }
        Some(name) => planted::<M, T>(name, profile, task),
    }
}

/// `task` on the machine `M` with the flaw `name` planted: the only place the CLI names a
/// planted machine, compiled with this crate's `flaws` feature alone.
#[cfg(feature = "flaws")]
fn planted<M: Named, T: Task>(
    name: &str,
    profile: Option<Profile>,
    task: T,
) -> Result<T::Out, String> {
    let flaw: M::Flaw =
        serde_json::from_value(serde_json::Value::String(name.into())).map_err(|_| {
            let names: Vec<String> = <M::Flaw as turnfence_model::Flaw>::ALL
                .iter()
                .filter_map(|f| serde_json::to_value(f).ok())
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect();
            format!(
                "unknown {} flaw {name:?}; the {} flaws are: {}",
                M::NAME,
                M::NAME,
                names.join(", ")
            )
        })?;
    let planted = M::with_flaw(flaw);
    let runs_under = planted.profile_name().unwrap_or("lab");
    if let Some(p) = profile.filter(|p| p.name() != runs_under) {
        return Err(format!(
            "flaw {name:?} runs under the profile {runs_under:?}, not {:?}",
            p.name()
        ));
    }
    Ok(task.on::<M::Planted>(&move || planted.clone()))
}

/// Without the `flaws` feature there is no planted machine to run.
#[cfg(not(feature = "flaws"))]
fn planted<M: Named, T: Task>(name: &str, _: Option<Profile>, _: T) -> Result<T::Out, String> {
    Err(format!("flaw {name:?} needs the flaw switch: rebuild with `cargo run -p turnfence-checks --features flaws -- …`"))
}

/// Writes to standard output; a reader that went away (a closed pipe) is not an error of ours.
pub fn write_stdout(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// Writes a JUnit document where `--junit` asked; says so on standard error if it cannot.
pub fn write_junit(
    path: Option<&std::path::Path>,
    suite: &str,
    cases: &[turnfence_checks::report::junit::Case],
) {
    let Some(path) = path else { return };
    let xml = turnfence_checks::report::junit::render(suite, cases);
    if let Err(e) = turnfence_checks::shared::write_atomic(path, &xml) {
        eprintln!("turnfence: cannot write {}: {e}", path.display());
    }
}

/// `--dialect`: a dialect of the registry, by name, each with what it reads.
fn dialect_arg() -> impl clap::builder::TypedValueParser<Value = Dialect> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let names = DIALECTS
        .iter()
        .map(|d| PossibleValue::new(d.name()).help(d.about()));
    PossibleValuesParser::new(names)
        .map(|name| dialect::by_name(&name).expect("a possible value is a dialect's name"))
}

/// `--profile`: one of the model's profiles, by name.
pub(crate) fn profile_arg() -> impl clap::builder::TypedValueParser<Value = Profile> {
    use clap::builder::{PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(Profile::ALL.iter().map(|p| p.name()))
        .map(|name| Profile::from_name(&name).expect("a possible value is a profile's name"))
}
