//! `turnfence check --follow PATH` (or `-`, a pipe): a log judged as it is written. Each finding
//! is printed when the line that decides it is read; a session's end-of-session rules when it
//! ends, or — silent longer than `--idle-timeout` — reported not judged. A line that cannot be
//! read is an input error for its session, and the rest goes on. Exit 0 at the end of the input
//! or on SIGINT/SIGTERM, with the summary; with `--fail-fast`, 1 at the first finding.
//!
//! The loop is the live monitor's (`live::run`); this is its front: what makes sense live.

use std::process::ExitCode;
use std::time::Duration;

use turnfence_checks::live::run::{run, Live};

use super::check::Ask;
use super::Format;

/// `check --follow`, as asked: one path, written as text or JSON lines; any other ask is an input
/// error (exit 2).
pub fn start(
    paths: &[std::path::PathBuf],
    ask: &Ask,
    idle_timeout: Option<f64>,
    fail_fast: bool,
) -> ExitCode {
    let odd = [
        (
            matches!(ask.format, Format::Junit | Format::Markdown),
            "--format junit or markdown",
        ),
        (ask.junit.is_some(), "--junit"),
        (ask.baseline.is_some(), "--baseline"),
        (ask.write_baseline.is_some(), "--write-baseline"),
        (paths.len() != 1, "more than one path"),
    ];
    if let Some((_, what)) = odd.iter().find(|(odd, _)| *odd) {
        eprintln!(
            "turnfence check: {what} makes no sense with --follow (one log judged as it is \
             written, findings printed as text or JSON lines)"
        );
        return ExitCode::from(2);
    }
    let idle_timeout = match idle_timeout.map(Duration::try_from_secs_f64) {
        Some(Err(_)) => {
            eprintln!("turnfence check: --idle-timeout takes seconds, zero or more");
            return ExitCode::from(2);
        }
        Some(Ok(d)) => Some(d),
        None => None,
    };
    let live = Live {
        json: matches!(ask.format, Format::Json),
        idle_timeout,
        fail_fast,
    };
    run(&paths[0], &ask.flags(), &live)
}
