//! `check --follow` as a user runs it: a pipe's findings as JSON lines, `--fail-fast`, a garbled
//! line in a pipe, flags that make no sense live, a followed file and SIGINT (the monitor itself:
//! `live.rs`).

use std::io::Write;
use std::process::{Command, Stdio};

use crate::live::corpus_log;

fn turnfence_piped(args: &[&str], input: &[u8]) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_turnfence"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn a_pipe_to_check_follow_prints_each_finding_as_a_json_line_then_the_summary() {
    let log = corpus_log("interop/livekit-agents@1.8.9/bug_audio_after_interruption.events.jsonl");
    let out = turnfence_piped(&["check", "--follow", "-", "--format", "json"], &log);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let finding = &lines[0]["finding"];
    assert_eq!(finding["invariant"], "no_late_delivery");
    assert_eq!(finding["line"], 20);
    assert_eq!(finding["since"], 19);
    assert_eq!(finding["session"], "livekit");
    let summary = &lines.last().unwrap()["summary"];
    assert_eq!(summary["lines"], 32);
    assert_eq!(summary["finding_count"], 1);
}

#[test]
fn fail_fast_exits_1_at_the_first_finding_and_a_conforming_pipe_exits_0() {
    let bug = corpus_log("interop/livekit-agents@1.8.9/bug_audio_after_interruption.events.jsonl");
    let out = turnfence_piped(&["check", "--follow", "-", "--fail-fast"], &bug);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("no_late_delivery at line 20"), "{text}");
    let ok = corpus_log("interop/livekit-agents@1.8.9/confirmed_interruption.events.jsonl");
    let out = turnfence_piped(&["check", "--follow", "-", "--fail-fast"], &ok);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .starts_with("CONFORMS"));
}

#[test]
fn a_bad_line_in_a_pipe_is_an_input_error_for_its_session_and_the_rest_goes_on() {
    // Two sessions of the canonical form; a line of one is garbled mid-log.
    let accept = |s: &str| {
        format!("{{\"at\":0,\"session\":\"{s}\",\"input\":\"accept\",\"turn\":\"t1\",\"generation\":1,\"mode\":\"text\"}}\n")
    };
    let text = format!(
        "{{\"meta\":{{\"dialect\":\"canonical\",\"partial\":true}}}}\n{}{}{}{}",
        accept("a"),
        accept("b"),
        "{\"at\":5,\"session\":\"a\",\"input\"\n",
        "{\"at\":6,\"session\":\"b\",\"output\":\"delivered\",\"turn\":\"t1\",\"generation\":1,\"seq\":9}\n",
    );
    let out = turnfence_piped(
        &["check", "--follow", "-", "--format", "json"],
        text.as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let error = lines
        .iter()
        .find(|l| l.get("input_error").is_some())
        .unwrap();
    assert_eq!(error["input_error"]["error"]["line"], 4);
    assert_eq!(error["input_error"]["sessions"], serde_json::json!(["a"]));
    // Session b goes on: a frame the model never produced is judged at line 5.
    let b: Vec<&serde_json::Value> = lines
        .iter()
        .filter_map(|l| l.get("finding"))
        .filter(|f| f["session"] == "b")
        .collect();
    assert!(b.iter().any(|f| f["line"] == 5), "{lines:?}");
    let summary = &lines.last().unwrap()["summary"];
    assert_eq!(summary["input_error_count"], 1);
    assert_eq!(summary["lines"], 5);
    // Both sessions ended: `a` at its bad line, `b` at the end of the input.
    assert_eq!(summary["sessions"], 2);
}

#[test]
fn flags_that_make_no_sense_with_follow_are_input_errors() {
    for args in [
        &["check", "--follow", "-", "--format", "junit"][..],
        &["check", "--follow", "-", "--format", "markdown"],
        &["check", "--follow", "-", "--baseline", "b.json"],
        &["check", "--follow", "a.jsonl", "b.jsonl"],
        &["check", "-", "--fail-fast"],
        &["check", "-", "--idle-timeout", "5"],
        &["check", "--follow", "-", "--idle-timeout", "-1"],
    ] {
        let out = turnfence_piped(args, b"");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

/// A child process that does not outlive its test, whatever the test asserts first.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_followed_file_is_judged_as_it_grows_and_sigint_ends_it_with_the_summary() {
    use std::io::{BufRead, BufReader};
    let dir = std::env::temp_dir().join(format!("turnfence-follow-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("agent.jsonl");
    let log = corpus_log("interop/livekit-agents@1.8.9/bug_audio_after_interruption.events.jsonl");
    let cut = log.iter().take(3000).filter(|b| **b == b'\n').count();
    let mut file = std::fs::File::create(&path).unwrap();
    // The first part, ending mid-line, is there before the monitor starts.
    file.write_all(&log[..3000]).unwrap();
    file.flush().unwrap();
    let mut child = Reaped(
        Command::new(env!("CARGO_BIN_EXE_turnfence"))
            .args([
                "check",
                "--follow",
                path.to_str().unwrap(),
                "--format",
                "json",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(
        cut < 19,
        "the late frame (line 20) comes after the monitor starts"
    );
    // The rest, then a blank line: an input error of the monitor's own, whatever the dialect
    // makes of the log, so the test knows every line was read without waiting on a finding
    // (one that never comes, in a broken build, would leave it waiting for ever).
    file.write_all(&log[3000..]).unwrap();
    file.write_all(b"\n").unwrap();
    file.flush().unwrap();
    let mut out = BufReader::new(child.0.stdout.take().unwrap());
    let mut read = Vec::new();
    loop {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            break;
        }
        let record: serde_json::Value = serde_json::from_str(&line).unwrap();
        let blank = record["input_error"]["error"]["line"] == 33;
        read.push(record);
        if blank {
            break;
        }
    }
    let finding = &read[0]["finding"];
    assert_eq!(finding["invariant"], "no_late_delivery", "{read:?}");
    assert_eq!(finding["line"], 20);
    assert_eq!(
        read.len(),
        2,
        "the finding, then the blank line's error: {read:?}"
    );
    let interrupted = Command::new("kill")
        .args(["-INT", &child.0.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupted.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    let status = child.0.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{rest}");
    let summary: serde_json::Value = serde_json::from_str(rest.lines().last().unwrap()).unwrap();
    assert_eq!(summary["summary"]["lines"], 33, "{rest}");
    assert_eq!(summary["summary"]["finding_count"], 1, "{rest}");
    assert_eq!(summary["summary"]["input_error_count"], 1, "{rest}");
    let _ = std::fs::remove_dir_all(&dir);
}
