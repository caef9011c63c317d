//! Rules of the invariant monitors that no fixture or gate run pins on its own, each stated as
//! the rule it is. (Found by mutation testing: `ci/mutants.sh`, docs/TESTING.md, "Mutation testing".)

use std::collections::BTreeSet;

use turnfence_model::{fence, turn, Invariant};

/// Every invariant is an `always` with its paired `sometimes` (`Invariant::reached`): what a run
/// must show for it to have been put to the test. Each says it in a sentence of its own: not
/// empty, not its name again, and no two invariants of a machine with the same one.
fn each_says_what_reaching_it_takes<V: Invariant>() {
    let mut seen = BTreeSet::new();
    for i in V::ALL {
        let reached = i.reached();
        assert!(
            reached.split_whitespace().count() >= 3,
            "{}: {reached:?} says nothing of what a run must show",
            i.name()
        );
        assert_ne!(reached, i.name());
        assert!(
            seen.insert(reached),
            "{}: {reached:?} is another invariant's",
            i.name()
        );
    }
}

#[test]
fn every_invariant_says_what_putting_it_to_the_test_takes() {
    each_says_what_reaching_it_takes::<turn::Invariant>();
    each_says_what_reaching_it_takes::<fence::Invariant>();
}

/// The lines at which checking a fixture finds `invariant` broken.
fn found_at(fixture: &str, invariant: &str) -> Vec<usize> {
    let path = crate::fixtures("rejected")
        .into_iter()
        .chain(crate::fixtures("accepted"))
        .find(|p| p.ends_with(fixture))
        .unwrap_or_else(|| panic!("no fixture {fixture}"));
    let text = crate::read(&path);
    let verdict = turnfence_checks::dialect::check_input(text.as_bytes(), &Default::default())
        .verdict
        .unwrap_or_else(|e| panic!("{fixture}: {e}"));
    verdict
        .findings
        .iter()
        .filter(|f| f.name() == invariant)
        .map(|f| f.line)
        .collect()
}

/// `foreign_begin_refused`: a row's owner task never changes. After a foreign begin took a live
/// root over, the row is the taker's, so the root's first task taking it back with a new token
/// changes the owner a second time: two findings, at the takeover (line 14) and at the taking
/// back (line 21) — not a re-adoption by the owner.
#[test]
fn a_root_taken_over_and_taken_back_changed_owner_twice() {
    assert_eq!(
        found_at(
            "0115_fence_root_taken_over_then_taken_back.jsonl",
            "foreign_begin_refused"
        ),
        [14, 21]
    );
}

/// `restore_fails_closed`: a snapshot listed as rows is malformed if one of its rows has no
/// root, and then nothing may come back pending, even a task of a root no row names.
#[test]
fn a_snapshot_row_without_a_root_makes_the_restore_fail_closed() {
    assert_eq!(
        found_at(
            "0114_fence_rootless_snapshot_row_restores.jsonl",
            "restore_fails_closed"
        ),
        [3]
    );
    assert_eq!(
        found_at(
            "0123_fence_rootless_snapshot_row_fails_closed.jsonl",
            "restore_fails_closed"
        ),
        [] as [usize; 0]
    );
}

/// Each named check of the model (`turn::cancel_tree_drained`, …) runs the monitor with its one
/// invariant: on a run that breaks two invariants, each check names its own alone, and together
/// they find what the whole monitor finds.
#[test]
fn a_named_check_reports_its_own_invariant_alone() {
    use turnfence_checks::gate;
    use turnfence_model::prelude::*;
    use turnfence_model::turn::{self, Flaw, TurnMachine};

    // Planted: a turn claimed cancelled before its children stopped, which a commit then
    // contradicts (the gate's flaw table: cancel_tree_drained and no_false_cancel_claim).
    let run = gate::run(&["noncancellable_tool"], || {
        TurnMachine::with_flaw(Flaw::CancelledBeforeChildrenStopped)
    });
    let steps = &run.scenarios[0].steps;
    let all = turnfence_model::check_all::<TurnMachine>(steps);
    type Check = fn(&[turn::Step]) -> Vec<turn::Violation>;
    let checks: [(turn::Invariant, Check); 2] = [
        (
            turn::Invariant::CancelTreeDrained,
            turn::invariants::cancel_tree_drained,
        ),
        (
            turn::Invariant::NoFalseCancelClaim,
            turn::invariants::no_false_cancel_claim,
        ),
    ];
    for (invariant, check) in checks {
        let found = check(steps);
        assert!(!found.is_empty(), "{}: nothing found", invariant.name());
        assert!(
            found.iter().all(|v| v.invariant == invariant),
            "{}: {found:?}",
            invariant.name()
        );
        let in_all = all.iter().filter(|v| v.invariant == invariant).count();
        assert_eq!(found.len(), in_all, "{}", invariant.name());
    }
}

/// An uninterruptible turn speaking when the user speaks (livekit-agents: accepted with
/// `interruptible: false`, a delta delivered, then speech), run by `machine`.
fn speech_over_an_uninterruptible_turn<M>(machine: &mut M) -> Vec<turnfence_model::turn::Step>
where
    M: turnfence_model::Machine<
        Input = turnfence_model::turn::Input,
        Output = turnfence_model::turn::Output,
    >,
{
    let lines = [
        r#"{"at":0,"input":"accept","turn":"speech_1","generation":1,"mode":"audio","interruptible":false}"#,
        r#"{"at":10,"input":"delta","turn":"speech_1","generation":1,"seq":1,"frames":2}"#,
        r#"{"at":15,"input":"speech_started","confidence":0.9}"#,
        // The speech has lasted long enough to count as an interruption.
        r#"{"at":515,"input":"tick"}"#,
    ];
    crate::run_lines(machine, &lines)
}

/// `uninterruptible_output_survives` has a named check of its own, like every invariant: alone,
/// it finds speech pausing an uninterruptible turn (the planted flaw `uninterruptible_is_paused`)
/// in the step where the speech counts, though its monitor judges nothing else — it decides no
/// pauses.
#[test]
fn the_uninterruptible_check_alone_finds_speech_pausing_an_uninterruptible_turn() {
    use turnfence_model::prelude::*;
    use turnfence_model::turn::{self, Flaw, TurnMachine};

    let steps = speech_over_an_uninterruptible_turn(&mut TurnMachine::with_flaw(
        Flaw::UninterruptibleIsPaused,
    ));
    let found = turn::invariants::uninterruptible_output_survives(&steps);
    let at: Vec<(turn::Invariant, usize)> = found.iter().map(|v| (v.invariant, v.step)).collect();
    assert_eq!(at, [(turn::Invariant::UninterruptibleOutputSurvives, 3)]);
}

/// `uninterruptible_output_survives` is put to the test (its `sometimes`) by speech over an
/// uninterruptible turn still speaking: the correct livekit-agents run reaches it and breaks
/// nothing.
#[test]
fn speech_over_a_speaking_uninterruptible_turn_puts_it_to_the_test() {
    use turnfence_model::prelude::*;
    use turnfence_model::turn::{self, Profile, TurnMachine};

    let steps =
        speech_over_an_uninterruptible_turn(&mut TurnMachine::with_profile(Profile::LivekitAgents));
    let mut monitor = turn::Monitor::for_profile(Profile::LivekitAgents);
    let found: Vec<turn::Violation> = steps.iter().flat_map(|s| monitor.observe(s)).collect();
    assert!(found.is_empty(), "{found:?}");
    assert!(monitor
        .reached()
        .contains(&turn::Invariant::UninterruptibleOutputSurvives));
}

/// A profile is found by the name the meta line and `--profile` give it, and judges the lab's
/// eleven invariants plus its own: `openai-realtime` the audio and response ones,
/// `livekit-agents` the tool and interruption ones, `pipecat` the tool call and uninterruptible
/// ones.
#[test]
fn each_profile_is_found_by_its_name_and_judges_the_labs_invariants_and_its_own() {
    use turnfence_model::prelude::*;
    use turnfence_model::turn::{Invariant, Profile};

    for p in Profile::ALL {
        assert_eq!(Profile::from_name(p.name()), Some(*p));
    }
    assert_eq!(Profile::from_name("openai"), None);
    let names = |p: Profile| p.invariants().map(|i| i.name()).collect::<Vec<_>>();
    let lab = names(Profile::Lab);
    assert_eq!(lab.len(), 11, "{lab:?}");
    let own = |p: Profile| {
        names(p)
            .into_iter()
            .filter(|n| !lab.contains(n))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        own(Profile::OpenaiRealtime),
        [
            Invariant::TruncatedToHeard.name(),
            Invariant::OneActiveResponse.name(),
            Invariant::CancelTargetsItsResponse.name()
        ]
    );
    assert_eq!(
        own(Profile::LivekitAgents),
        [
            Invariant::ToolCallSettled.name(),
            Invariant::InterruptionDecidedOnce.name(),
            Invariant::UninterruptibleOutputSurvives.name()
        ]
    );
    assert_eq!(
        own(Profile::Pipecat),
        [
            Invariant::ToolCallSettled.name(),
            Invariant::UninterruptibleOutputSurvives.name()
        ]
    );
    assert_eq!(names(Profile::OpenaiRealtime).len(), 14);
    assert_eq!(names(Profile::LivekitAgents).len(), 14);
    assert_eq!(names(Profile::Pipecat).len(), 13);
}

/// Runs the correct livekit-agents machine on a reply paused by speech (accepted, a delta
/// delivered, speech at 15 ms that counts at 515 ms) and then `rest`: it pauses the reply and
/// resumes nothing, and neither `interruption_decided_once`'s check alone nor the whole monitor
/// finds the pause undecided.
fn a_pause_stays_open_and_is_not_due(rest: &[&str]) {
    use turnfence_model::prelude::*;
    use turnfence_model::turn::{self, Output, Profile, TurnMachine};

    let start = [
        r#"{"at":0,"input":"accept","turn":"speech_1","generation":1,"mode":"audio"}"#,
        r#"{"at":10,"input":"delta","turn":"speech_1","generation":1,"seq":1,"frames":2}"#,
        r#"{"at":15,"input":"speech_started","confidence":0.9}"#,
        r#"{"at":515,"input":"tick"}"#,
    ];
    let mut machine = TurnMachine::with_profile(Profile::LivekitAgents);
    let steps = crate::run_lines(&mut machine, &[&start[..], rest].concat());
    let outputs: Vec<&Output> = steps.iter().flat_map(|s| &s.outputs).collect();
    assert!(outputs
        .iter()
        .any(|o| matches!(o, Output::PlaybackPaused { .. })));
    assert!(!outputs
        .iter()
        .any(|o| matches!(o, Output::PlaybackResumed { .. })));
    let alone = turn::invariants::interruption_decided_once(&steps);
    assert!(alone.is_empty(), "{alone:?}");
    let mut monitor = turn::Monitor::for_profile(Profile::LivekitAgents);
    let all: Vec<turn::Violation> = steps.iter().flat_map(|s| monitor.observe(s)).collect();
    assert!(all.is_empty(), "{all:?}");
}

/// `interruption_decided_once`'s own check, alone, follows the user's speech: a pause is due only
/// once the user is silent, and speaking again disarms it. Here the user stops (the resume falls
/// due at 2 600 ms), speaks again at 700 ms and is still speaking at 3 000 ms: the correct
/// livekit-agents machine resumes nothing, and neither the check alone nor the whole monitor finds
/// the pause undecided.
#[test]
fn a_pause_is_not_due_while_the_user_speaks_again() {
    a_pause_stays_open_and_is_not_due(&[
        r#"{"at":600,"input":"speech_stopped"}"#,
        r#"{"at":700,"input":"speech_started","confidence":0.9}"#,
        r#"{"at":3000,"input":"tick"}"#,
    ]);
}

/// A pause is due only once the user is silent: speech that counts (at 515 ms) pauses the reply
/// while the user still speaks, and they go on speaking past 3 000 ms, more than the 2 000 ms a
/// pause may stay undecided. The correct livekit-agents machine resumes nothing, and neither
/// `interruption_decided_once`'s check alone nor the whole monitor finds the pause overdue.
#[test]
fn a_pause_is_not_due_while_the_user_goes_on_speaking() {
    a_pause_stays_open_and_is_not_due(&[r#"{"at":3000,"input":"tick"}"#]);
}

/// `interruption_decided_once`'s findings, by step, on a faulty manager's steps as a log would
/// show them: the first reply paused by speech (accepted, a delta delivered, speech at 15 ms
/// counted at 515 ms), then `rest`.
pub(crate) fn decided_once_found_after_a_pause(
    rest: &[&str],
) -> Vec<(turnfence_model::turn::Invariant, usize)> {
    use turnfence_model::turn::{self, Step};

    let steps: Vec<Step> = [
        r#"{"input":{"at":0,"input":"accept","turn":"speech_1","generation":1,"mode":"audio"},"outputs":[]}"#,
        r#"{"input":{"at":10,"input":"delta","turn":"speech_1","generation":1,"seq":1,"frames":2},"outputs":[{"output":"delivered","turn":"speech_1","generation":1,"seq":1}]}"#,
        r#"{"input":{"at":15,"input":"speech_started","confidence":0.9},"outputs":[]}"#,
        r#"{"input":{"at":515,"input":"tick"},"outputs":[{"output":"playback_paused","turn":"speech_1"}]}"#,
    ]
    .iter()
    .chain(rest)
    .map(|line| serde_json::from_str(line).expect("a step"))
    .collect();
    turn::invariants::interruption_decided_once(&steps)
        .iter()
        .map(|v| (v.invariant, v.step))
        .collect()
}

/// A pause is decided once, before another: a manager that pauses a second reply while the
/// first one's pause is still undecided breaks `interruption_decided_once`, at the second pause.
/// (The correct machine never does.)
#[test]
fn a_second_reply_paused_while_a_pause_is_undecided_breaks_interruption_decided_once() {
    let found = decided_once_found_after_a_pause(&[
        r#"{"input":{"at":600,"input":"accept","turn":"speech_2","generation":2,"mode":"audio"},"outputs":[]}"#,
        r#"{"input":{"at":700,"input":"tick"},"outputs":[{"output":"playback_paused","turn":"speech_2"}]}"#,
    ]);
    let decided_once = turnfence_model::turn::Invariant::InterruptionDecidedOnce;
    assert_eq!(found, [(decided_once, 5)]);
}

/// A resume decides the pause of the reply it resumes, and no other: with the first reply's
/// pause open, a resume of a second reply decides nothing and breaks `interruption_decided_once`
/// (it resumes output that was never paused), at the resume.
#[test]
fn a_resume_of_another_reply_than_the_paused_one_breaks_interruption_decided_once() {
    let found = decided_once_found_after_a_pause(&[
        r#"{"input":{"at":600,"input":"speech_stopped"},"outputs":[]}"#,
        r#"{"input":{"at":1000,"input":"tick"},"outputs":[{"output":"playback_resumed","turn":"speech_2"}]}"#,
    ]);
    let decided_once = turnfence_model::turn::Invariant::InterruptionDecidedOnce;
    assert_eq!(found, [(decided_once, 5)]);
}

/// Under pipecat a response whose generation is done and that waits on its calls alone holds the
/// session no longer (`Profile::calls_outlive_generation`: Pipecat runs each call as a task of its
/// own, `LLMService._run_parallel_function_calls`): the next response is accepted beside it and
/// the monitor finds nothing; one still generating holds it, and a third is refused; speech then
/// cancels both running responses, asking the waiting one's cancellable call to stop and leaving
/// its `cancel_on_interruption=False` call running. The monitor, shown a response accepted beside
/// one whose generation is not done, finds two running.
#[test]
fn under_pipecat_calls_outlive_their_generation() {
    use turnfence_model::prelude::*;
    use turnfence_model::turn::{self, Input, Output, Profile, RefuseReason, TurnMachine};

    let inputs = [
        r#"{"at":0,"input":"accept","turn":"r1","generation":1,"mode":"audio"}"#,
        r#"{"at":5,"input":"spawn","turn":"r1","child":"a","kind":{"tool":{"name":"a","cancellable":true}}}"#,
        r#"{"at":5,"input":"spawn","turn":"r1","child":"b","kind":{"tool":{"name":"b","cancellable":false}}}"#,
        r#"{"at":10,"input":"model_done","turn":"r1"}"#,
        r#"{"at":20,"input":"accept","turn":"r2","generation":2,"mode":"audio"}"#,
        r#"{"at":30,"input":"accept","turn":"r3","generation":3,"mode":"audio"}"#,
        r#"{"at":40,"input":"speech_started","confidence":1.0}"#,
    ];
    let inputs: Vec<Input> = inputs
        .iter()
        .map(|t| serde_json::from_str(t).unwrap())
        .collect();
    let mut m = TurnMachine::with_profile(Profile::Pipecat);
    let (steps, misuse) = turnfence_model::run(&mut m, &inputs);
    assert!(misuse.is_none(), "{misuse:?}");
    let outputs: Vec<&Output> = steps.iter().flat_map(|s| &s.outputs).collect();
    let refused = |turn: &str| Output::TurnRefused {
        turn: turn.into(),
        reason: RefuseReason::ActiveTurnExists,
    };
    let asked = |turn: &str, child: &str| Output::ChildCancelRequested {
        turn: turn.into(),
        child: child.into(),
    };
    assert!(!outputs.contains(&&refused("r2")), "{outputs:?}");
    assert!(outputs.contains(&&refused("r3")), "{outputs:?}");
    assert!(outputs.contains(&&asked("r1", "a")), "{outputs:?}");
    assert!(!outputs.contains(&&asked("r1", "b")), "{outputs:?}");
    let mut monitor = turn::Monitor::for_profile(Profile::Pipecat);
    let found: Vec<turn::Violation> = steps.iter().flat_map(|s| monitor.observe(s)).collect();
    assert!(found.is_empty(), "{found:?}");

    // The same accept beside r1 before its model is done: two responses running.
    let early: Vec<turn::Step> = [&inputs[0], &inputs[1], &inputs[4]]
        .into_iter()
        .map(|input| turn::Step {
            input: input.clone(),
            outputs: Vec::new(),
        })
        .collect();
    let mut monitor = turn::Monitor::for_profile(Profile::Pipecat);
    let found: Vec<turn::Violation> = early.iter().flat_map(|s| monitor.observe(s)).collect();
    assert!(
        found
            .iter()
            .any(|v| v.invariant == turn::Invariant::SingleRunningTurn),
        "{found:?}"
    );
}

/// Under livekit-agents too a reply whose generation is done and that waits on its calls alone
/// holds the session no longer (`Profile::calls_outlive_generation`: LiveKit marks the
/// generation done and waits for the tools among `_background_speeches`), so a queued `say()`
/// is accepted beside it; a third speech beside the `say()` still generating is refused. Speech
/// over the `say()` pauses it alone (`_interrupt_by_audio_activity` interrupts the current
/// speech): the waiting reply's call is not asked to stop. The user's turn, committed, then
/// interrupts both (`_user_turn_completed_impl` interrupts `_background_speeches` first), and the
/// monitor finds nothing.
#[test]
fn under_livekit_a_reply_waiting_on_its_calls_lets_the_next_speech_play() {
    use turnfence_model::prelude::*;
    use turnfence_model::turn::{self, Output, Profile, RefuseReason, TurnMachine};

    let lines = [
        r#"{"at":0,"input":"accept","turn":"speech_1","generation":1,"mode":"audio"}"#,
        r#"{"at":5,"input":"spawn","turn":"speech_1","child":"a","kind":{"tool":{"name":"a","cancellable":true}}}"#,
        r#"{"at":10,"input":"model_done","turn":"speech_1"}"#,
        r#"{"at":20,"input":"accept","turn":"speech_2","generation":2,"mode":"audio"}"#,
        r#"{"at":25,"input":"accept","turn":"speech_3","generation":3,"mode":"audio"}"#,
        r#"{"at":30,"input":"delta","turn":"speech_2","generation":2,"seq":1,"frames":2}"#,
        r#"{"at":40,"input":"speech_started","confidence":0.9}"#,
        r#"{"at":540,"input":"tick"}"#,
        r#"{"at":600,"input":"transcribed"}"#,
    ];
    let mut machine = TurnMachine::with_profile(Profile::LivekitAgents);
    let steps = crate::run_lines(&mut machine, &lines);
    // Up to the speech's pause (the tick): the `say()` paused, the waiting reply untouched.
    let before: Vec<&Output> = steps[..steps.len() - 1]
        .iter()
        .flat_map(|s| &s.outputs)
        .collect();
    assert!(
        before.contains(&&Output::PlaybackPaused {
            turn: "speech_2".into()
        }),
        "{before:?}"
    );
    assert!(
        !before.iter().any(|o| matches!(
            o,
            Output::ChildCancelRequested { .. } | Output::GenerationFenced { .. }
        )),
        "{before:?}"
    );
    let outputs: Vec<&Output> = steps.iter().flat_map(|s| &s.outputs).collect();
    let refused = |turn: &str| Output::TurnRefused {
        turn: turn.into(),
        reason: RefuseReason::ActiveTurnExists,
    };
    assert!(!outputs.contains(&&refused("speech_2")), "{outputs:?}");
    assert!(outputs.contains(&&refused("speech_3")), "{outputs:?}");
    let fenced = |turn: &str| {
        outputs
            .iter()
            .any(|o| matches!(o, Output::GenerationFenced { turn: t, .. } if t.as_str() == turn))
    };
    assert!(fenced("speech_2") && fenced("speech_1"), "{outputs:?}");
    // Stopped, its call running on through the interruption (as LiveKit's tools do).
    let waiting = machine.session().turn("speech_1").map(|t| &t.phase);
    assert!(
        waiting.is_some_and(|p| p.is_cancel_requested()),
        "{waiting:?}"
    );
    let mut monitor = turn::Monitor::for_profile(Profile::LivekitAgents);
    let found: Vec<turn::Violation> = steps.iter().flat_map(|s| monitor.observe(s)).collect();
    assert!(found.is_empty(), "{found:?}");
}

/// Under livekit-agents a reply whose generation is done, all its audio played, and that waits
/// on its calls alone speaks no more: speech over it pauses nothing (LiveKit's scheduler lets go
/// of a speech once its generation is done, `_current_speech = None`, and audio activity
/// interrupts the current speech alone), so no resume is owed when the user stops.
#[test]
fn under_livekit_speech_over_a_reply_waiting_on_its_calls_pauses_nothing() {
    use turnfence_model::prelude::*;
    use turnfence_model::turn::{self, Output, Profile, TurnMachine};

    let lines = [
        r#"{"at":0,"input":"accept","turn":"speech_1","generation":1,"mode":"audio"}"#,
        r#"{"at":5,"input":"spawn","turn":"speech_1","child":"a","kind":{"tool":{"name":"a","cancellable":true}}}"#,
        r#"{"at":10,"input":"delta","turn":"speech_1","generation":1,"seq":1,"frames":2}"#,
        r#"{"at":20,"input":"frame_played"}"#,
        r#"{"at":20,"input":"frame_played"}"#,
        r#"{"at":20,"input":"model_done","turn":"speech_1"}"#,
        r#"{"at":40,"input":"speech_started","confidence":0.9}"#,
        r#"{"at":1000,"input":"tick"}"#,
        r#"{"at":1100,"input":"speech_stopped"}"#,
        r#"{"at":5000,"input":"tick"}"#,
    ];
    let mut machine = TurnMachine::with_profile(Profile::LivekitAgents);
    let steps = crate::run_lines(&mut machine, &lines);
    let outputs: Vec<&Output> = steps.iter().flat_map(|s| &s.outputs).collect();
    assert!(
        !outputs.iter().any(|o| matches!(
            o,
            Output::PlaybackPaused { .. } | Output::GenerationFenced { .. }
        )),
        "{outputs:?}"
    );
    let mut monitor = turn::Monitor::for_profile(Profile::LivekitAgents);
    let mut found: Vec<turn::Violation> = steps.iter().flat_map(|s| monitor.observe(s)).collect();
    monitor.finish();
    found.extend(monitor.take_violations());
    assert!(
        found
            .iter()
            .all(|v| v.invariant.name() != "interruption_decided_once"),
        "{found:?}"
    );
}
