//! Planted flaws: each rule broken in the model makes the gate fail, naming the check and the
//! invariant that caught it — a lab flaw the lab gate, a realtime flaw the realtime gate.

use std::fmt::Write;

use turnfence_checks::gate;
use turnfence_model::prelude::*;
use turnfence_model::turn::{Flaw, Profile, TurnMachine};

/// The gate check each flaw must fail (at least), by the scenario that exercises the rule.
fn expected_check(flaw: Flaw) -> &'static str {
    match flaw {
        Flaw::DeliverAfterStop => "no-late-delivery",
        Flaw::KeepPlaybackOnBargeIn => "audible-output-cleared",
        Flaw::SecondTerminalOnRepeatedStop => "stable-terminal-state",
        Flaw::RepeatedStopRecancels => "idempotent-stop",
        Flaw::CancelledBeforeChildrenStopped => "cancel-tree-drained",
        Flaw::SpawnAfterCancelRuns => "cancel-tree-drained",
        Flaw::ToolStartsAfterDeadline => "unsafe-late-tool-blocked",
        Flaw::CancelledAfterCommit => "no-false-cancel-claim",
        Flaw::TemporaryOutputsKept => "temporary-work-cleaned",
        Flaw::ReplayFromCursor => "cursor-replay",
        Flaw::DeltaSeqUnchecked => "first-token-visible",
        Flaw::AcceptWhileRunning => "new-turn-continues",
        Flaw::DeadlineIgnored => "explicit-terminal-error",
        Flaw::DrainedTurnNeverEnds => "explicit-terminal-error",
        // The realtime profile's flaws, by the realtime gate's scenarios.
        Flaw::NoTruncateOnBargeIn => "truncated-to-heard",
        Flaw::TruncateAtDelivered => "truncated-to-heard",
        Flaw::BargeInIgnoredAfterDone => "cleared-after-done",
        Flaw::CreateWhileCancelling => "create-refused-while-cancelling",
        Flaw::StaleCancelHitsActive => "successor-untouched",
        // The livekit-agents profile has no gate scenarios of its own yet: its flaws are the
        // fuzzer's and the explorer's to find (tests/it/fuzz.rs).
        Flaw::ToolResultDroppedOnInterruption
        | Flaw::ToolAnsweredAfterCancel
        | Flaw::PauseNeverDecided
        | Flaw::ResumeAfterInterruption
        | Flaw::ResumeDropsBuffered
        | Flaw::UninterruptibleIsPaused => unreachable!("no gate scenario: {flaw:?}"),
    }
}

/// Runs the gate of `names` on each flaw of `profile` (planted machines follow their flaw's
/// profile), asserting it fails naming the flaw's check and invariant; the table of what each
/// flaw failed, violated and misused.
fn flaws_caught(profile: Profile, names: &[&str]) -> String {
    let mut table = String::new();
    for &flaw in Flaw::ALL.iter().filter(|f| f.profile() == profile) {
        let run = gate::run(names, || TurnMachine::with_flaw(flaw));
        assert!(!run.passed(), "{flaw:?}: the gate passed");
        let failed = run.failed();
        assert!(
            failed.contains(&expected_check(flaw)),
            "{flaw:?}: expected {} to fail, failed: {failed:?}",
            expected_check(flaw)
        );
        let mut broken: Vec<&str> = run
            .scenarios
            .iter()
            .flat_map(|s| &s.violations)
            .map(|v| v.invariant.name())
            .collect();
        broken.sort_unstable();
        broken.dedup();
        assert!(
            broken.contains(&flaw.breaks().name()),
            "{flaw:?}: expected {} to be violated, got {broken:?}",
            flaw.breaks().name()
        );
        let misuse: Vec<&str> = run
            .scenarios
            .iter()
            .filter(|s| s.misuse.is_some())
            .map(|s| s.name)
            .collect();
        writeln!(
            table,
            "{flaw:?}\n  failed: {}\n  violated: {}\n  misuse in: {}",
            failed.join(", "),
            broken.join(", "),
            if misuse.is_empty() {
                "-".to_owned()
            } else {
                misuse.join(", ")
            }
        )
        .unwrap();
    }
    table
}

#[test]
fn every_flaw_fails_the_gate_naming_its_check_and_invariant() {
    let table = flaws_caught(Profile::Lab, &gate::NAMES);
    // The whole table is reviewed: a flaw caught by fewer checks than before shows in the diff.
    crate::snapshot_settings().bind(|| insta::assert_snapshot!("flaws_caught_by_gate", table));
}

/// The realtime profile's flaws, by the realtime gate: each fails its check and breaks its
/// invariant, as the realtime machine's own monitor judges.
#[test]
fn every_realtime_flaw_fails_the_realtime_gate_naming_its_check_and_invariant() {
    let table = flaws_caught(
        Profile::OpenaiRealtime,
        &turnfence_checks::dialect::openai_realtime::gate::NAMES,
    );
    crate::snapshot_settings()
        .bind(|| insta::assert_snapshot!("flaws_caught_by_realtime_gate", table));
}

/// The planted `resume_drops_buffered` drops what its paused turn still has buffered, and says
/// so; a resume whose turn has nothing left buffered (all its audio played before the pause)
/// drops nothing and says no clear, as the sound machine's resume does. The flaw breaks its rule
/// only where there is audio to lose.
#[test]
fn resume_drops_buffered_says_no_clear_of_nothing() {
    use turnfence_model::turn::Output;

    let mut m = TurnMachine::with_flaw(Flaw::ResumeDropsBuffered);
    let resumed = [
        r#"{"at":700,"input":"speech_stopped"}"#,
        r#"{"at":2700,"input":"tick"}"#,
    ];
    let inputs = [&crate::PAUSED_AFTER_PLAYING_ALL[..], &resumed].concat();
    let last = crate::last_outputs(&mut m, &inputs);
    assert_eq!(
        last,
        [Output::PlaybackResumed { turn: "t1".into() }],
        "the resume at 2 700 ms, the timeout after the speech ended"
    );
}
