//! `check --format markdown` and `check --baseline` as a user runs them: the report a pull
//! request comment holds (its Mermaid diagrams parsed here as GitHub would need them), and the
//! baseline that lets CI fail on new findings alone.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::cli::{assert_exit, turnfence};

/// The repository's root, where the fixtures' relative paths start.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `turnfence check --format markdown PATHS` run from the root: its exit code and report.
fn markdown(paths: &[&str]) -> (Option<i32>, String) {
    let mut args = vec!["check", "--format", "markdown"];
    args.extend(paths);
    let out = turnfence(&args, &root());
    (
        out.status.code(),
        String::from_utf8(out.stdout).expect("UTF-8"),
    )
}

/// Text a diagram's message or note holds: not empty, no `;` `#` `<` `>` but in an entity code
/// (`#59;`), which Mermaid reads before it parses.
#[track_caller]
fn assert_mermaid_text(text: &str) {
    assert!(!text.trim().is_empty(), "empty text");
    let mut rest = text;
    while let Some(i) = rest.find(['#', ';', '<', '>']) {
        let after = &rest[i..];
        let entity = after.strip_prefix('#').and_then(|a| {
            let name = a.find(|c: char| !c.is_ascii_alphanumeric())?;
            (name > 0 && a[name..].starts_with(';')).then_some(name + 2)
        });
        match entity {
            Some(len) => rest = &after[len..],
            None => panic!("{:?} in Mermaid text {text:?}", &after[..1]),
        }
    }
}

/// Every ```mermaid block of `md`, checked as a sequence diagram GitHub renders: its
/// participants declared first, then messages `From->>To: L<n> words` between declared ones, at
/// most 40, notes over declared ones, one highlighted box (`rect` … `end`) holding the deciding
/// message and its note, nothing Mermaid would read as syntax in any text. Returns how many.
#[track_caller]
fn assert_mermaid_well_formed(md: &str) -> usize {
    let mut blocks = 0;
    let mut lines = md.lines();
    while let Some(line) = lines.next() {
        if line != "```mermaid" {
            continue;
        }
        blocks += 1;
        assert_eq!(lines.next(), Some("sequenceDiagram"), "block {blocks}");
        let mut declared: BTreeSet<&str> = BTreeSet::new();
        let (mut depth, mut boxes, mut messages, mut in_box) = (0, 0, 0, 0);
        loop {
            let l = lines.next().expect("the block is closed");
            if l == "```" {
                break;
            }
            let l = l
                .strip_prefix("    ")
                .unwrap_or_else(|| panic!("not indented: {l}"));
            if let Some(rest) = l.strip_prefix("participant ") {
                let (id, label) = rest.split_once(" as ").expect("participant ID as label");
                assert!(id.chars().all(|c| c.is_ascii_alphanumeric()), "{id}");
                assert_mermaid_text(label);
                assert_eq!(messages, 0, "a participant declared after a message");
                assert!(declared.insert(id), "{id} declared twice");
            } else if l.starts_with("rect rgb(") && l.ends_with(')') {
                assert_eq!(depth, 0, "boxes nest");
                depth += 1;
                boxes += 1;
            } else if l == "end" {
                assert_eq!(depth, 1, "an end without its rect");
                depth -= 1;
            } else if let Some(rest) = l.strip_prefix("Note over ") {
                let (over, text) = rest.split_once(": ").expect("Note over X: text");
                for p in over.split(',') {
                    assert!(declared.contains(p), "note over undeclared {p}: {l}");
                }
                assert_mermaid_text(text);
                in_box += depth;
            } else {
                let (from, rest) = l.split_once("->>").unwrap_or_else(|| panic!("{l}"));
                let (to, text) = rest.split_once(": ").unwrap_or_else(|| panic!("{l}"));
                assert!(declared.contains(from) && declared.contains(to), "{l}");
                let (n, words) = text
                    .strip_prefix('L')
                    .and_then(|t| t.split_once(' '))
                    .unwrap_or_else(|| panic!("no line number: {l}"));
                assert!(n.parse::<usize>().is_ok(), "{l}");
                assert_mermaid_text(words);
                messages += 1;
                in_box += depth;
            }
        }
        assert_eq!(depth, 0, "an unclosed rect");
        assert_eq!(
            (boxes, in_box),
            (1, 2),
            "one box: the deciding message and its note"
        );
        assert!((1..=40).contains(&messages), "{messages} messages");
    }
    blocks
}

/// The checker above is no formality: it refuses what GitHub would not render as meant.
#[test]
fn the_mermaid_checker_refuses_syntax_in_text_and_undeclared_participants() {
    let diagram = |body: &str| {
        format!("```mermaid\nsequenceDiagram\n    participant App as app\n    rect rgb(1, 2, 3)\n{body}    Note over App: r: x\n    end\n```\n")
    };
    assert_eq!(
        assert_mermaid_well_formed(&diagram("    App->>App: L1 a #59; b\n")),
        1
    );
    for bad in [
        "    App->>App: L1 a; b\n",
        "    App->>App: L1 a #x b\n",
        "    App->>App: L1 a <br> b\n",
        "    App->>User: L1 a\n",
        "    App->>App: a\n",
    ] {
        let caught = std::panic::catch_unwind(|| assert_mermaid_well_formed(&diagram(bad)));
        assert!(caught.is_err(), "accepted {bad:?}");
    }
}

#[test]
fn markdown_reports_snapshot_one_story_per_stack() {
    let cases = [
        (
            "markdown_canonical_no_late_delivery",
            "fixtures/rejected/0005_no_late_delivery_delta_after_stop.jsonl",
        ),
        (
            "markdown_openai_realtime_noop_interrupt_after_done",
            "fixtures/interop/openai-realtime@0.24.0/bug_noop_interrupt_after_done.jsonl",
        ),
        (
            "markdown_livekit_agents_pause_never_decided",
            "fixtures/interop/livekit-agents@1.8.9/bug_pause_never_decided.events.jsonl",
        ),
    ];
    for (name, path) in cases {
        let (code, md) = markdown(&[path]);
        assert_eq!(code, Some(1), "{md}");
        assert_eq!(assert_mermaid_well_formed(&md), 1, "{md}");
        crate::snapshot_settings().bind(|| insta::assert_snapshot!(name, md));
    }
}

#[test]
fn markdown_tables_every_trace_and_names_an_unreadable_ones_error() {
    let (code, md) = markdown(&[
        "fixtures/accepted/0001_lab_baseline_stream.jsonl",
        "fixtures/rejected/0024_malformed_truncated_json.jsonl",
        "fixtures/interop/livekit-agents@1.8.9/bug_tool_result_dropped.report.jsonl",
    ]);
    // Unreadable wins, as in every format.
    assert_eq!(code, Some(2), "{md}");
    assert!(
        md.contains("| **unreadable** | line 3, column 40: "),
        "the input error and its line: {md}"
    );
    // A session report is one line: its story is that line.
    assert_eq!(assert_mermaid_well_formed(&md), 1, "{md}");
    crate::snapshot_settings().bind(|| insta::assert_snapshot!("markdown_table", md));
}

/// The whole corpus in one report: every diagram well-formed, the report within a GitHub
/// comment, and every finding either drawn or counted as not drawn.
#[test]
fn markdown_of_the_corpus_is_well_formed_and_within_a_comment() {
    let (code, md) = markdown(&["fixtures/rejected", "fixtures/interop"]);
    assert_eq!(code, Some(2), "the rejected fixtures hold malformed traces");
    assert!(
        md.chars().count() <= 65_536,
        "{} characters",
        md.chars().count()
    );
    let drawn = assert_mermaid_well_formed(&md);
    let out = turnfence(
        &[
            "check",
            "--format",
            "json",
            "fixtures/rejected",
            "fixtures/interop",
        ],
        &root(),
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let findings: usize = json["traces"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["verdict"]["findings"].as_array().map(Vec::len))
        .sum();
    let not_drawn = md
        .lines()
        .find_map(|l| l.strip_prefix('_')?.split_once(" findings not drawn"))
        .map_or(0, |(n, _)| n.parse().unwrap());
    assert!(findings > 100, "{findings}");
    assert_eq!(drawn + not_drawn, findings);
    assert_eq!(md.matches("\n### ").count(), drawn);
}

/// Standard input is readable once: where its findings' lines are wanted again it is kept, and
/// its story is the one the file gives.
#[test]
fn standard_input_gives_the_same_story_as_its_file() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let path = "fixtures/rejected/0005_no_late_delivery_delta_after_stop.jsonl";
    let mut child = Command::new(env!("CARGO_BIN_EXE_turnfence"))
        .args(["check", "-", "--format", "markdown"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let text = crate::read(&root().join(path));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let from_stdin = String::from_utf8(out.stdout).unwrap();
    let (_, from_file) = markdown(&[path]);
    assert_eq!(assert_mermaid_well_formed(&from_stdin), 1, "{from_stdin}");
    let diagram = |md: &str| md[md.find("```mermaid").unwrap()..].to_owned();
    assert_eq!(diagram(&from_stdin), diagram(&from_file));
}

/// A canonical trace: a turn stopped at line 5, then `ticks` ticks, then a late delivery.
fn late_after(turn: &str, session: &str, ticks: usize) -> Vec<String> {
    let mut lines = vec![
        format!(
            r#"{{"at":0,"session":"{session}","input":"accept","turn":"{turn}","generation":1,"mode":"text","deadline_ms":100000}}"#
        ),
        format!(
            r#"{{"at":1,"session":"{session}","input":"delta","turn":"{turn}","generation":1,"seq":1,"text":"a"}}"#
        ),
        format!(
            r#"{{"at":1,"session":"{session}","output":"delivered","turn":"{turn}","generation":1,"seq":1}}"#
        ),
        format!(
            r#"{{"at":2,"session":"{session}","input":"stop","turn":"{turn}","request_id":"r1"}}"#
        ),
        format!(
            r#"{{"at":2,"session":"{session}","output":"stop_answered","turn":"{turn}","request_id":"r1","answer":"requested"}}"#
        ),
        format!(
            r#"{{"at":2,"session":"{session}","output":"terminal","turn":"{turn}","state":"cancelled"}}"#
        ),
    ];
    for i in 0..ticks {
        lines.push(format!(
            r#"{{"at":{},"session":"{session}","input":"tick"}}"#,
            3 + i
        ));
    }
    lines.push(format!(r#"{{"at":{},"session":"{session}","output":"delivered","turn":"{turn}","generation":1,"seq":2}}"#, 3 + ticks));
    lines
}

fn write_trace(dir: &Path, name: &str, lines: &[String]) -> String {
    let mut text = String::from("{\"meta\":{\"complete\":[\"terminal\"]}}\n");
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    std::fs::write(dir.join(name), text).unwrap();
    name.to_owned()
}

#[test]
fn a_long_story_is_capped_and_says_what_it_elided() {
    let dir = tempfile::tempdir().unwrap();
    // The stop at line 5 (after the meta line), 60 ticks at lines 8 to 67, the delivery at 68.
    let name = write_trace(dir.path(), "long.jsonl", &late_after("t;#<b>", "main", 60));
    let out = turnfence(&["check", "--format", "markdown", &name], dir.path());
    assert_exit(&out, 1, &out.stderr);
    let md = String::from_utf8(out.stdout).unwrap();
    assert_eq!(assert_mermaid_well_formed(&md), 1, "{md}");
    // 40 messages: line 5, then the last 39, lines 30 to 68; 6 to 29 elided.
    assert!(
        md.contains("    User->>App: L5 stop\n    Note over "),
        "{md}"
    );
    assert!(
        md.contains(": lines 6 to 29 elided (24 lines)\n    App->>App: L30 tick\n"),
        "{md}"
    );
    assert_eq!(md.matches("->>").count(), 40, "{md}");
    assert!(md.contains("App->>Player: L68 delivered"), "{md}");
}

#[test]
fn a_report_of_many_long_stories_is_cut_to_a_comment_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> = (0..150)
        .flat_map(|s| late_after("t", &format!("s{s}"), 45))
        .collect();
    let name = write_trace(dir.path(), "many.jsonl", &lines);
    let out = turnfence(&["check", "--format", "markdown", &name], dir.path());
    assert_exit(&out, 1, &out.stderr);
    let md = String::from_utf8(out.stdout).unwrap();
    let chars = md.chars().count();
    assert!(
        (60_000..=65_536).contains(&chars),
        "{chars} characters: cut near the limit"
    );
    let drawn = assert_mermaid_well_formed(&md);
    assert!(md.ends_with(&format!(
        "_{} findings not drawn: a report draws at most 100 and stays within a GitHub comment \
         (65536 characters); `--format text` or `--format json` lists every one._\n",
        150 - drawn
    )));
}

/// `check --format json` run in `dir`: its exit code and output.
fn check(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let mut all = vec!["check"];
    all.extend(args);
    let out = turnfence(&all, dir);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A directory holding `a.jsonl` (fixture 0005: `no_late_delivery` at line 20, its story from
/// line 9) and `b.jsonl` (fixture 0012: `no_false_cancel_claim` at line 18).
fn two_traces() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let fixture = |name| crate::read(&root().join("fixtures/rejected").join(name));
    std::fs::write(
        dir.path().join("a.jsonl"),
        fixture("0005_no_late_delivery_delta_after_stop.jsonl"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("b.jsonl"),
        fixture("0012_no_false_cancel_claim_refund_went_through.jsonl"),
    )
    .unwrap();
    dir
}

#[test]
fn a_baselined_finding_passes_and_a_new_one_fails() {
    let dir = two_traces();
    let d = dir.path();
    let (code, _, err) = check(d, &["a.jsonl", "--write-baseline", "base.json"]);
    assert_eq!(code, Some(0), "writing a baseline passes: {err}");
    let base: serde_json::Value = serde_json::from_str(&crate::read(&d.join("base.json"))).unwrap();
    assert_eq!(base["version"], 1);
    let entries = base["findings"].as_array().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["trace"], "a.jsonl");
    assert_eq!(entries[0]["rule"], "no_late_delivery");
    assert_eq!(entries[0]["line"], 20);
    assert_eq!(entries[0]["reason"], "acknowledged");

    let (code, out, _) = check(d, &["a.jsonl", "--baseline", "base.json"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("baselined no_late_delivery at line 20 (cancel_tree): acknowledged"),
        "{out}"
    );
    // b.jsonl's finding is in no baseline: it fails, a.jsonl's stays baselined.
    let (code, out, _) = check(d, &["a.jsonl", "b.jsonl", "--baseline", "base.json"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("PASS  a.jsonl (25 lines) (1 baselined)"),
        "{out}"
    );
    assert!(
        out.contains("FAIL  b.jsonl: 1 findings (no_false_cancel_claim 1)"),
        "{out}"
    );
    assert!(out.ends_with("2 traces: 1 conform, 1 with violations, 0 unreadable, 1 findings baselined, 0 stale baseline entries\n"), "{out}");
}

#[test]
fn the_fingerprint_survives_lines_added_before_and_follows_the_deciding_event() {
    let dir = two_traces();
    let d = dir.path();
    check(d, &["a.jsonl", "--write-baseline", "base.json"]);
    let original = crate::read(&d.join("a.jsonl"));
    let (meta, rest) = original.split_once('\n').unwrap();
    // Another session's lines before the finding's: its line moves from 20 to 23.
    let other = "{\"at\":0,\"session\":\"other\",\"input\":\"accept\",\"turn\":\"o\",\"generation\":1,\"mode\":\"text\"}\n\
        {\"at\":1,\"session\":\"other\",\"input\":\"stop\",\"turn\":\"o\",\"request_id\":\"q\"}\n\
        {\"at\":1,\"session\":\"other\",\"output\":\"terminal\",\"turn\":\"o\",\"state\":\"cancelled\"}\n";
    std::fs::write(d.join("a.jsonl"), format!("{meta}\n{other}{rest}")).unwrap();
    let (code, out, _) = check(
        d,
        &["a.jsonl", "--format", "json", "--baseline", "base.json"],
    );
    assert_eq!(code, Some(0), "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["baselined"][0]["finding"]["line"], 23,
        "the line moved: {v}"
    );
    assert_eq!(v["baselined"][0]["finding"]["since"], 12, "{v}");
    assert_eq!(v["stale_baseline"], serde_json::json!([]));

    // The same rule decided by another event (a frame played, not a delta delivered): new, and
    // the entry it no longer matches is stale.
    let played = original.replace(
        "\"output\":\"delivered\",\"turn\":\"turn-text-002\",\"generation\":1,\"seq\":2}",
        "\"output\":\"played\",\"turn\":\"turn-text-002\",\"generation\":1,\"seq\":2}",
    );
    assert_ne!(played, original);
    std::fs::write(d.join("a.jsonl"), played).unwrap();
    let (code, out, _) = check(d, &["a.jsonl", "--baseline", "base.json"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.starts_with("no_late_delivery at line 20"), "{out}");
    assert!(
        out.contains("warning: stale baseline entry: a.jsonl no_late_delivery (line 20"),
        "{out}"
    );
}

#[test]
fn a_stale_entry_warns_and_fails_only_when_strict() {
    let dir = two_traces();
    let d = dir.path();
    check(d, &["a.jsonl", "--write-baseline", "base.json"]);
    let base = crate::read(&d.join("base.json"));
    // An entry for a finding a.jsonl does not have (another fingerprint).
    let entry = r#"{"trace":"a.jsonl","rule":"no_late_delivery","line":3,"fingerprint":"0123456789abcdef","reason":"fixed upstream"}"#;
    let stale = base.replacen("\"findings\": [", &format!("\"findings\": [{entry},"), 1);
    std::fs::write(d.join("stale.json"), stale).unwrap();
    let (code, out, _) = check(d, &["a.jsonl", "--baseline", "stale.json"]);
    assert_eq!(code, Some(0), "a stale entry warns: {out}");
    assert!(out.contains("warning: stale baseline entry: a.jsonl no_late_delivery (line 3 when acknowledged, fingerprint 0123456789abcdef) no longer occurs"), "{out}");
    let (code, _, _) = check(
        d,
        &["a.jsonl", "--baseline", "stale.json", "--strict-baseline"],
    );
    assert_eq!(code, Some(1));
    let (_, md, _) = check(
        d,
        &[
            "a.jsonl",
            "--baseline",
            "stale.json",
            "--format",
            "markdown",
        ],
    );
    assert!(
        md.contains("> **Warning:** stale baseline entry: a.jsonl no\\_late\\_delivery (line 3"),
        "{md}"
    );
    let (_, json, _) = check(d, &[".", "--baseline", "stale.json", "--format", "json"]);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["summary"]["baselined"], 1, "{json}");
    assert_eq!(json["stale_baseline"][0]["fingerprint"], "0123456789abcdef");
    // JUnit: the baselined finding a skipped case with its reason, the stale entry skipped too.
    let (code, xml, _) = check(
        d,
        &["a.jsonl", "--baseline", "stale.json", "--format", "junit"],
    );
    assert_eq!(code, Some(0), "{xml}");
    assert!(
        xml.contains("failures=\"0\" errors=\"0\" skipped=\"2\""),
        "{xml}"
    );
    assert!(
        xml.contains("<skipped message=\"baselined: acknowledged\"/>"),
        "{xml}"
    );
    let (code, xml, _) = check(
        d,
        &[
            "a.jsonl",
            "--baseline",
            "stale.json",
            "--format",
            "junit",
            "--strict-baseline",
        ],
    );
    assert_eq!(code, Some(1), "{xml}");
    assert!(xml.contains("type=\"stale_baseline\""), "{xml}");
    // An entry of a trace this run did not check is left alone.
    let (code, out, _) = check(
        d,
        &["b.jsonl", "--baseline", "stale.json", "--strict-baseline"],
    );
    assert_eq!(code, Some(1), "b.jsonl's own finding fails");
    assert!(!out.contains("stale"), "{out}");
}

#[test]
fn write_baseline_then_baseline_round_trips_in_every_format() {
    let dir = two_traces();
    let d = dir.path();
    let (code, _, err) = check(d, &[".", "--write-baseline", "base.json"]);
    assert_eq!(code, Some(0), "{err}");
    let written = crate::read(&d.join("base.json"));
    // Sorted by trace, named less the directory's `./`, and the same bytes when written again.
    let a = written.find("\"trace\": \"a.jsonl\"").expect(&written);
    assert!(a < written.find("\"trace\": \"b.jsonl\"").expect(&written));
    // A trace named alone is the one the directory held.
    let (code, out, _) = check(d, &["./a.jsonl", "b.jsonl", "--baseline", "base.json"]);
    assert_eq!(code, Some(0), "{out}");
    check(d, &[".", "--write-baseline", "again.json"]);
    assert_eq!(crate::read(&d.join("again.json")), written);
    for format in ["text", "json", "junit", "markdown"] {
        let (code, out, _) = check(d, &[".", "--baseline", "base.json", "--format", format]);
        assert_eq!(code, Some(0), "{format}: {out}");
    }
    let (_, md, _) = check(d, &[".", "--baseline", "base.json", "--format", "markdown"]);
    assert!(md.contains("| 0 (+1 baselined) |"), "{md}");
    assert!(
        md.contains("- `./b.jsonl` line 18: baselined `no_false_cancel_claim` (acknowledged)"),
        "{md}"
    );
    assert_eq!(
        assert_mermaid_well_formed(&md),
        0,
        "baselined findings are not drawn"
    );
}

#[test]
fn a_malformed_baseline_is_an_input_error_naming_its_line_or_entry() {
    let dir = two_traces();
    let d = dir.path();
    std::fs::write(
        d.join("bad.json"),
        "{\"version\": 1,\n  \"findings\": [{\"trace\": \"a.jsonl\"}]}",
    )
    .unwrap();
    let (code, out, err) = check(d, &["a.jsonl", "--baseline", "bad.json"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        err.starts_with("turnfence check: baseline bad.json: line 2, column "),
        "{err}"
    );
    assert!(err.contains("missing field"), "{err}");
    let entry = r#"{"trace":"a.jsonl","rule":"r","line":3,"fingerprint":"not hex","reason":"k"}"#;
    std::fs::write(
        d.join("bad.json"),
        format!(r#"{{"version":1,"findings":[{entry}]}}"#),
    )
    .unwrap();
    let (code, _, err) = check(d, &["a.jsonl", "--baseline", "bad.json"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("entry 1 (a.jsonl r line 3): fingerprint \"not hex\""),
        "{err}"
    );
    let (code, _, err) = check(d, &["a.jsonl", "--baseline", "missing.json"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("cannot read the baseline missing.json"),
        "{err}"
    );
}
