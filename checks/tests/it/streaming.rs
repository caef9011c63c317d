//! The checker streams: its state follows the open sessions, not the length of the trace.

use turnfence_checks::gate::synthetic::SyntheticTrace;
use turnfence_checks::trace::canonical::CanonicalReader;
use turnfence_checks::trace::check;
use turnfence_model::turn::TurnMachine;

#[test]
fn a_long_trace_is_checked_one_session_at_a_time() {
    let sessions = 2_000;
    let verdict = check(
        SyntheticTrace::new(sessions),
        &mut CanonicalReader::<TurnMachine>::default(),
    )
    .unwrap();
    assert!(verdict.conforms());
    assert_eq!(verdict.sessions, sessions);
    assert_eq!(verdict.peak_open_sessions, 1);
    assert!(verdict.events > 40_000, "{} events", verdict.events);
}

#[test]
fn interleaved_sessions_are_checked_apart() {
    // Two copies of one scenario, their lines interleaved: each session conforms on its own.
    let one: Vec<String> = SyntheticTrace::new(1)
        .lines_as_strings()
        .into_iter()
        .collect();
    let mut text = String::new();
    for line in &one {
        text.push_str(line);
        text.push('\n');
        text.push_str(&line.replace("\"session\":\"s0\"", "\"session\":\"other\""));
        text.push('\n');
    }
    let verdict = check(
        text.as_bytes(),
        &mut CanonicalReader::<TurnMachine>::default(),
    )
    .unwrap();
    assert!(verdict.conforms(), "{:?}", verdict.findings);
    assert_eq!(verdict.sessions, 2);
    assert_eq!(verdict.peak_open_sessions, 2);
}

/// A realtime log streams too: each session judged and dropped at its `session.closed`, by the
/// checker and by the dialect's reader alike.
#[test]
fn a_long_realtime_log_is_checked_one_session_at_a_time() {
    use turnfence_checks::dialect::openai_realtime::{sample, RealtimeReader};
    use turnfence_checks::trace::{check_as, Keep};
    use turnfence_model::turn::Profile;

    let sessions = 1_000;
    let verdict = check_as(
        SyntheticTrace::of_session(sample::SESSION_NAME, sample::SESSION, sessions),
        &mut RealtimeReader::default(),
        Keep::Findings,
        TurnMachine::with_profile(Profile::OpenaiRealtime),
    )
    .unwrap();
    assert!(verdict.conforms(), "{:?}", verdict.findings.first());
    assert_eq!(verdict.sessions, sessions);
    assert_eq!(verdict.peak_open_sessions, 1);
    // Twenty-four lines a session, every one read (skipped events too) into one or more events.
    assert!(verdict.events > 20 * sessions, "{} events", verdict.events);
}
