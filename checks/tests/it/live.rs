//! The live monitor: a log fed line by line, or followed as its file grows in random chunks, gives
//! the findings `check` gives the whole file, each as soon as its line decides it (`check
//! --follow` as a user runs it: `live_cli.rs`).

use std::io::Write;
use std::path::{Path, PathBuf};

use rand_chacha::rand_core::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use turnfence_checks::dialect;
use turnfence_checks::live;
use turnfence_checks::live::tail::Follow;
use turnfence_checks::trace;

use crate::{fixtures, interop_corpus, read};

/// Every log `check` reads without an input error: the accepted and rejected fixtures and the
/// interop corpus, with the verdict `check` gives it and how it read it.
fn judged() -> Vec<(PathBuf, String, trace::Reading, trace::Verdict)> {
    let mut logs = fixtures("accepted");
    logs.extend(fixtures("rejected"));
    logs.extend(interop_corpus());
    logs.into_iter()
        .filter_map(|path| {
            let text = read(&path);
            let checked = dialect::check_input(text.as_bytes(), &Default::default());
            let (Some(reading), Ok(verdict)) = (checked.reading, checked.verdict) else {
                return None;
            };
            Some((path, text, reading, verdict))
        })
        .collect()
}

/// A finding's place, name and sentence, and what it explains: what two verdicts are held equal
/// on.
fn key(f: &trace::Finding) -> String {
    let explains: Vec<String> = f.derived.iter().map(key).collect();
    format!(
        "{} {} {} {:?} {} {:?} {} {explains:?}",
        f.line,
        f.session,
        f.name(),
        f.ids,
        f.at,
        f.since,
        f.message
    )
}

fn keys<'a>(findings: impl IntoIterator<Item = &'a trace::Finding>) -> Vec<String> {
    let mut keys: Vec<String> = findings.into_iter().map(key).collect();
    keys.sort();
    keys
}

/// `lines` fed to a fresh monitor, `now` the line's number; an input error fails the test.
fn feed_all(
    name: &str,
    reading: &trace::Reading,
    lines: impl IntoIterator<Item = Vec<u8>>,
) -> live::Summary {
    let mut monitor = live::Monitor::new(reading).unwrap();
    for (i, line) in lines.into_iter().enumerate() {
        for r in monitor.feed_bytes(&line, i as u64) {
            if let live::Report::InputError { error, .. } = r {
                panic!("{name}: {error}");
            }
        }
    }
    monitor.finish().1
}

#[test]
fn a_log_fed_line_by_line_gives_the_findings_of_the_whole_file() {
    let (mut early, mut withdrawn, mut all) = (0, 0, 0);
    let logs = judged();
    for (path, text, reading, verdict) in &logs {
        let name = path.display().to_string();
        let lines = text.lines().map(|l| l.as_bytes().to_vec());
        let summary = feed_all(&name, reading, lines);
        assert_eq!(keys(&summary.findings), keys(&verdict.findings), "{name}");
        assert_eq!(summary.finding_count, verdict.findings.len(), "{name}");
        early += summary.given_early;
        withdrawn += summary.withdrawn;
        all += summary.finding_count;
    }
    eprintln!(
        "{} logs: {all} findings, {early} given before their session ended, {withdrawn} withdrawn",
        logs.len()
    );
    assert!(logs.len() > 250, "{} logs", logs.len());
    // Findings are given as their lines decide them, not all at the end; none given is taken back.
    assert!(early * 2 > all, "{early} of {all} given before the end");
    assert_eq!(withdrawn, 0);
}

#[test]
fn a_log_followed_as_its_file_grows_in_random_chunks_gives_the_findings_of_the_whole_file() {
    let seed = crate::seed();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let dir = std::env::temp_dir().join(format!("turnfence-live-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("growing.jsonl");
    for (log, text, reading, verdict) in judged() {
        let name = format!("{} (TURNFENCE_SEED={seed})", log.display());
        let mut file = std::fs::File::create(&path).unwrap();
        let mut follow = Follow::open(&path).unwrap();
        let mut lines = Vec::new();
        let bytes = text.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            // Chunks of 1 byte to 4 KiB: lines split anywhere, several in one chunk.
            let len = 1 + (rng.next_u32() as usize) % 4096;
            let end = (at + len).min(bytes.len());
            file.write_all(&bytes[at..end]).unwrap();
            file.flush().unwrap();
            at = end;
            follow.poll(&mut lines).unwrap();
        }
        while follow.poll(&mut lines).unwrap() != turnfence_checks::live::tail::Change::None {}
        follow.poll(&mut lines).unwrap();
        follow.end_line(&mut lines);
        let summary = feed_all(&name, &reading, lines);
        assert_eq!(keys(&summary.findings), keys(&verdict.findings), "{name}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

pub(crate) fn corpus_log(path: &str) -> Vec<u8> {
    read(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fixtures")
            .join(path),
    )
    .into_bytes()
}

#[test]
fn a_silent_session_is_ended_with_its_end_of_session_rules_not_judged() {
    // A turn accepted and never ended: at its end, `left_open`; ended for its silence, not judged.
    let log = "{\"meta\":{\"dialect\":\"canonical\"}}\n\
               {\"at\":0,\"session\":\"s\",\"input\":\"accept\",\"turn\":\"t1\",\"generation\":1,\"mode\":\"text\"}\n\
               {\"at\":1,\"session\":\"s\",\"input\":\"accept\",\"turn\":\"t2\",\"generation\":1,\"mode\":\"text\"}";
    let reading = dialect::reading(log.lines().next().unwrap(), &Default::default()).unwrap();
    let ended = {
        let mut m = live::Monitor::new(&reading).unwrap();
        for l in log.lines().take(2) {
            m.feed(l, 0);
        }
        m.finish().1
    };
    assert!(ended.counts.contains_key("left_open"), "{ended:?}");
    let mut m = live::Monitor::new(&reading).unwrap();
    for l in log.lines().take(2) {
        assert!(m.feed(l, 0).is_empty());
    }
    assert!(
        m.expire(1_000, 1_000).is_empty(),
        "not silent for longer than the idle time"
    );
    let reports = m.expire(1_001, 1_000);
    assert!(
        matches!(&reports[..], [live::Report::NotJudged(n)] if n.session == "s" && n.rule == "end of session"),
        "{reports:?}"
    );
    assert_eq!(m.open_sessions(), 0);
    // Its later lines are counted, not read as a new session's: every one of them.
    let later = log.lines().nth(2).unwrap();
    assert!(m.feed(later, 2_000).is_empty());
    assert!(m
        .feed(&later.replace("\"at\":1", "\"at\":2"), 2_001)
        .is_empty());
    assert_eq!(m.open_sessions(), 0);
    let (_, summary) = m.finish();
    assert_eq!(
        (
            summary.finding_count,
            summary.expired,
            summary.lines_not_read
        ),
        (0, 1, 2)
    );
}

/// The lines of `log` fed one by one: the names and lines of the findings each gave.
fn given_by_line(log: &str) -> Vec<Vec<(String, usize)>> {
    let reading = dialect::reading(log.lines().next().unwrap(), &Default::default()).unwrap();
    let mut m = live::Monitor::new(&reading).unwrap();
    let mut by_line: Vec<Vec<(String, usize)>> = log
        .lines()
        .enumerate()
        .map(|(i, l)| {
            m.feed(l, i as u64)
                .into_iter()
                .filter_map(|r| match r {
                    live::Report::Finding(f) => Some((f.name().to_owned(), f.line)),
                    _ => None,
                })
                .collect()
        })
        .collect();
    let end = m.finish().0.into_iter().filter_map(|r| match r {
        live::Report::Finding(f) => Some((f.name().to_owned(), f.line)),
        _ => None,
    });
    by_line.push(end.collect());
    by_line
}

#[test]
fn a_late_frame_is_given_at_the_line_that_plays_it() {
    let log = corpus_log("interop/livekit-agents@1.8.9/bug_audio_after_interruption.events.jsonl");
    let text = String::from_utf8(log).unwrap();
    let reading = dialect::reading(text.lines().next().unwrap(), &Default::default()).unwrap();
    let mut m = live::Monitor::new(&reading).unwrap();
    for (i, l) in text.lines().take(20).enumerate() {
        m.feed(l, i as u64);
    }
    // The summary so far, before the log ends, holds it.
    assert_eq!(m.summary().finding_count, 1);
    assert_eq!(m.summary().given_early, 1);
    let by_line = given_by_line(&text);
    let late = [("no_late_delivery".to_owned(), 20)];
    assert_eq!(by_line[19], late, "given as line 20 is read");
    assert_eq!(by_line.iter().flatten().count(), 1, "{by_line:?}");
}

#[test]
fn an_output_the_model_never_gave_is_given_once_its_step_is_closed() {
    // A frame the model never delivered, at 5 ms: an invariant judged at its step's end could
    // still explain it, so it is given once its step is closed — here by the next input, at the
    // same time — not at its own line.
    let log = "{\"meta\":{\"dialect\":\"canonical\",\"partial\":true}}\n\
               {\"at\":0,\"session\":\"s\",\"input\":\"accept\",\"turn\":\"t1\",\"generation\":1,\"mode\":\"text\"}\n\
               {\"at\":5,\"session\":\"s\",\"output\":\"delivered\",\"turn\":\"t1\",\"generation\":1,\"seq\":1}\n\
               {\"at\":5,\"session\":\"s\",\"input\":\"tick\"}";
    let by_line = given_by_line(log);
    assert_eq!(by_line.iter().flatten().count(), 1, "{by_line:?}");
    assert_eq!(
        by_line[3],
        [("unexpected_output".to_owned(), 3)],
        "{by_line:?}"
    );
}

#[test]
fn a_line_as_long_as_a_line_may_be_is_read_and_one_byte_more_is_refused() {
    let reading = dialect::reading("{\"meta\":{}}", &Default::default()).unwrap();
    let mut m = live::Monitor::new(&reading).unwrap();
    m.feed("{\"meta\":{}}", 0);
    let long = "x".repeat(trace::limits::MAX_LINE_BYTES);
    let message = |reports: Vec<live::Report>| match &reports[..] {
        [live::Report::InputError { error, .. }, ..] => error.message.clone(),
        other => panic!("{other:?}"),
    };
    let at_limit = message(m.feed(&long, 1));
    assert!(!at_limit.contains("more than the limit"), "{at_limit}");
    let past = message(m.feed(&format!("{long}x"), 2));
    assert!(past.contains("more than the limit"), "{past}");
    let not_text = message(m.feed_bytes(b"{\"a\":\"\xff\"}", 3));
    assert!(not_text.contains("UTF-8"), "{not_text}");
    let (_, summary) = m.finish();
    assert_eq!(
        summary
            .input_errors
            .iter()
            .map(|e| e.line)
            .collect::<Vec<_>>(),
        [2, 3, 4]
    );
}

#[test]
fn a_session_its_log_ended_is_not_ended_again_for_its_silence() {
    let log = "{\"meta\":{\"dialect\":\"canonical\",\"partial\":true}}\n\
               {\"at\":0,\"session\":\"s\",\"input\":\"accept\",\"turn\":\"t1\",\"generation\":1,\"mode\":\"text\"}\n\
               {\"session\":\"s\",\"session_end\":true}";
    let reading = dialect::reading(log.lines().next().unwrap(), &Default::default()).unwrap();
    let mut m = live::Monitor::new(&reading).unwrap();
    for l in log.lines() {
        m.feed(l, 0);
    }
    assert_eq!(m.open_sessions(), 0);
    assert!(m.expire(10_000, 1).is_empty());
    assert_eq!(m.finish().1.expired, 0);
}

/// `lines` fed to a monitor of the reading their first line names, then finished: every report,
/// and the summary.
fn fed(lines: &[&str]) -> (Vec<live::Report>, live::Summary) {
    let reading = dialect::reading(lines[0], &Default::default()).unwrap();
    let mut monitor = live::Monitor::new(&reading).unwrap();
    let mut reports = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        reports.extend(monitor.feed(line, i as u64));
    }
    let (end, summary) = monitor.finish();
    reports.extend(end);
    (reports, summary)
}

#[test]
fn the_lines_of_a_session_not_judged_are_counted_once_each() {
    // A Pipecat log whose pipeline stops being judged at its sixth line: each later line makes
    // several events, and is one line not read.
    let path = crate::interop_corpus()
        .into_iter()
        .find(|p| p.ends_with("pipecat@0.0.84/tool_through_interruption.jsonl"))
        .unwrap();
    let text = read(&path);
    let mut lines: Vec<&str> = text.lines().collect();
    lines[5] = "1e400";
    let (_, summary) = fed(&lines);
    assert_eq!(summary.input_error_count, 1);
    assert!(summary.lines_not_read > 0);
    assert!(
        summary.lines_not_read <= lines.len() - 6,
        "{} lines not read of {}",
        summary.lines_not_read,
        lines.len() - 6
    );
}

#[test]
fn a_bad_line_of_a_session_already_not_judged_stops_no_other() {
    let lines = [
        r#"{"at":0,"session":"a","input":"accept","turn":"t1","generation":1,"mode":"text"}"#,
        r#"{"at":0,"session":"b","input":"accept","turn":"t1","generation":1,"mode":"text"}"#,
        r#"{"at":1e400,"session":"b","input":"tick"}"#,
        r#"{"at":1e400,"session":"b","input":"tick"}"#,
        r#"{"at":2,"session":"a","input":"tick"}"#,
    ];
    let (reports, summary) = fed(&lines);
    let stopped: Vec<(usize, Vec<String>)> = reports
        .iter()
        .filter_map(|r| match r {
            live::Report::InputError { error, sessions } => Some((error.line, sessions.clone())),
            _ => None,
        })
        .collect();
    let b = vec!["b".to_owned()];
    assert_eq!(stopped, [(3, b.clone()), (4, b)]);
    // `b` is said not judged once, and `a` is judged to its end.
    let not_judged: Vec<&str> = summary
        .not_judged
        .iter()
        .map(|n| n.session.as_str())
        .collect();
    assert_eq!(not_judged, ["b"]);
    assert_eq!(summary.sessions, 2);
}

#[test]
fn a_bad_line_of_a_session_not_begun_yet_stops_that_session_alone() {
    // Two Realtime sessions: `a` under way; `b` opened by its `session.created` (no event of the
    // turn machine), then a delta of a response nothing began. Its `session` field names `b`.
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/hostile/0017_realtime_bad_line_of_a_session_not_yet_judged.bin");
    #[allow(clippy::disallowed_methods)] // Fixtures are the tests' input.
    let bytes = std::fs::read(&path).unwrap();
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
    let first = bytes.split(|b| *b == b'\n').next().unwrap();
    let reading =
        dialect::reading(std::str::from_utf8(first).unwrap(), &Default::default()).unwrap();
    let mut m = live::Monitor::new(&reading).unwrap();
    let mut reports = Vec::new();
    for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
        reports.extend(m.feed_bytes(line, i as u64));
    }
    let (end, summary) = m.finish();
    reports.extend(end);
    let stopped: Vec<&Vec<String>> = reports
        .iter()
        .filter_map(|r| match r {
            live::Report::InputError { sessions, .. } => Some(sessions),
            _ => None,
        })
        .collect();
    assert!(!stopped.is_empty());
    assert!(
        stopped.iter().all(|s| *s == &["b".to_owned()]),
        "{stopped:?}"
    );
    assert!(
        summary.not_judged.iter().all(|n| n.session == "b"),
        "{summary:?}"
    );
    assert_eq!(summary.sessions, 1, "`a` judged to its end");
}

#[test]
fn a_session_ended_for_its_silence_is_forgotten_by_the_clock_too() {
    let log = "{\"meta\":{\"dialect\":\"canonical\",\"partial\":true}}\n\
               {\"at\":0,\"session\":\"s\",\"input\":\"accept\",\"turn\":\"t1\",\"generation\":1,\"mode\":\"text\"}\n\
               {\"at\":0,\"session\":\"u\",\"input\":\"accept\",\"turn\":\"t1\",\"generation\":1,\"mode\":\"text\"}";
    let reading = dialect::reading(log.lines().next().unwrap(), &Default::default()).unwrap();
    let mut m = live::Monitor::new(&reading).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    m.feed(lines[0], 0);
    m.feed(lines[1], 0);
    assert_eq!(m.expire(10, 5).len(), 1, "s ends for its silence");
    m.feed(lines[2], 20);
    // Only u is left to end: s is not ended twice, however often the clock is looked at.
    assert_eq!(m.expire(30, 5).len(), 1);
    assert!(m.expire(40, 5).is_empty());
    assert_eq!(m.finish().1.expired, 2);
}

/// The live benchmark's log (`benches/live.rs`): as many lines as it says, never more sessions
/// open than it is given, every session ended, and one finding per copy of the rejected session.
#[test]
fn the_interleaved_log_is_what_it_claims() {
    use turnfence_checks::gate::synthetic::Interleaved;
    let rejected = fixtures("rejected")
        .into_iter()
        .find(|p| p.ends_with("0005_no_late_delivery_delta_after_stop.jsonl"))
        .unwrap();
    let log = Interleaved::new(500, 40).with_odd("cancel_tree", &read(&rejected), 7);
    let (lines, odd) = (log.lines(), log.odd_sessions());
    assert_eq!(odd, 500 / 7);
    let mut fed = 0;
    let mut monitor: Option<live::Monitor> = None;
    let mut open_max = 0;
    for line in log {
        let monitor = monitor.get_or_insert_with(|| {
            live::Monitor::new(&dialect::reading(&line, &Default::default()).unwrap()).unwrap()
        });
        fed += 1;
        monitor.feed(&line, 0);
        open_max = open_max.max(monitor.open_sessions());
    }
    assert_eq!(fed, lines);
    assert_eq!(open_max, 40);
    let (_, summary) = monitor.unwrap().finish();
    assert_eq!(summary.sessions, 500);
    assert_eq!(summary.peak_open_sessions, 40);
    assert_eq!(summary.input_error_count, 0);
    assert_eq!(summary.finding_count, odd);
    assert_eq!(summary.counts.get("no_late_delivery"), Some(&odd));
    assert_eq!(summary.given_early, odd);
}

/// A canonical session whose model has delivered seq 1 of generation 1 at 20 ms, unshown.
const STREAMING: &str = "{\"meta\":{\"dialect\":\"canonical\",\"partial\":true}}\n\
    {\"at\":0,\"session\":\"s\",\"input\":\"accept\",\"turn\":\"t\",\"generation\":1,\"mode\":\"text\"}\n\
    {\"at\":2,\"session\":\"s\",\"input\":\"spawn\",\"turn\":\"t\",\"child\":\"model-stream\",\"kind\":\"model\"}\n\
    {\"at\":20,\"session\":\"s\",\"input\":\"delta\",\"turn\":\"t\",\"generation\":1,\"seq\":1,\"text\":\"Hi\"}\n";

#[test]
fn an_output_contradicted_after_the_walk_passed_it_is_judged_again_at_its_line() {
    // The model delivered seq 1 of generation 1 at 20 ms (judged then, unshown); at 40 ms the log
    // shows it as generation 0's: the walk starts again over what it judged, and the frame of a
    // generation not the active one is given at the line that shows it, not at the end.
    let log = STREAMING.to_owned()
        + "\
               {\"at\":30,\"session\":\"s\",\"input\":\"stop\",\"turn\":\"t\",\"request_id\":\"r1\"}\n\
               {\"at\":40,\"session\":\"s\",\"output\":\"delivered\",\"turn\":\"t\",\"generation\":0,\"seq\":1}\n\
               {\"at\":50,\"session\":\"s\",\"input\":\"tick\"}";
    let by_line = given_by_line(&log);
    assert_eq!(
        by_line[5],
        [("no_late_delivery".to_owned(), 6)],
        "{by_line:?}"
    );
    assert_eq!(by_line.iter().flatten().count(), 1, "{by_line:?}");
}

#[test]
fn a_real_stacks_finding_is_given_at_its_line_past_outputs_its_log_never_shows() {
    // Logs that record some outputs completely and never show others (the model's persisted
    // pieces, its delivered frames): the walk passes the unshown ones of a kind the log does not
    // record completely, and the finding comes at its own line.
    for (log, name, line) in [
        (
            "interop/openai-realtime@0.24.0/bug_two_responses_at_once.jsonl",
            "single_running_turn",
            50,
        ),
        (
            "interop/pipecat@1.14.0/bug_llm_keeps_speaking.jsonl",
            "no_late_delivery",
            100,
        ),
    ] {
        let by_line = given_by_line(&String::from_utf8(corpus_log(log)).unwrap());
        assert_eq!(
            by_line[line - 1],
            [(name.to_owned(), line)],
            "{log}: {by_line:?}"
        );
    }
}

#[test]
fn an_output_the_model_never_gave_is_given_once_the_sessions_clock_passes_its_step() {
    // A frame the model never gave at 25 ms is a step of its own; the next line, at 30 ms, shows a
    // frame the model did give (no step of its own): time passing closes the first, and the
    // frame never given is given there.
    let log = STREAMING.to_owned()
        + "\
               {\"at\":25,\"session\":\"s\",\"output\":\"delivered\",\"turn\":\"t\",\"generation\":1,\"seq\":2}\n\
               {\"at\":30,\"session\":\"s\",\"output\":\"delivered\",\"turn\":\"t\",\"generation\":1,\"seq\":1}";
    let by_line = given_by_line(&log);
    assert_eq!(
        by_line[5],
        [("unexpected_output".to_owned(), 5)],
        "{by_line:?}"
    );
    assert_eq!(by_line.iter().flatten().count(), 1, "{by_line:?}");
}
