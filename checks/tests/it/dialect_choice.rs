//! How `turnfence check` chooses each log's dialect, machine and profile: its meta line, else
//! (the dialect) its first line recognised as a stack's, else the flags — in a directory each
//! file on its own — and a flag a log contradicts reported not used, never silently.

use std::path::{Path, PathBuf};

use turnfence_checks::dialect::{self, Flags};
use turnfence_checks::trace::{Machine, Profile};

use crate::cli::{assert_exit, turnfence};
use crate::read;

fn accepted(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/accepted")
        .join(name)
}

/// An accepted fixture's log less its meta line: the log as its stack wrote it.
fn without_meta(name: &str) -> String {
    let text = read(&accepted(name));
    assert!(
        text.starts_with("{\"meta\""),
        "{name} opens with its meta line"
    );
    text.split_once('\n').unwrap().1.to_owned()
}

/// A bare Realtime log (no envelope) that opens with the server's `error` event: a line too
/// generic to be recognised as the Realtime API's, which the openai-realtime dialect reads.
fn realtime_opening_with_an_error() -> String {
    let error = r#"{"t_ms":0,"type":"error","error":{"type":"invalid_request_error","code":"unknown_parameter","message":"Unknown parameter"}}"#;
    format!(
        "{error}\n{}",
        without_meta("0143_realtime_log_bare_events_g711_audio.jsonl")
    )
}

/// `turnfence check --format json ARGS...` in `dir`: its exit code and the JSON it printed.
fn check_json(args: &[&str], dir: &Path) -> (Option<i32>, serde_json::Value) {
    let mut all = vec!["check", "--format", "json"];
    all.extend(args);
    let out = turnfence(&all, dir);
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), v)
}

fn notes(v: &serde_json::Value) -> Vec<&str> {
    v["overrides"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect()
}

/// A trace's meta line decides its dialect; a flag that disagrees is not used, and says so.
#[test]
fn check_reads_the_dialect_from_the_meta_line() {
    let dir = tempfile::tempdir().unwrap();
    let lab = accepted("0001_lab_baseline_stream.jsonl");
    let out = turnfence(&["check", lab.to_str().unwrap()], dir.path());
    assert_exit(&out, 0, &out.stderr);
    let out = turnfence(
        &["check", lab.to_str().unwrap(), "--dialect", "canonical"],
        dir.path(),
    );
    assert_exit(&out, 0, &out.stderr);
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("--dialect canonical not used: the meta line names dialect lab"));
}

/// A log whose meta line names its dialect, machine or profile is read as it says: each flag
/// that contradicts it is not used, and the report names the flag and why.
#[test]
fn the_meta_line_beats_the_flags_and_the_report_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let lab = accepted("0001_lab_baseline_stream.jsonl");
    let lab = lab.to_str().unwrap();
    let (code, v) = check_json(
        &[lab, "--dialect", "canonical", "--machine", "fence"],
        dir.path(),
    );
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(
        (&v["dialect"], &v["machine"]),
        (&"lab".into(), &"turn".into())
    );
    assert_eq!(
        notes(&v),
        [
            "--dialect canonical not used: the meta line names dialect lab",
            "--machine fence not used: the meta line names dialect lab, and the lab dialect has \
             turn traces only",
        ]
    );
    // A flag that agrees with the meta line is no departure: nothing to say.
    let (code, v) = check_json(&[lab, "--dialect", "lab"], dir.path());
    assert_eq!(code, Some(0), "{v}");
    assert!(notes(&v).is_empty(), "{v}");
    // The meta line's profile, and a real stack's dialect's own, beat another `--profile`.
    let under_lab = accepted("0138_realtime_log_under_lab_audio_response_barged_in.jsonl");
    let (_, v) = check_json(
        &[under_lab.to_str().unwrap(), "--profile", "openai-realtime"],
        dir.path(),
    );
    assert_eq!(v["profile"], "lab", "{v}");
    assert_eq!(
        notes(&v),
        ["--profile openai-realtime not used: the meta line names profile lab"]
    );
    let realtime = accepted("0069_realtime_log_happy_path.jsonl");
    let (code, v) = check_json(
        &[realtime.to_str().unwrap(), "--profile", "pipecat"],
        dir.path(),
    );
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["profile"], "openai-realtime", "{v}");
    assert_eq!(
        notes(&v),
        [
            "--profile pipecat not used: the meta line names dialect openai-realtime, and the \
             openai-realtime dialect is read under its own profile \"openai-realtime\", not \
             \"pipecat\""
        ]
    );
}

/// A log without a meta line whose first line is a stack's is read as that stack's: a
/// contradicting `--dialect`, and a machine or profile the stack cannot have, are not used,
/// each said.
#[test]
fn a_recognised_first_line_beats_the_flags() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("pipecat.jsonl");
    std::fs::write(
        &log,
        without_meta("0212_pipecat_log_call_cancelled_by_the_interruption.jsonl"),
    )
    .unwrap();
    let args = [
        log.to_str().unwrap(),
        "--dialect",
        "lab",
        "--machine",
        "fence",
        "--profile",
        "livekit-agents",
    ];
    let (code, v) = check_json(&args, dir.path());
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(
        (&v["dialect"], &v["machine"], &v["profile"]),
        (&"pipecat".into(), &"turn".into(), &"pipecat".into())
    );
    let recognised = "its first line is recognised as pipecat";
    assert_eq!(
        notes(&v),
        [
            "read as pipecat: no meta line names a dialect, and its first line is a Pipecat \
             frame as the observer writes it (`t_ms`, `frame`)"
                .to_owned(),
            format!("--dialect lab not used: {recognised}"),
            format!(
                "--machine fence not used: {recognised}, and the pipecat dialect has turn traces \
                 only"
            ),
            format!(
                "--profile livekit-agents not used: {recognised}, and the pipecat dialect is read \
                 under its own profile \"pipecat\", not \"livekit-agents\""
            ),
        ]
    );
    // The lab's rules judge any stack's log: `--profile lab` is no contradiction.
    let (_, v) = check_json(&[log.to_str().unwrap(), "--profile", "lab"], dir.path());
    assert_eq!(v["profile"], "lab", "{v}");
}

/// A log with neither a meta line nor a first line any stack's shape fits is read as the flag
/// says; with no flag either, it is an input error at line 1 that names what to add.
#[test]
fn the_flag_is_used_where_the_log_says_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("realtime.jsonl");
    std::fs::write(&log, realtime_opening_with_an_error()).unwrap();
    let p = log.to_str().unwrap();
    let (code, v) = check_json(&[p, "--dialect", "openai-realtime"], dir.path());
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(
        (&v["dialect"], &v["profile"]),
        (&"openai-realtime".into(), &"openai-realtime".into())
    );
    assert!(notes(&v).is_empty(), "{v}");
    let out = turnfence(&["check", p], dir.path());
    assert_exit(&out, 2, &out.stderr);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("line 1: expected exactly one of `input`, `output`, `meta`, `session_end`")
            && err.contains(
                "add a meta line naming it ({\"meta\":{\"dialect\":\"…\"}}) or --dialect"
            ),
        "{err}"
    );
    // A canonical trace's own error at line 1 is not about its dialect: no such advice.
    let typo = dir.path().join("typo.jsonl");
    std::fs::write(&typo, "{\"at\":0,\"input\":\"acept\",\"turn\":\"t1\"}\n").unwrap();
    let out = turnfence(&["check", typo.to_str().unwrap()], dir.path());
    assert_exit(&out, 2, &out.stderr);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("--dialect"));
}

/// A directory of two stacks' logs, none with a meta line: each file is read in its own
/// stack's dialect, recognised from its own first line.
#[test]
fn a_directory_reads_each_stacks_log_in_its_own_dialect() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let pipecat = without_meta("0212_pipecat_log_call_cancelled_by_the_interruption.jsonl");
    let livekit = without_meta("0091_livekit_log_reply_with_a_tool.jsonl");
    std::fs::write(logs.join("a_pipecat.jsonl"), pipecat).unwrap();
    std::fs::write(logs.join("b_livekit.jsonl"), livekit).unwrap();
    let (code, v) = check_json(&["logs"], dir.path());
    assert_eq!(code, Some(0), "{v}");
    let read: Vec<(&str, &str)> = v["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["dialect"].as_str().unwrap(),
                t["profile"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        read,
        [("pipecat", "pipecat"), ("livekit-agents", "livekit-agents")],
        "{v}"
    );
}

/// A directory with one log nothing recognises, one a stack's and one with a meta line, checked
/// with `--dialect`: the flag reads the first, the others are read as they say, each with the
/// flag reported not used.
#[test]
fn a_directory_uses_the_flag_only_for_the_log_that_says_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    std::fs::write(
        logs.join("a_unrecognised.jsonl"),
        realtime_opening_with_an_error(),
    )
    .unwrap();
    let pipecat = without_meta("0212_pipecat_log_call_cancelled_by_the_interruption.jsonl");
    std::fs::write(logs.join("b_pipecat.jsonl"), pipecat).unwrap();
    std::fs::copy(
        accepted("0001_lab_baseline_stream.jsonl"),
        logs.join("c_lab.jsonl"),
    )
    .unwrap();
    let (code, v) = check_json(&["logs", "--dialect", "openai-realtime"], dir.path());
    assert_eq!(code, Some(0), "{v}");
    let traces = v["traces"].as_array().unwrap();
    let dialects: Vec<&str> = traces
        .iter()
        .map(|t| t["dialect"].as_str().unwrap())
        .collect();
    assert_eq!(dialects, ["openai-realtime", "pipecat", "lab"], "{v}");
    assert!(notes(&traces[0]).is_empty(), "{v}");
    assert_eq!(
        notes(&traces[1])[1],
        "--dialect openai-realtime not used: its first line is recognised as pipecat"
    );
    assert_eq!(
        notes(&traces[2]),
        ["--dialect openai-realtime not used: the meta line names dialect lab"]
    );
    // The text summary says it on each file's line.
    let out = turnfence(
        &["check", "logs", "--dialect", "openai-realtime"],
        dir.path(),
    );
    assert_exit(&out, 0, &out.stdout);
    let text = String::from_utf8_lossy(&out.stdout);
    let lab_line = text.lines().find(|l| l.contains("c_lab.jsonl")).unwrap();
    assert!(
        lab_line.contains("[--dialect openai-realtime not used: the meta line names dialect lab]"),
        "{text}"
    );
}

/// What a log says of itself is not weighed against a flag when the two parts are both the
/// log's, or both flags: a contradiction within either is an input error, as before.
#[test]
fn parts_that_contradict_within_the_log_or_within_the_flags_are_refused() {
    let unrecognised = r#"{"ts":1,"kind":"hello"}"#;
    let flags = Flags {
        dialect: Some(dialect::by_name("livekit-agents").unwrap()),
        profile: Some(Profile::OpenaiRealtime),
        ..Flags::default()
    };
    let err = dialect::reading(unrecognised, &flags).unwrap_err();
    assert!(
        err.message.contains("read under its own profile") && err.message.contains("leave the"),
        "{err}"
    );
    let meta = r#"{"meta":{"dialect":"pipecat","profile":"livekit-agents"}}"#;
    let err = dialect::reading(meta, &Flags::default()).unwrap_err();
    assert!(err.message.contains("read under its own profile"), "{err}");
    let flags = Flags {
        dialect: Some(dialect::by_name("lab").unwrap()),
        machine: Some(Machine::Fence),
        ..Flags::default()
    };
    let checked = dialect::check_input(format!("{unrecognised}\n").as_bytes(), &flags);
    let err = checked.verdict.unwrap_err();
    assert!(err.message.contains("turn traces only"), "{err}");
    // A meta line naming the fence machine reads canonical: a stack's `--dialect` is not used.
    let fence = r#"{"meta":{"machine":"fence"}}"#;
    let read = dialect::reading(
        fence,
        &Flags {
            dialect: Some(dialect::by_name("pipecat").unwrap()),
            ..Flags::default()
        },
    )
    .unwrap();
    assert_eq!(
        (read.dialect, read.machine),
        (dialect::by_name("canonical").unwrap(), Machine::Fence)
    );
    assert_eq!(
        read.overrides,
        ["--dialect pipecat not used: the meta line names machine fence, and the pipecat dialect \
          has turn traces only"]
    );
    // The fence machine has the lab's profile only: another `--profile` is not used, the lab's is.
    let read = dialect::reading(
        fence,
        &Flags {
            profile: Some(Profile::Pipecat),
            ..Flags::default()
        },
    )
    .unwrap();
    assert_eq!(read.profile, Profile::Lab);
    assert_eq!(
        read.overrides,
        [
            "--profile pipecat not used: the meta line names machine fence, and the fence machine \
          has no profile \"pipecat\""
        ]
    );
    let lab = Flags {
        profile: Some(Profile::Lab),
        ..Flags::default()
    };
    assert!(dialect::reading(fence, &lab).unwrap().overrides.is_empty());
}
