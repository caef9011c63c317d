//! What puts each invariant of the monitors to the test, and what breaks it, one rule at a time
//! (`monitors.rs` holds the rest). (Found by mutation testing: docs/TESTING.md, "Mutation
//! testing".)

use std::collections::BTreeSet;

use turnfence_model::turn;

use crate::monitors::decided_once_found_after_a_pause;

/// The monitor keeps each turn's audio account (frames delivered, played, cleared) only under a
/// profile that truncates to what was heard: under the lab's and livekit-agents' rules two runs
/// that differ only in how many frames a delta brought are one state to the explorer, under
/// openai-realtime's they are two.
#[test]
fn only_a_profile_that_truncates_to_what_was_heard_keeps_an_audio_account() {
    use std::hash::Hasher;
    use turnfence_model::prelude::*;
    use turnfence_model::turn::{self, Profile, TurnMachine};

    let state = |profile: Profile, frames: u32| {
        let lines = [
            r#"{"at":0,"input":"accept","turn":"t1","generation":1,"mode":"audio"}"#.to_owned(),
            format!(
                r#"{{"at":10,"input":"delta","turn":"t1","generation":1,"seq":1,"frames":{frames}}}"#
            ),
        ];
        let steps = crate::run_lines(&mut TurnMachine::with_profile(profile), &lines);
        let mut monitor = turn::Monitor::for_profile(profile);
        let found: Vec<turn::Violation> = steps.iter().flat_map(|s| monitor.observe(s)).collect();
        assert!(found.is_empty(), "{found:?}");
        let mut h = turnfence_checks::explore::hasher();
        monitor.fingerprint(&mut h);
        h.finish()
    };
    for profile in [Profile::Lab, Profile::LivekitAgents] {
        assert_eq!(state(profile, 1), state(profile, 5), "{}", profile.name());
    }
    assert_ne!(
        state(Profile::OpenaiRealtime, 1),
        state(Profile::OpenaiRealtime, 5)
    );
}

/// `cancel_targets_its_response` is put to the test (its `sometimes`) by a stale stop only: one
/// naming a turn that ended while another is active. A stop of the running turn is not one, nor
/// a stop of an ended turn while every turn has ended.
#[test]
fn only_a_stale_stop_puts_cancel_targets_its_response_to_the_test() {
    use turnfence_model::prelude::*;
    use turnfence_model::turn::{self, Invariant, Profile, TurnMachine};

    let reached = |lines: &[&str]| {
        let mut machine = TurnMachine::with_profile(Profile::OpenaiRealtime);
        let steps = crate::run_lines(&mut machine, lines);
        let mut monitor = turn::Monitor::for_profile(Profile::OpenaiRealtime);
        let found: Vec<turn::Violation> = steps.iter().flat_map(|s| monitor.observe(s)).collect();
        assert!(found.is_empty(), "{found:?}");
        monitor
            .reached()
            .contains(&Invariant::CancelTargetsItsResponse)
    };
    let t1 = r#"{"at":0,"input":"accept","turn":"t1","generation":1,"mode":"text"}"#;
    let t1_done = r#"{"at":10,"input":"model_done","turn":"t1"}"#;
    let t2 = r#"{"at":20,"input":"accept","turn":"t2","generation":2,"mode":"text"}"#;
    let t2_done = r#"{"at":30,"input":"model_done","turn":"t2"}"#;
    let stop =
        |turn: &str| format!(r#"{{"at":40,"input":"stop","turn":"{turn}","request_id":"r"}}"#);
    assert!(reached(&[t1, t1_done, t2, &stop("t1")]), "a stale stop");
    assert!(
        !reached(&[t1, t1_done, t2, &stop("t2")]),
        "a stop of the running turn"
    );
    assert!(
        !reached(&[t1, t1_done, t2, t2_done, &stop("t1")]),
        "a stop of an ended turn, none active"
    );
}

/// The lab machine's run of canonical input lines: how its turns ended (their labels) and the
/// invariants it put to the test.
fn endings_and_reached(lines: &[&str]) -> (Vec<String>, BTreeSet<turn::Invariant>) {
    use turnfence_model::turn::TurnMachine;

    let steps = crate::run_lines(&mut TurnMachine::new(), lines);
    let ended: Vec<String> = steps
        .iter()
        .flat_map(|s| &s.outputs)
        .filter_map(|o| match o {
            turn::Output::Terminal { state, .. } => Some(state.label().to_owned()),
            _ => None,
        })
        .collect();
    (ended, turnfence_model::reached::<TurnMachine>(&steps))
}

/// `no_false_cancel_claim` is put to the test (its `sometimes`: "a turn ended reconcile_required")
/// by a turn that ends so, and by no other ending: a turn completed, cancelled or failed by its
/// deadline with no side effect in doubt has shown nothing of the rule.
#[test]
fn only_a_turn_ending_reconcile_required_puts_no_false_cancel_claim_to_the_test() {
    use turnfence_model::turn::Invariant as I;

    let reached = endings_and_reached;
    let accept =
        r#"{"at":0,"input":"accept","turn":"t1","generation":1,"mode":"text","deadline_ms":1000}"#;
    for (lines, ending) in [
        (
            vec![accept, r#"{"at":10,"input":"model_done","turn":"t1"}"#],
            "COMPLETED",
        ),
        (
            vec![
                accept,
                r#"{"at":10,"input":"stop","turn":"t1","request_id":"r1"}"#,
            ],
            "CANCELLED",
        ),
        (
            vec![accept, r#"{"at":1000,"input":"tick"}"#],
            "DEADLINE_EXCEEDED",
        ),
    ] {
        let (ended, reached) = reached(&lines);
        assert!(ended.iter().all(|e| e.starts_with(ending)), "{ended:?}");
        assert!(
            !ended.is_empty() && !reached.contains(&I::NoFalseCancelClaim),
            "{ending}"
        );
    }
    let (ended, reached) = reached(&[
        accept,
        r#"{"at":10,"input":"spawn","turn":"t1","child":"charge","kind":{"tool":{"name":"payments.charge","cancellable":false}}}"#,
        r#"{"at":20,"input":"commit_sent","turn":"t1","child":"charge","idempotency_key":"k1"}"#,
        r#"{"at":900,"input":"commit_failed","turn":"t1","child":"charge"}"#,
        r#"{"at":950,"input":"model_done","turn":"t1"}"#,
    ]);
    assert_eq!(ended, ["RECONCILE_REQUIRED"]);
    assert!(reached.contains(&I::NoFalseCancelClaim));
}

/// `no_late_delivery` is put to the test ("the gate dropped a delta, or playback was cleared") by
/// a delta dropped because its turn was stopped, not by one dropped as out of order (a seq
/// repeated): a repeat is no late delivery.
#[test]
fn a_delta_dropped_out_of_order_does_not_put_no_late_delivery_to_the_test() {
    let accept =
        r#"{"at":0,"input":"accept","turn":"t1","generation":1,"mode":"text","deadline_ms":1000}"#;
    let delta = r#"{"at":10,"input":"delta","turn":"t1","generation":1,"seq":1,"text":"Hi"}"#;
    let repeated = r#"{"at":20,"input":"delta","turn":"t1","generation":1,"seq":1,"text":"Hi"}"#;
    let late = r#"{"at":20,"input":"delta","turn":"t1","generation":1,"seq":2,"text":" there"}"#;
    let stop = r#"{"at":15,"input":"stop","turn":"t1","request_id":"r1"}"#;
    let (_, reached) = endings_and_reached(&[accept, delta, repeated]);
    assert!(
        !reached.contains(&turn::Invariant::NoLateDelivery),
        "a repeat"
    );
    let (_, reached) = endings_and_reached(&[accept, delta, stop, late]);
    assert!(
        reached.contains(&turn::Invariant::NoLateDelivery),
        "a delta after the stop"
    );
}

/// `cancelled_tool_leaves_nothing`: a tool's checkpoint is where it sees its cancel, before the
/// work of that checkpoint is kept (the model's `checkpoint`). So the temporary outputs a
/// checkpoint reports after the tool's cancel was asked for are never made, and a cancel that
/// removes none leaves nothing — even when the trace shows the cancel asked of the tool alone,
/// its turn running on (no stop, fence or deadline the monitor would read as the turn's own).
/// Those reported before the cancel are the tool's to remove.
#[test]
fn temporaries_reported_after_a_tools_cancel_was_asked_for_are_not_left_behind() {
    use turnfence_model::turn::{Input, InputKind, Output, Step, TurnMachine};
    use turnfence_model::Monitor as _;

    let (t, c) = ("t1", "report");
    let steps = crate::run_lines(
        &mut TurnMachine::new(),
        &[
            r#"{"at":0,"input":"accept","turn":"t1","generation":1,"mode":"text","deadline_ms":1000}"#,
            r#"{"at":10,"input":"spawn","turn":"t1","child":"report","kind":{"tool":{"name":"report.build","cancellable":true}}}"#,
        ],
    );
    let cancel_asked = Step {
        input: Input::new(20, InputKind::Tick),
        outputs: vec![Output::ChildCancelRequested {
            turn: t.into(),
            child: c.into(),
        }],
    };
    let checkpoint = |at, temporary_outputs, outputs| Step {
        input: Input::new(
            at,
            InputKind::Checkpoint {
                turn: t.into(),
                child: c.into(),
                phase: "render".into(),
                temporary_outputs,
            },
        ),
        outputs,
    };
    let cancelled = || Output::ChildCancelled {
        turn: t.into(),
        child: c.into(),
        checkpoint: "render".into(),
    };
    let found = |rest: Vec<Step>| {
        let mut monitor = turn::Monitor::default();
        steps
            .iter()
            .chain(&rest)
            .flat_map(|s| monitor.observe(s))
            .map(|v| v.invariant)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        found(vec![
            cancel_asked.clone(),
            checkpoint(30, 2, vec![cancelled()])
        ]),
        [],
        "reported after the cancel was asked for"
    );
    assert_eq!(
        found(vec![
            checkpoint(15, 2, vec![]),
            cancel_asked,
            checkpoint(30, 0, vec![cancelled()]),
        ]),
        [turn::Invariant::CancelledToolLeavesNothing],
        "reported before, never removed"
    );
}

/// `no_late_delivery` is put to the test by playback cleared of frames still queued (a barge-in
/// over audio not yet played), and not by a clear that found nothing queued (a barge-in over a
/// turn whose audio had all played): nothing late was kept from the user.
#[test]
fn only_a_clear_of_queued_frames_puts_no_late_delivery_to_the_test() {
    let accept =
        r#"{"at":0,"input":"accept","turn":"t1","generation":1,"mode":"audio","deadline_ms":1000}"#;
    let delta =
        r#"{"at":10,"input":"delta","turn":"t1","generation":1,"seq":1,"text":"Hi","frames":2}"#;
    let played = r#"{"at":20,"input":"frame_played","frames":2}"#;
    let speech = r#"{"at":30,"input":"speech_started","confidence":0.9}"#;
    let cleared = |lines: &[&str]| {
        let steps = crate::run_lines(&mut turnfence_model::turn::TurnMachine::new(), lines);
        let frames: Vec<u32> = steps
            .iter()
            .flat_map(|s| &s.outputs)
            .filter_map(|o| match o {
                turn::Output::PlaybackCleared { frames, .. } => Some(*frames),
                _ => None,
            })
            .collect();
        (
            frames,
            turnfence_model::reached::<turnfence_model::turn::TurnMachine>(&steps),
        )
    };
    let (frames, reached) = cleared(&[accept, delta, speech]);
    assert_eq!(frames, [2], "the barge-in clears the two frames queued");
    assert!(reached.contains(&turn::Invariant::NoLateDelivery));
    let (frames, reached) = cleared(&[accept, delta, played, speech]);
    assert_eq!(
        frames,
        [0],
        "the barge-in clears a buffer already played out"
    );
    assert!(!reached.contains(&turn::Invariant::NoLateDelivery));
}

/// `cancel_tree_drained` is put to the test ("a turn with a stopped child ended cancelled or
/// failed") by a cancel that stopped a child, not by one of a turn that had none: there was no
/// tree to drain.
#[test]
fn only_a_cancel_that_stopped_a_child_puts_cancel_tree_drained_to_the_test() {
    use turnfence_model::turn::Invariant as I;

    let accept =
        r#"{"at":0,"input":"accept","turn":"t1","generation":1,"mode":"text","deadline_ms":1000}"#;
    let stop = r#"{"at":20,"input":"stop","turn":"t1","request_id":"r1"}"#;
    let (ended, reached) = endings_and_reached(&[accept, stop]);
    assert_eq!(ended, ["CANCELLED"]);
    assert!(!reached.contains(&I::CancelTreeDrained), "no child");
    let (ended, reached) = endings_and_reached(&[
        accept,
        r#"{"at":10,"input":"spawn","turn":"t1","child":"c1","kind":"model"}"#,
        stop,
        r#"{"at":30,"input":"checkpoint","turn":"t1","child":"c1","phase":"decode"}"#,
    ]);
    assert_eq!(ended, ["CANCELLED"]);
    assert!(reached.contains(&I::CancelTreeDrained), "its model stopped");
}

/// A resume plays on what its pause held: a manager that clears the reply's queued audio as it
/// resumes skips what was never played and breaks `interruption_decided_once`, at the resume; a
/// clear that found nothing queued (no frame) skipped nothing.
#[test]
fn a_resume_that_clears_queued_audio_breaks_interruption_decided_once_one_clearing_none_does_not() {
    let resumed_clearing = |frames: u32| {
        let resume = format!(
            r#"{{"input":{{"at":2600,"input":"tick"}},"outputs":[{{"output":"playback_resumed","turn":"speech_1"}},{{"output":"playback_cleared","turn":"speech_1","frames":{frames}}}]}}"#
        );
        decided_once_found_after_a_pause(&[
            r#"{"input":{"at":600,"input":"speech_stopped"},"outputs":[]}"#,
            &resume,
        ])
    };
    let decided_once = turnfence_model::turn::Invariant::InterruptionDecidedOnce;
    assert_eq!(resumed_clearing(1), [(decided_once, 5)]);
    assert_eq!(resumed_clearing(0), []);
}

/// A spawn that must not start (a tool needing 10 ms with 4 ms left) is answered by its own
/// `tool_not_started`: a manager that answers it with another child's starts it unannounced and
/// breaks `deadline_respected`, at the spawn. So does one that shows another child starting: only
/// the spawned child's own start is the start the rule judges.
#[test]
fn a_spawn_refused_under_another_childs_name_breaks_deadline_respected() {
    use turnfence_model::prelude::*;
    use turnfence_model::turn::{self, Invariant, Profile, Step};

    let found = |output: &str, child: &str| {
        let reason = if output == "tool_not_started" {
            r#","reason":"no_budget""#
        } else {
            ""
        };
        let steps: Vec<Step> = [
            r#"{"input":{"at":0,"input":"accept","turn":"t","generation":1,"mode":"text","deadline_ms":90,"budget":{"retrieval_ms":25,"model_ms":55,"reserve_ms":10}},"outputs":[]}"#.to_owned(),
            format!(
                r#"{{"input":{{"at":86,"input":"spawn","turn":"t","child":"lookup","kind":{{"tool":{{"name":"inventory.lookup","cancellable":true}}}},"need_ms":10}},"outputs":[{{"output":"{output}","turn":"t","child":"{child}"{reason}}}]}}"#
            ),
        ]
        .iter()
        .map(|line| serde_json::from_str(line).expect("a step"))
        .collect();
        let mut monitor = turn::Monitor::for_profile(Profile::Lab);
        let found: Vec<(Invariant, usize)> = steps
            .iter()
            .enumerate()
            .flat_map(|(i, s)| {
                monitor
                    .observe(s)
                    .into_iter()
                    .map(move |v| (v.invariant, i))
            })
            .collect();
        found
    };
    assert_eq!(found("tool_not_started", "lookup"), []);
    assert_eq!(
        found("tool_not_started", "other"),
        [(Invariant::DeadlineRespected, 1)]
    );
    // Started anyway: broken at its start. Another child started: the spawn ran unannounced.
    assert_eq!(
        found("child_started", "lookup"),
        [(Invariant::DeadlineRespected, 1)]
    );
    assert_eq!(
        found("child_started", "other"),
        [(Invariant::DeadlineRespected, 1)]
    );
}

/// `restore_fails_closed` is put to the test ("a restore cancelled a fenced descendant or failed
/// closed") by a restore from a well-formed snapshot only when it cancelled a task of a fenced
/// root: one whose pending tasks are all of other roots came back whole and showed nothing of
/// the rule.
#[test]
fn only_a_restore_that_cancelled_a_fenced_task_puts_restore_fails_closed_to_the_test() {
    use turnfence_model::fence::{FenceMachine, Invariant as I};

    let reached = |pending: &str| {
        let restore = format!(
            r#"{{"at":1,"input":"restore","fences":{{"rows":[{{"root":"root-6","status":"active"}}]}},"pending":[{pending}]}}"#
        );
        let steps = crate::run_lines(&mut FenceMachine::new(), &[&restore]);
        turnfence_model::reached::<FenceMachine>(&steps)
    };
    let fenced = r#"{"task":"child-6","root":"root-6"}"#;
    let other = r#"{"task":"unrelated","root":"root-x"}"#;
    assert!(reached(&format!("{fenced},{other}")).contains(&I::RestoreFailsClosed));
    assert!(!reached(other).contains(&I::RestoreFailsClosed));
}

/// `quiescent_turns_terminal` is put to the test ("a turn past its deadline ended") by a turn
/// that ends at or after its deadline, not by one stopped before it.
#[test]
fn only_a_turn_ending_past_its_deadline_puts_quiescent_turns_terminal_to_the_test() {
    use turnfence_model::turn::Invariant as I;

    let accept =
        r#"{"at":0,"input":"accept","turn":"t1","generation":1,"mode":"text","deadline_ms":100}"#;
    let (ended, reached) = endings_and_reached(&[
        accept,
        r#"{"at":20,"input":"stop","turn":"t1","request_id":"r1"}"#,
    ]);
    assert_eq!(ended, ["CANCELLED"]);
    assert!(
        !reached.contains(&I::QuiescentTurnsTerminal),
        "stopped in time"
    );
    let (ended, reached) = endings_and_reached(&[accept, r#"{"at":100,"input":"tick"}"#]);
    assert_eq!(ended.len(), 1, "the deadline ends it: {ended:?}");
    assert!(
        reached.contains(&I::QuiescentTurnsTerminal),
        "ended at its deadline"
    );
}

/// `replay_exactly_once` asks of each step that names a seq an answer in its outputs: a seq the
/// client takes in again is ignored as a duplicate, a resume is replayed or refused. A step
/// without the answer breaks it, about that seq; the model's own steps answer both.
#[test]
fn a_duplicate_receive_or_a_resume_left_unanswered_breaks_replay_exactly_once() {
    use turnfence_model::turn::{Input, InputKind, Step, TurnMachine};
    use turnfence_model::Monitor as _;

    let lines = [
        r#"{"at":0,"input":"accept","turn":"t1","generation":1,"mode":"text","deadline_ms":1000}"#,
        r#"{"at":10,"input":"delta","turn":"t1","generation":1,"seq":1,"text":"Hi"}"#,
        r#"{"at":11,"input":"client_receive","seq":1}"#,
        r#"{"at":12,"input":"disconnect"}"#,
    ];
    let steps = crate::run_lines(&mut TurnMachine::new(), &lines);
    let judged = |rest: &[Step]| {
        let mut monitor = turn::Monitor::default();
        steps
            .iter()
            .chain(rest)
            .flat_map(|s| monitor.observe(s))
            .map(|v| (v.invariant, v.message.to_string()))
            .collect::<Vec<_>>()
    };
    let unanswered = |at, kind| Step {
        input: Input::new(at, kind),
        outputs: vec![],
    };
    assert_eq!(
        judged(&[unanswered(20, InputKind::ClientReceive { seq: 1 })]),
        [(
            turn::Invariant::ReplayExactlyOnce,
            "the client took in seq 1 a second time".to_owned()
        )]
    );
    assert_eq!(
        judged(&[unanswered(20, InputKind::Resume { after_seq: 0 })]),
        [(
            turn::Invariant::ReplayExactlyOnce,
            "resume after seq 0 was neither replayed nor refused".to_owned()
        )]
    );
    // The model answers both.
    let answered = crate::run_lines(
        &mut TurnMachine::new(),
        &[
            lines[0],
            lines[1],
            lines[2],
            r#"{"at":11,"input":"client_receive","seq":1}"#,
            lines[3],
            r#"{"at":20,"input":"resume","after_seq":0}"#,
        ],
    );
    let outputs: Vec<&turn::Output> = answered.iter().flat_map(|s| &s.outputs).collect();
    assert!(outputs
        .iter()
        .any(|o| matches!(o, turn::Output::DuplicateIgnored { seq: 1 })));
    assert!(outputs
        .iter()
        .any(|o| matches!(o, turn::Output::Replayed { .. })));
    assert!(turnfence_model::check_all::<TurnMachine>(&answered).is_empty());
}

/// `idempotent_stop`: a stop is answered by an answer naming both its turn and its request id.
/// A step that answers the stop with another request's id (an earlier stop's answer re-sent)
/// leaves the stop unanswered; the model answers it by its own id.
#[test]
fn a_stop_answered_under_another_request_id_is_unanswered() {
    use turnfence_model::turn::{
        Input, InputKind, Output, Step, StopAnswer, Terminal, TurnMachine,
    };
    use turnfence_model::Monitor as _;

    let lines = [
        r#"{"at":0,"input":"accept","turn":"t1","generation":1,"mode":"text","deadline_ms":1000}"#,
        r#"{"at":10,"input":"stop","turn":"t1","request_id":"stop-1"}"#,
    ];
    let steps = crate::run_lines(&mut TurnMachine::new(), &lines);
    let again = |answered: &str| Step {
        input: Input::new(
            20,
            InputKind::Stop {
                turn: "t1".into(),
                request_id: "stop-2".into(),
            },
        ),
        outputs: vec![Output::StopAnswered {
            turn: "t1".into(),
            request_id: answered.into(),
            answer: StopAnswer::AlreadyTerminal {
                state: Terminal::Cancelled,
            },
        }],
    };
    let judged = |last: Step| {
        let mut monitor = turn::Monitor::default();
        steps
            .iter()
            .chain([&last])
            .flat_map(|s| monitor.observe(s))
            .map(|v| (v.invariant, v.message.to_string()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        judged(again("stop-1")),
        [(
            turn::Invariant::IdempotentStop,
            "stop stop-2 was never answered".to_owned()
        )]
    );
    assert_eq!(judged(again("stop-2")), []);
}

/// `idempotent_stop` is put to the test ("a stop was answered for a turn already stopping or
/// ended") by a stop that finds the turn stopping or ended, not by the first stop of a running
/// turn, which any cancel test has.
#[test]
fn only_a_repeated_or_late_stop_puts_idempotent_stop_to_the_test() {
    use turnfence_model::turn::Invariant as I;

    let accept = r#"{"at":0,"input":"accept","turn":"t1","generation":1,"mode":"text"}"#;
    let spawn = r#"{"at":1,"input":"spawn","turn":"t1","child":"model","kind":"model"}"#;
    let done = r#"{"at":10,"input":"model_done","turn":"t1"}"#;
    let stop = |at: u32, id: &str| {
        format!(r#"{{"at":{at},"input":"stop","turn":"t1","request_id":"{id}"}}"#)
    };
    let reached = |lines: &[&str]| endings_and_reached(lines).1.contains(&I::IdempotentStop);
    assert!(!reached(&[accept, spawn, &stop(5, "a")]), "the first stop");
    assert!(
        reached(&[accept, spawn, &stop(5, "a"), &stop(6, "b")]),
        "a second stop"
    );
    assert!(
        reached(&[accept, done, &stop(20, "a")]),
        "a stop after the end"
    );
}

/// `seq_monotonic` is put to the test ("a second delta of one generation was delivered") by the
/// delivery of a seq past the first, not by the first alone: one delivery is in order with
/// nothing.
#[test]
fn only_a_second_delivery_puts_seq_monotonic_to_the_test() {
    let accept =
        r#"{"at":0,"input":"accept","turn":"t1","generation":1,"mode":"text","deadline_ms":1000}"#;
    let first = r#"{"at":10,"input":"delta","turn":"t1","generation":1,"seq":1,"text":"Hi"}"#;
    let second = r#"{"at":20,"input":"delta","turn":"t1","generation":1,"seq":2,"text":" there"}"#;
    let (_, reached) = endings_and_reached(&[accept, first]);
    assert!(
        !reached.contains(&turn::Invariant::SeqMonotonic),
        "one delivery"
    );
    let (_, reached) = endings_and_reached(&[accept, first, second]);
    assert!(
        reached.contains(&turn::Invariant::SeqMonotonic),
        "a second delivery"
    );
}
