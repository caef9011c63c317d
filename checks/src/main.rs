//! `turnfence`: the command line over the verification suite. Each command is a thin file in
//! `cli/`; this file only parses the arguments and hands them over.

use std::process::ExitCode;

use clap::Parser;

mod cli;

fn main() -> ExitCode {
    cli::run(cli::Cli::parse())
}
