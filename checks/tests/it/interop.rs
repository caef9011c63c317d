//! The interop corpus (`fixtures/interop/`): logs the real stacks' own code wrote, run offline by
//! `interop/` (`ci/interop.sh` writes them again and compares). Every correct run conforms, and
//! every planted bug is found at its line with the rule its meta line names — and nothing else:
//! one bug, one finding. What a log cannot show is reported not judged, never a finding.

use turnfence_checks::dialect;
use turnfence_checks::report;
use turnfence_checks::trace;

use crate::{fixture, generated_corpus, interop_corpus, meta, open_corpus, read};

/// One corpus log's verdict as a line of the corpus report: its expectation held, with what was
/// left unjudged.
fn judged(path: &std::path::Path) -> String {
    let text = read(path);
    let m = fixture(&text);
    let folder = path
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy();
    let name = format!("{folder}/{}", path.file_name().unwrap().to_string_lossy());
    let v = match dialect::check_input(text.as_bytes(), &Default::default()).verdict {
        Ok(v) => v,
        Err(e) => panic!("{name}: unreadable: {e}"),
    };
    let report = report::text::render_text(&v, report::text::MAX_TEXT_FINDINGS);
    match m["expect"].as_str() {
        Some("accepted") => assert!(v.conforms(), "{name} should conform:\n{report}"),
        Some("rejected") => {
            let rule = m["invariant"].as_str().unwrap();
            let line = m["line"].as_u64().unwrap() as usize;
            let found: Vec<(&str, usize)> = v.findings.iter().map(|f| (f.name(), f.line)).collect();
            assert_eq!(
                found,
                [(rule, line)],
                "{name}: one finding, {rule} at line {line}:\n{report}"
            );
        }
        other => panic!("{name}: expect {other:?}"),
    }
    let mut out = format!("{name}: ");
    if v.conforms() {
        out.push_str("conforms");
    }
    for f in &v.findings {
        let since = f
            .since
            .map_or_else(String::new, |s| format!(" since line {s}"));
        out.push_str(&format!("{} at line {}{since}", f.name(), f.line));
    }
    for n in &v.not_judged {
        out.push_str(&format!("; not judged: {} [{}]", n.rule, n.ids.join(", ")));
    }
    out
}

/// Every log of the corpus, of every stack and version, as its meta line expects; the whole
/// verdict list reviewed as a snapshot (a change in what is not judged shows there).
#[test]
fn every_corpus_log_is_judged_as_its_meta_line_expects() {
    let files = interop_corpus();
    assert!(files.len() >= 20, "{} corpus logs", files.len());
    let lines: Vec<String> = files.iter().map(|f| judged(f)).collect();
    crate::snapshot_settings().bind(|| {
        insta::assert_snapshot!("interop_corpus", lines.join("\n"));
    });
}

/// Every generated session kept for its cause (`fixtures/generated/`): a correct run the checker
/// once flagged conforms, a stack's real bug is found at its line with its rule.
#[test]
fn every_generated_session_kept_is_judged_as_its_meta_line_expects() {
    for path in generated_corpus() {
        assert!(generated_judged_right(&path), "{}", path.display());
    }
}

/// A generated session judged as the generators' oracles judge it (interop/oracle.py): a correct
/// run conforms; a stack's bug, whose meta line gives its rule and the line where the stack first
/// did wrong (the witness), has that rule among its findings at or after that line.
fn generated_judged_right(path: &std::path::Path) -> bool {
    let text = read(path);
    let m = fixture(&text);
    let Ok(v) = dialect::check_input(text.as_bytes(), &Default::default()).verdict else {
        return false;
    };
    match m["expect"].as_str() {
        Some("accepted") => v.conforms(),
        Some("rejected") => {
            let rule = m["invariant"].as_str().unwrap();
            let line = m["line"].as_u64().unwrap() as usize;
            v.findings
                .iter()
                .any(|f| f.name() == rule && f.line >= line)
                && accounted_for(&m, &v.findings)
        }
        other => panic!("{}: expect {other:?}", path.display()),
    }
}

/// Where no patch was planted, every finding of a session with witnessed stack bugs
/// (`known_bugs`: each a rule and the line where the bug first showed) is of a witnessed rule,
/// at or after its witness: a finding no witness accounts for is a false alarm beside the bug.
fn accounted_for(m: &serde_json::Value, findings: &[trace::Finding]) -> bool {
    let Some(known) = m["known_bugs"].as_array() else {
        return true;
    };
    if m.get("patch").is_some() {
        return true;
    }
    findings.iter().all(|f| {
        known.iter().any(|k| {
            k["rule"].as_str() == Some(f.name()) && f.line >= k["line"].as_u64().unwrap() as usize
        })
    })
}

/// Every generated session the checker still judges wrongly (`fixtures/open/`) is still judged
/// so: the day one is judged as its meta line says, this fails, and the file moves to
/// `fixtures/generated/`.
#[test]
fn every_open_generated_session_is_still_misjudged() {
    for path in open_corpus() {
        assert!(
            !generated_judged_right(&path),
            "{} is judged right now: move it to fixtures/generated/",
            path.display()
        );
    }
}

/// LiveKit plays its queued speeches one by one: two created before either began are two
/// replies, the second beginning when the first has ended (`AgentActivity._scheduling_task`),
/// and conforms; audio with no speech created since the last reply ended is that reply's, late.
#[test]
fn livekit_queued_speeches_begin_one_by_one_and_no_more() {
    let ev = |t: f64, body: &str| format!(r#"{{{body},"created_at":{t}}}"#);
    let agent = |from: &str, to: &str| {
        format!(r#""type":"agent_state_changed","old_state":"{from}","new_state":"{to}""#)
    };
    let created = r#""type":"speech_created","user_initiated":true,"source":"say""#;
    let item = |id: &str| {
        format!(
            r#""type":"conversation_item_added","item":{{"id":"{id}","type":"message","role":"assistant","interrupted":false}}"#
        )
    };
    let log = |speeches: usize| {
        let mut lines = vec![
            r#"{"meta":{"dialect":"livekit-agents","options":{"aec_warmup_duration":null}}}"#
                .to_owned(),
        ];
        for _ in 0..speeches {
            lines.push(ev(100.0, created));
        }
        lines.extend([
            ev(100.1, &agent("listening", "speaking")),
            ev(101.0, &item("item_1")),
            ev(101.0, &agent("speaking", "listening")),
            ev(101.1, &agent("listening", "speaking")),
            ev(102.0, &item("item_2")),
            ev(102.0, &agent("speaking", "listening")),
            ev(103.0, r#""type":"close","reason":"user_initiated""#),
        ]);
        lines.join("\n") + "\n"
    };
    let verdict = |text: String| {
        let v = dialect::check_input(text.as_bytes(), &Default::default())
            .verdict
            .unwrap();
        v.findings
            .iter()
            .map(|f| f.name().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(verdict(log(2)), Vec::<String>::new());
    assert!(
        !verdict(log(1)).is_empty(),
        "the second audio is the first reply's, late"
    );
}

/// The server's WebRTC `output_audio_buffer.cleared` after the app's own clear of the same
/// response (a kept generated session: the app's clear at line 54, the server's at line 61) is
/// that clear again, saying nothing more: no finding is at its line, whatever else the session
/// still shows (it is kept in fixtures/open/ for its other causes).
#[test]
fn a_webrtc_clear_after_the_apps_own_is_that_clear_again() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../fixtures/open/openai-realtime@0.24.0/false_alarm_webrtc_cleared_after_app_clear.jsonl",
    );
    let v = dialect::check_input(read(&path).as_bytes(), &Default::default())
        .verdict
        .unwrap();
    let lines: Vec<usize> = v
        .findings
        .iter()
        .flat_map(|f| std::iter::once(f.line).chain(f.derived.iter().map(|d| d.line)))
        .collect();
    assert!(
        !lines.is_empty(),
        "the session's other causes are still found"
    );
    assert!(!lines.contains(&61), "{lines:?}");
}

/// Both forms of a session, the event stream and the session report, give the same verdict on
/// the same facts: the event stream as LiveKit dumps it (the report's events leave out each
/// speech's own flag too).
#[test]
fn a_sessions_event_stream_and_its_report_agree() {
    for events in interop_corpus()
        .iter()
        .filter(|p| p.to_string_lossy().ends_with(".events.jsonl"))
    {
        let report = events.with_file_name(
            events
                .file_name()
                .unwrap()
                .to_string_lossy()
                .replace(".events.jsonl", ".report.jsonl"),
        );
        if !report.exists() {
            continue;
        }
        let verdict = |p: &std::path::Path| {
            let mut text = read(p);
            if p == events.as_path() {
                text = crate::without_speech_flags(&text);
            }
            let v = dialect::check_input(text.as_bytes(), &Default::default())
                .verdict
                .unwrap();
            let names: Vec<&str> = v.findings.iter().map(|f| f.name()).collect();
            let unjudged: Vec<&str> = v.not_judged.iter().map(|n| n.rule).collect();
            format!("{names:?} {unjudged:?}")
        };
        assert_eq!(verdict(events), verdict(&report), "{}", events.display());
    }
}

/// What is not judged is not judged in its own session only: room `a`'s reply talked over without
/// LiveKit reacting leaves its interruption unjudged, while room `b`'s reply of the same name,
/// paused and never decided, is still found.
#[test]
fn a_rule_not_judged_in_one_session_is_judged_in_another() {
    let ev = |room: &str, t: f64, body: &str| {
        format!(r#"{{{body},"created_at":{t},"session":"{room}"}}"#)
    };
    let state = |who: &str, from: &str, to: &str| {
        format!(r#""type":"{who}_state_changed","old_state":"{from}","new_state":"{to}""#)
    };
    let lines = [
        r#"{"meta":{"dialect":"livekit-agents","options":{"aec_warmup_duration":null}}}"#
            .to_owned(),
        ev("a", 100.0, &state("agent", "listening", "thinking")),
        ev("b", 100.0, &state("agent", "listening", "thinking")),
        ev("a", 100.5, &state("agent", "thinking", "speaking")),
        ev("b", 100.5, &state("agent", "thinking", "speaking")),
        ev("a", 101.0, &state("user", "listening", "speaking")),
        ev("b", 101.0, &state("user", "listening", "speaking")),
        ev("b", 101.5, &state("agent", "speaking", "listening")),
        ev("a", 102.0, &state("user", "speaking", "listening")),
        ev("b", 102.0, &state("user", "speaking", "listening")),
        ev(
            "a",
            103.0,
            r#""type":"conversation_item_added","item":{"id":"i1","type":"message","role":"assistant","interrupted":false}"#,
        ),
        ev("a", 110.0, r#""type":"close","reason":"user_initiated""#),
        ev("b", 110.0, r#""type":"close","reason":"user_initiated""#),
    ];
    let text = lines.join("\n");
    let v = dialect::check_input(text.as_bytes(), &Default::default())
        .verdict
        .unwrap();
    let unjudged: Vec<(&str, &str)> = v
        .not_judged
        .iter()
        .map(|n| (n.session.as_str(), n.rule))
        .collect();
    assert_eq!(
        unjudged,
        [
            ("a", "interruption_decided_once"),
            ("a", "uninterruptible_output_survives")
        ]
    );
    let found: Vec<(&str, &str, usize)> = v
        .findings
        .iter()
        .map(|f| (f.session.as_str(), f.name(), f.line))
        .collect();
    assert_eq!(found, [("b", "interruption_decided_once", 13)], "{v:?}");
}

/// A corpus log without its meta line is recognised as the dialect the meta line named, from the
/// first line its stack wrote, and says so.
#[test]
fn a_corpus_log_without_its_meta_line_is_recognised_as_its_stacks() {
    for path in interop_corpus() {
        let text = read(&path);
        let named = meta(&text)["dialect"].as_str().unwrap().to_owned();
        let first = text.lines().nth(1).unwrap();
        let read = dialect::reading(first, &Default::default()).unwrap();
        assert_eq!(read.dialect.name(), named, "{}", path.display());
        assert!(
            read.overrides
                .iter()
                .any(|o| o.starts_with(&format!("read as {named}: no meta line names a dialect"))),
            "{}: {:?}",
            path.display(),
            read.overrides
        );
    }
}

/// A Pipecat response with nothing to say, queued behind one the TTS is still speaking, is given
/// to the model and ended with it when the TTS finishes the one before: the TTS speaks one reply
/// after another, and this one has no word left to wait for.
#[test]
fn a_pipecat_reply_with_nothing_to_say_ends_after_the_one_before() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/accepted/0222_pipecat_log_interruptions_disabled_reply_plays_on.jsonl");
    let mut lines: Vec<String> = read(&path).lines().map(str::to_owned).collect();
    // After the first reply's TTS starts, the LLM gives a second response with no text.
    let at = lines
        .iter()
        .position(|l| l.contains(r#""id": 6,"#))
        .unwrap()
        + 1;
    let frame = |id: u32, name: &str| {
        format!(
            r#"{{"t_ms": 1100, "frame": "{name}", "id": {id}, "src": "LLM#0", "dst": "TTS#0", "dir": "down"}}"#
        )
    };
    lines.insert(at, frame(21, "LLMFullResponseEndFrame"));
    lines.insert(at, frame(20, "LLMFullResponseStartFrame"));
    let text = lines.join("\n");
    let v =
        dialect::check_input_keeping(text.as_bytes(), &Default::default(), trace::Keep::Effective)
            .verdict
            .unwrap();
    assert!(v.conforms(), "{}", report::text::render_text(&v, 20));
    let second: Vec<&String> = v
        .effective
        .iter()
        .filter(|l| l.contains("response_2"))
        .collect();
    assert!(
        second.iter().any(|l| l.contains(r#""input":"accept""#)),
        "{second:#?}"
    );
    assert!(
        second.iter().any(|l| l.contains(r#""output":"terminal""#)),
        "{second:#?}"
    );
}

/// A Pipecat output chunk that begins at the very millisecond of the interruption is the chunk
/// the output was writing when it came (a tie counts as before: the audio task takes the next
/// chunk in the instant it pushed the last, and an interruption that reached the output first
/// would have left it nothing interruptible to take); it plays out, and the chunk after it is
/// late (fixture 0219 with the interruption moved to the end of the chunk before).
#[test]
fn a_pipecat_chunk_begun_at_the_interruption_is_the_chunk_in_the_write() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../fixtures/rejected/0219_no_late_delivery_pipecat_log_audio_played_after_the_interruption.jsonl",
    );
    let text: String = read(&path)
        .lines()
        .map(|l| {
            let l = if l.contains(r#""id": 14,"#) || l.contains(r#""id": 15,"#) {
                l.replace(r#""t_ms": 1190,"#, r#""t_ms": 1180,"#)
            } else if l.contains(r#""id": 16,"#) {
                l.replace(r#""t_ms": 1191,"#, r#""t_ms": 1181,"#)
            } else {
                l.to_owned()
            };
            l + "\n"
        })
        .collect();
    let v = dialect::check_input(text.as_bytes(), &Default::default())
        .verdict
        .unwrap();
    let found: Vec<(&str, usize)> = v.findings.iter().map(|f| (f.name(), f.line)).collect();
    // The chunk logged at 1220 ms (line 18) played 1180-1220, begun at the interruption: the
    // chunk in the write. The one logged at 1260 ms (line 19) is late.
    assert_eq!(
        found,
        [("no_late_delivery", 19)],
        "{}",
        report::text::render_text(&v, 20)
    );
}

/// A session report's options are its own events': a session a later line begins is read with
/// the meta line's. A report whose say is uninterruptible, then another room's events, whose
/// reply of the same name is interrupted: that room's verdict is the one it has alone.
#[test]
fn a_reports_options_stay_with_its_own_events() {
    let log = |name: &str| {
        let path = interop_corpus()
            .into_iter()
            .find(|p| p.ends_with(format!("livekit-agents@1.6.4/{name}")))
            .unwrap();
        read(&path)
    };
    let report = log("bug_uninterruptible_say_interrupted.report.jsonl");
    let events = log("bug_audio_after_interruption.events.jsonl");
    let (meta, events) = events.split_once('\n').unwrap();
    let room_a: Vec<String> = events
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["session"] = "a".into();
            v.to_string()
        })
        .collect();
    let findings = |lines: Vec<&str>| -> Vec<String> {
        let text = lines.join("\n");
        let v = dialect::check_input(text.as_bytes(), &Default::default())
            .verdict
            .unwrap();
        v.findings
            .iter()
            .filter(|f| f.session == "a")
            .map(|f| format!("{} {:?} {}", f.name(), f.ids, f.at))
            .collect()
    };
    let alone: Vec<&str> = std::iter::once(meta)
        .chain(room_a.iter().map(String::as_str))
        .collect();
    let after_report: Vec<&str> = std::iter::once(meta)
        .chain(report.lines().skip(1))
        .chain(room_a.iter().map(String::as_str))
        .collect();
    assert_eq!(findings(alone.clone()).len(), 1);
    assert_eq!(findings(after_report), findings(alone));
}

/// A Pipecat call still running when the pipeline ends leaves its reply not judged left open,
/// and says what would decide it: the call's result, which the pipeline's cleanup never pushes
/// (not the LLM's end, which came).
#[test]
fn a_pipecat_call_running_at_the_end_leaves_its_reply_not_judged_for_its_result() {
    for v in ["0.0.84", "1.14.0"] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
            "../fixtures/generated/pipecat@{v}/false_alarm_call_running_at_end.jsonl"
        ));
        let text = read(&path);
        let verdict = dialect::check_input(text.as_bytes(), &Default::default())
            .verdict
            .unwrap();
        assert!(verdict.conforms(), "{v}");
        let needs: Vec<&str> = verdict
            .not_judged
            .iter()
            .filter(|n| n.rule == "left_open")
            .map(|n| n.needs.as_str())
            .collect();
        assert_eq!(needs.len(), 1, "{v}: {needs:?}");
        assert!(
            needs[0].starts_with("call call_1's FunctionCallResultFrame"),
            "{v}: {needs:?}"
        );
    }
}

/// A `TTSSpeakFrame` that comes while the LLM streams waits in the LLM's queue, and the
/// interruption that reaches the LLM drops it with the queue (`FrameProcessor._start_interruption`):
/// it is never given to the model. One its frame makes uninterruptible is kept (1.x's
/// `__reset_process_queue`) and given once the interrupted response has ended.
#[test]
fn a_pipecat_speech_held_by_the_llm_is_dropped_by_the_interruption_unless_uninterruptible() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/generated/pipecat@0.0.84/false_alarm_speak_dropped_in_llm_queue.jsonl");
    let dropped = read(&path);
    let kept: String = dropped
        .lines()
        .map(|l| match l.strip_suffix('}') {
            Some(head) if l.contains(r#""frame": "TTSSpeakFrame", "id": 104,"#) => {
                format!("{head}, \"uninterruptible\": true}}\n")
            }
            _ => format!("{l}\n"),
        })
        .collect();
    assert_ne!(kept, dropped);
    for (text, given) in [(dropped, false), (kept, true)] {
        let v = dialect::check_input_keeping(
            text.as_bytes(),
            &Default::default(),
            trace::Keep::Effective,
        )
        .verdict
        .unwrap();
        assert!(v.conforms(), "{}", report::text::render_text(&v, 20));
        let accepted = v
            .effective
            .iter()
            .any(|l| l.contains("speak_3") && l.contains(r#""input":"accept""#));
        assert_eq!(accepted, given, "{:#?}", v.effective);
    }
}

/// A Pipecat call's result in the very millisecond its timeout ends was taken before the timeout
/// fired (the fixture); one a millisecond later came after it: the calls were cancelled at their
/// deadline, and a result of each is still judged against its cancellation.
#[test]
fn a_pipecat_result_after_its_timeouts_millisecond_is_still_judged_cancelled() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../fixtures/generated/pipecat@1.14.0/false_alarm_result_at_the_timeout_instant.jsonl",
    );
    let text = read(&path).replace(r#""t_ms": 4911,"#, r#""t_ms": 4912,"#);
    let v = dialect::check_input(text.as_bytes(), &Default::default())
        .verdict
        .unwrap();
    let found: Vec<(&str, usize)> = v.findings.iter().map(|f| (f.name(), f.line)).collect();
    assert_eq!(
        found,
        [47, 48, 49].map(|l| ("contradicted_output", l)),
        "{}",
        report::text::render_text(&v, 20)
    );
}

/// Under manual turn detection LiveKit lets no audio activity interrupt a speech
/// (`AgentActivity.__init__`): a final transcript over a speaking reply that allows
/// interruptions is no user speech step at all — not even one the model would then ignore.
#[test]
fn a_livekit_final_transcript_under_manual_detection_is_no_speech_step() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../fixtures/generated/livekit-agents@1.8.9/manual_final_transcript_interrupts_nothing.events.jsonl",
    );
    let text = read(&path);
    let v =
        dialect::check_input_keeping(text.as_bytes(), &Default::default(), trace::Keep::Effective)
            .verdict
            .unwrap();
    assert!(v.conforms(), "{}", report::text::render_text(&v, 20));
    let speech: Vec<&String> = v
        .effective
        .iter()
        .filter(|l| l.contains(r#""input":"speech_started""#))
        .collect();
    assert!(speech.is_empty(), "{speech:#?}");
    // The same log under voice activity detection: the transcript is a speech step.
    let vad = text.replacen(
        r#""turn_detection": "manual""#,
        r#""turn_detection": "vad""#,
        1,
    );
    assert_ne!(vad, text);
    let v =
        dialect::check_input_keeping(vad.as_bytes(), &Default::default(), trace::Keep::Effective)
            .verdict
            .unwrap();
    assert!(
        v.effective
            .iter()
            .any(|l| l.contains(r#""input":"speech_started""#)),
        "{:#?}",
        v.effective
    );
}
