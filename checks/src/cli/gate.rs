//! `turnfence gate`: the release gate, its evidence and its verdict.

use std::path::PathBuf;
use std::process::ExitCode;

use turnfence_checks::gate;
use turnfence_model::turn::{Profile, TurnMachine};

use super::write_stdout;

/// Runs the profile's gate — its scenarios (or the one named) on the machine made with the
/// profile — and writes the evidence.
pub fn run(
    scenario: &str,
    profile: Profile,
    output: PathBuf,
    clean: bool,
    agent: bool,
) -> ExitCode {
    let names: Vec<&str> = if scenario == "all" {
        let names = gate::scenarios::names(profile).to_vec();
        if names.is_empty() {
            let with: Vec<&str> = turnfence_model::turn::Profile::ALL
                .iter()
                .filter(|p| !gate::scenarios::names(**p).is_empty())
                .map(|p| p.name())
                .collect();
            eprintln!(
                "turnfence gate: the {} profile has no gate of its own (its rules are checked by `turnfence check` on its logs, the fuzzer and the explorer); the gates are {}",
                profile.name(),
                with.join(" and ")
            );
            return ExitCode::from(2);
        }
        names
    } else {
        match gate::scenarios::profile_of(scenario) {
            Some(own) if own != profile => {
                eprintln!(
                    "turnfence gate: {scenario} is a scenario of the {} profile's gate: add --profile {}",
                    own.name(),
                    own.name()
                );
                return ExitCode::from(2);
            }
            _ => vec![scenario],
        }
    };
    let run = gate::run(&names, || TurnMachine::with_profile(profile));
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
