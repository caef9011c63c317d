//! A field's value outside what it can mean is an input error at its line, and a field a line
//! need not have is not read where another states the same: the readers' bounds, one case each.

use turnfence_checks::dialect;

fn read(rel: &str) -> String {
    crate::read(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel))
}

/// A Pipecat `TTSAudioRawFrame` of negative length is unreadable at its line, not a frame of
/// no audio.
#[test]
fn a_pipecat_audio_frame_of_negative_length_is_an_input_error() {
    let text = read("../fixtures/interop/pipecat@1.14.0/bug_binned_tool_runs.jsonl");
    let (n, line) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains(r#""frame": "TTSAudioRawFrame""#) && l.contains(r#""ms": 300.0"#))
        .unwrap();
    let bad = text.replacen(
        line,
        &line.replacen(r#""ms": 300.0"#, r#""ms": -300.0"#, 1),
        1,
    );
    assert_ne!(bad, text);
    let e = dialect::check_input(bad.as_bytes(), &Default::default())
        .verdict
        .unwrap_err();
    assert_eq!(e.line, n + 1, "{e}");
    assert!(e.to_string().contains("needs `ms`"), "{e}");
}

/// A Realtime audio delta whose length is stated (`audio_ms`) is not measured from its `delta`:
/// a capture that kept the milliseconds may elide the base64.
#[test]
fn a_realtime_delta_with_its_milliseconds_stated_needs_no_base64() {
    let text =
        read("../fixtures/rejected/0144_unexpected_output_realtime_log_create_refused_in_words_alone.jsonl");
    let before = dialect::check_input(text.as_bytes(), &Default::default()).verdict;
    let elided = text.replacen(
        r#""audio_ms":100}"#,
        r#""audio_ms":100,"delta":"<elided>"}"#,
        1,
    );
    assert_ne!(elided, text);
    let after = dialect::check_input(elided.as_bytes(), &Default::default()).verdict;
    let names = |v: &turnfence_checks::trace::Verdict| {
        v.findings
            .iter()
            .map(|f| (f.name(), f.line))
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&after.unwrap()), names(&before.unwrap()));
}
