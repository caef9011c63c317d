//! `turnfence`: the command line over the verification suite. Each command is a thin file in
//! `cli/`; this file only parses the arguments and hands them over.

use std::process::ExitCode;

use clap::Parser;

mod cli;

/// mimalloc rather than the system's allocator: exploring clones and drops millions of small
/// states, and glibc's allocator spends most of that time consolidating its free lists.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    cli::run(cli::Cli::parse())
}
