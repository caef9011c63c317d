//! `turnfence check`: one trace judged against a machine.

use std::process::ExitCode;

use turnfence_checks::trace::{self, Dialect, Machine};

use super::{write_stdout, Format};

/// Checks the trace in `file` (`-` for standard input).
pub fn run(
    file: &std::path::Path,
    dialect: Dialect,
    machine: Option<Machine>,
    format: Format,
    max_findings: usize,
) -> ExitCode {
    #[allow(clippy::disallowed_methods)] // The CLI reads the trace it is asked to check.
    let verdict = if file.as_os_str() == "-" {
        trace::check_input(std::io::stdin().lock(), dialect, machine)
    } else {
        match std::fs::File::open(file) {
            Ok(f) => trace::check_input(std::io::BufReader::new(f), dialect, machine),
            Err(e) => {
                // Not a line of a trace: the file itself could not be opened.
                let message = format!("cannot read {}: {e}", file.display());
                match format {
                    Format::Text => eprintln!("turnfence check: {message}"),
                    Format::Json => write_stdout(&format!(
                        "{}\n",
                        serde_json::json!({ "status": "input_error", "error": { "message": message } })
                    )),
                }
                return ExitCode::from(2);
            }
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
        Format::Text => trace::render_text(&v, max_findings),
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
