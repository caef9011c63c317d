//! The turn machine's rules one at a time, each stated as the rule it is: deadlines, barge-in,
//! tools and their answers, Pipecat's calls, the playback buffer, limits, LiveKit's speech.

use proptest::prelude::*;
use proptest::sample::select;
use turnfence_model::prelude::*;
use turnfence_model::turn::state::{Frame, Playback};
use turnfence_model::turn::{ChildKind, Input, InputKind, Mode, Step, TurnMachine};

use crate::model::{drain, fail_with_seed, record, text_turn_t_accepted};

/// Found by the property test on seed 1 with 3000 cases: a deadline already due at the accept
/// must fire at once, not at the next input.
#[test]
fn a_deadline_due_at_accept_fires_at_once() {
    let mut m = TurnMachine::new();
    let accept = Input::new(
        7,
        InputKind::Accept {
            turn: "t".into(),
            generation: 1,
            mode: Mode::Text,
            deadline_ms: Some(0),
            budget: None,
            interruptible: true,
        },
    );
    m.handle(&accept).unwrap();
    let outputs = drain(&mut m);
    let names: Vec<String> = outputs
        .iter()
        .map(|o| {
            serde_json::to_value(o).unwrap()["output"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(names, ["deadline_exceeded", "terminal", "persisted"]);
    assert!(turnfence_model::check_all::<TurnMachine>(&[Step {
        input: accept,
        outputs
    }])
    .is_empty());
}

/// A barge-in clears the playback buffer once: a turn with a running TTS child used to report
/// a second, empty `playback_cleared` when its cancel reached the child.
#[test]
fn a_barge_in_reports_one_playback_clear() {
    let inputs = [
        InputKind::Accept {
            turn: "t".into(),
            generation: 1,
            mode: Mode::Audio,
            deadline_ms: None,
            budget: None,
            interruptible: true,
        },
        InputKind::Spawn {
            turn: "t".into(),
            child: "tts".into(),
            kind: ChildKind::Tts,
            need_ms: None,
            timeout_ms: None,
        },
        InputKind::Delta {
            turn: "t".into(),
            generation: 1,
            seq: 1,
            text: None,
            frames: 3,
        },
        InputKind::SpeechStarted {
            confidence: 0.9,
            since: None,
        },
    ];
    let inputs: Vec<Input> = inputs.into_iter().map(|k| Input::new(1, k)).collect();
    let steps = record(&inputs);
    let barge_in = &steps.last().unwrap().outputs;
    let clears: Vec<String> = barge_in
        .iter()
        .map(|o| serde_json::to_value(o).unwrap())
        .filter(|o| o["output"] == "playback_cleared")
        .map(|o| o.to_string())
        .collect();
    assert_eq!(
        clears,
        [r#"{"output":"playback_cleared","turn":"t","frames":3}"#],
        "{barge_in:?}"
    );
    assert!(
        barge_in
            .iter()
            .any(|o| matches!(o, turnfence_model::turn::Output::ChildCancelled { .. })),
        "the TTS child is cancelled by the barge-in: {barge_in:?}"
    );
    assert!(turnfence_model::check_all::<TurnMachine>(&steps).is_empty());
}

/// Only a cancellable tool makes temporary outputs, and only a non-cancellable tool commits: a
/// report that says otherwise is the caller's mistake, named with what was expected.
#[test]
fn temporary_outputs_and_commits_belong_to_their_kind_of_tool() {
    use turnfence_model::turn::Misuse;
    let kinds = [
        ("model", ChildKind::Model),
        ("tts", ChildKind::Tts),
        (
            "fixed",
            ChildKind::Tool {
                name: "refund".into(),
                cancellable: false,
            },
        ),
        (
            "undoable",
            ChildKind::Tool {
                name: "report".into(),
                cancellable: true,
            },
        ),
    ];
    for (child, kind) in kinds {
        let cancellable = kind.is_cancellable_tool();
        let noncancellable = kind.is_noncancellable_tool();
        let mut m = text_turn_t_accepted();
        let spawn = InputKind::Spawn {
            turn: "t".into(),
            child: child.into(),
            kind,
            need_ms: None,
            timeout_ms: None,
        };
        m.handle(&Input::new(1, spawn)).unwrap();
        let temporaries = InputKind::Checkpoint {
            turn: "t".into(),
            child: child.into(),
            phase: "write".into(),
            temporary_outputs: 1,
        };
        let commit = InputKind::CommitSent {
            turn: "t".into(),
            child: child.into(),
            idempotency_key: "k".into(),
        };
        // A misuse changes nothing, so the same machine takes the second question too.
        let wrong = |expected: &'static str| Misuse::WrongChildKind {
            turn: "t".into(),
            child: child.into(),
            expected,
        };
        let took_temporaries = m.handle(&Input::new(2, temporaries));
        let took_commit = m.handle(&Input::new(3, commit));
        if cancellable {
            assert_eq!(took_temporaries, Ok(()), "{child}");
        } else {
            assert_eq!(
                took_temporaries,
                Err(wrong("a cancellable tool")),
                "{child}"
            );
        }
        if noncancellable {
            assert_eq!(took_commit, Ok(()), "{child}");
        } else {
            assert_eq!(took_commit, Err(wrong("a non-cancellable tool")), "{child}");
        }
    }
}

/// Timers fire in the order of their times: under livekit-agents, a paused output's resume due
/// (2 700 ms: the false-interruption timeout after the speech ended at 700) before its turn's
/// deadline (3 000 ms), both passed by one input (a tick at 3 100), comes first: the output
/// resumes, then the deadline fires. Not the deadline first, which would end the turn and its
/// pause with no resume.
#[test]
fn a_resume_due_before_a_deadline_comes_first() {
    use turnfence_model::turn::{Output, Profile};

    let mut m = TurnMachine::with_profile(Profile::LivekitAgents);
    let inputs = [
        r#"{"at":0,"input":"accept","turn":"t1","generation":1,"mode":"audio","deadline_ms":3000}"#,
        r#"{"at":10,"input":"delta","turn":"t1","generation":1,"seq":1,"frames":2}"#,
        r#"{"at":100,"input":"speech_started","confidence":0.9}"#,
        r#"{"at":600,"input":"tick"}"#,
        r#"{"at":700,"input":"speech_stopped"}"#,
        r#"{"at":3100,"input":"tick"}"#,
    ];
    let last = crate::last_outputs(&mut m, &inputs);
    assert_eq!(
        last.get(..2),
        Some(
            &[
                Output::PlaybackResumed { turn: "t1".into() },
                Output::DeadlineExceeded { turn: "t1".into() },
            ][..]
        ),
        "{last:?}"
    );
}

/// A pause ends with its turn: under livekit-agents, a reply that played all its audio before
/// the user's speech paused it, and whose model is then done, ends completed while paused; the
/// end of the speech arms no resume, and the timeout passing resumes nothing.
#[test]
fn a_paused_turn_that_ends_is_never_resumed() {
    use turnfence_model::turn::Profile;

    let mut m = TurnMachine::with_profile(Profile::LivekitAgents);
    let ended = [
        r#"{"at":650,"input":"model_done","turn":"t1"}"#,
        r#"{"at":700,"input":"speech_stopped"}"#,
        r#"{"at":2800,"input":"tick"}"#,
    ];
    let inputs = [&crate::PAUSED_AFTER_PLAYING_ALL[..], &ended].concat();
    assert_eq!(crate::last_outputs(&mut m, &inputs), []);
}

/// Under livekit-agents every tool call is answered once: a call whose commit was in flight when
/// the turn's deadline passed has an unknown outcome, so the turn ends needing reconciliation and
/// the call is answered with an error (reconciliation, not the model, learns what happened).
#[test]
fn a_tool_call_of_unknown_outcome_is_answered_with_an_error() {
    use turnfence_model::turn::{Output, Profile, ToolAnswer};

    let mut m = TurnMachine::with_profile(Profile::LivekitAgents);
    let inputs = [
        r#"{"at":0,"input":"accept","turn":"t1","generation":1,"mode":"text","deadline_ms":100}"#,
        r#"{"at":5,"input":"spawn","turn":"t1","child":"call_1","kind":{"tool":{"name":"pay","cancellable":false}}}"#,
        r#"{"at":50,"input":"commit_sent","turn":"t1","child":"call_1","idempotency_key":"k1"}"#,
        r#"{"at":100,"input":"tick"}"#,
    ];
    let last = crate::last_outputs(&mut m, &inputs);
    let answered = Output::ToolAnswered {
        turn: "t1".into(),
        child: "call_1".into(),
        answer: ToolAnswer::Error,
    };
    assert!(last.contains(&answered), "{last:?}");
}

/// Under pipecat an interruption cancels a call spawned cancellable (Pipecat's default
/// `cancel_on_interruption`) and lets one spawned not cancellable (`cancel_on_interruption=False`)
/// run through: of two calls of one reply, speech asks the first to stop and leaves the second
/// running, which is then answered by its result, once.
#[test]
fn under_pipecat_an_interruption_cancels_only_the_calls_registered_to_be() {
    use turnfence_model::turn::{Output, Profile, ToolAnswer};

    let mut m = TurnMachine::with_profile(Profile::Pipecat);
    let setup = [
        r#"{"at":0,"input":"accept","turn":"r1","generation":1,"mode":"audio"}"#,
        r#"{"at":5,"input":"spawn","turn":"r1","child":"binned","kind":{"tool":{"name":"a","cancellable":true}}}"#,
        r#"{"at":5,"input":"spawn","turn":"r1","child":"kept","kind":{"tool":{"name":"b","cancellable":false}}}"#,
        r#"{"at":10,"input":"model_done","turn":"r1"}"#,
        r#"{"at":20,"input":"speech_started","confidence":1.0}"#,
    ];
    let last = crate::last_outputs(&mut m, &setup);
    let asked = |child: &str| Output::ChildCancelRequested {
        turn: "r1".into(),
        child: child.into(),
    };
    assert!(last.contains(&asked("binned")), "{last:?}");
    assert!(!last.contains(&asked("kept")), "{last:?}");
    let result = [r#"{"at":900,"input":"child_completed","turn":"r1","child":"kept"}"#];
    let last = crate::last_outputs(&mut m, &result);
    let answered = Output::ToolAnswered {
        turn: "r1".into(),
        child: "kept".into(),
        answer: ToolAnswer::Result,
    };
    assert_eq!(
        last.iter().filter(|o| **o == answered).count(),
        1,
        "{last:?}"
    );
}

/// Under pipecat a call spawned with a timeout is cancelled when it has run that long — at the
/// first input at or past it, and not before — answered by its cancellation, and its turn (its
/// model done, nothing else pending) ends completed (then persisted): the timeout cancels the
/// call, not the turn.
/// The machine's next timer is that timeout.
#[test]
fn under_pipecat_a_call_is_cancelled_at_its_timeout() {
    use turnfence_model::turn::{Output, Profile, Terminal, ToolAnswer};
    use turnfence_model::Machine as _;

    let mut m = TurnMachine::with_profile(Profile::Pipecat);
    let setup = [
        r#"{"at":0,"input":"accept","turn":"r1","generation":1,"mode":"audio"}"#,
        r#"{"at":100,"input":"spawn","turn":"r1","child":"slow","kind":{"tool":{"name":"a","cancellable":true}},"timeout_ms":2000}"#,
        r#"{"at":110,"input":"model_done","turn":"r1"}"#,
        r#"{"at":2099,"input":"tick"}"#,
    ];
    assert_eq!(crate::last_outputs(&mut m, &setup), []);
    assert_eq!(m.poll_timeout(), Some(2_100));
    let last = crate::last_outputs(&mut m, &[r#"{"at":2100,"input":"tick"}"#]);
    assert_eq!(
        last[..last.len().min(3)],
        [
            Output::ChildCancelled {
                turn: "r1".into(),
                child: "slow".into(),
                checkpoint: "timeout".into(),
            },
            Output::ToolAnswered {
                turn: "r1".into(),
                child: "slow".into(),
                answer: ToolAnswer::Cancelled,
            },
            Output::Terminal {
                turn: "r1".into(),
                state: Terminal::Completed,
            },
        ]
    );
}

/// A call timeout is Pipecat's rule: the lab's machine refuses a spawn that states one, as it
/// refuses an uninterruptible turn, naming what the profile lacks.
#[test]
fn a_call_timeout_needs_the_pipecat_profile() {
    use turnfence_model::turn::Input;
    use turnfence_model::Machine as _;

    let mut m = TurnMachine::with_profile(turnfence_model::turn::Profile::Lab);
    let accept = r#"{"at":0,"input":"accept","turn":"r1","generation":1,"mode":"audio"}"#;
    let spawn = r#"{"at":1,"input":"spawn","turn":"r1","child":"c","kind":{"tool":{"name":"a","cancellable":true}},"timeout_ms":5}"#;
    m.handle(&serde_json::from_str::<Input>(accept).unwrap())
        .unwrap();
    let refused = m.handle(&serde_json::from_str::<Input>(spawn).unwrap());
    let message = refused.unwrap_err().to_string();
    assert!(message.contains("tool call timeouts"), "{message}");
}

/// Under pipecat speech leaves an uninterruptible turn (`TTSSpeakFrame(interruptible=False)`)
/// alone — its audio is neither cleared nor fenced, and it plays on — while it cuts an
/// interruptible turn whose audio waits behind it.
#[test]
fn under_pipecat_speech_leaves_an_uninterruptible_turn_alone() {
    use turnfence_model::turn::{Output, Profile};

    let mut m = TurnMachine::with_profile(Profile::Pipecat);
    let setup = [
        r#"{"at":0,"input":"accept","turn":"notice","generation":1,"mode":"audio","interruptible":false}"#,
        r#"{"at":1,"input":"delta","turn":"notice","generation":1,"seq":1,"frames":100}"#,
        r#"{"at":2,"input":"model_done","turn":"notice"}"#,
        r#"{"at":3,"input":"accept","turn":"reply","generation":2,"mode":"audio"}"#,
        r#"{"at":4,"input":"delta","turn":"reply","generation":2,"seq":1,"frames":50}"#,
        r#"{"at":50,"input":"speech_started","confidence":1.0}"#,
    ];
    let last = crate::last_outputs(&mut m, &setup);
    let touches = |turn: &str| {
        last.iter().any(|o| match o {
            Output::PlaybackCleared { turn: t, .. } | Output::GenerationFenced { turn: t, .. } => {
                t == turn
            }
            _ => false,
        })
    };
    assert!(!touches("notice") && touches("reply"), "{last:?}");
    let played = crate::last_outputs(
        &mut m,
        &[r#"{"at":60,"input":"frame_played","frames":100}"#],
    );
    assert_eq!(
        played,
        [Output::Played {
            turn: "notice".into(),
            generation: 1,
            seq: 1,
            frames: 100,
        }]
    );
}

/// What the playback buffer is asked to do in [`the_playback_buffer_is_a_queue_of_frames`].
#[derive(Clone, Debug)]
enum PlaybackOp {
    Push(Frame, u32),
    Play(u32),
    RemoveTurn(&'static str),
    Clear,
}

/// The playback buffer, kept as runs of equal frames, is the plain queue of its frames: after any
/// sequence of pushes, plays, removals of a turn's frames and clears it holds, plays and counts
/// what a `Vec` of every frame does, each call says what it did (the frames played, how many
/// removed), and it has one form per sequence of frames (no two neighbouring runs of one frame,
/// none empty), so states holding the same frames compare equal however they got there.
#[test]
fn the_playback_buffer_is_a_queue_of_frames() {
    const TURNS: [&str; 3] = ["t1", "t2", "t3"];
    let frame = (select(&TURNS[..]), 1u64..3, 1u64..3).prop_map(|(turn, generation, seq)| Frame {
        turn: turn.into(),
        generation,
        seq,
    });
    let op = prop_oneof![
        4 => (frame, 0u32..4).prop_map(|(f, n)| PlaybackOp::Push(f, n)),
        2 => (0u32..6).prop_map(PlaybackOp::Play),
        2 => select(&TURNS[..]).prop_map(PlaybackOp::RemoveTurn),
        1 => Just(PlaybackOp::Clear),
    ];
    let seed = crate::seed();
    let result = crate::runner(seed).run(&proptest::collection::vec(op, 0..40), |ops| {
        let mut runs = Playback::default();
        let mut plain: Vec<Frame> = Vec::new();
        for op in ops {
            match op {
                PlaybackOp::Push(f, n) => {
                    runs.push(f.clone(), n);
                    plain.extend(std::iter::repeat_n(f, n as usize));
                }
                PlaybackOp::Play(n) => {
                    let played: Vec<Frame> = runs
                        .play(n)
                        .into_iter()
                        .flat_map(|(f, k)| std::iter::repeat_n(f, k as usize))
                        .collect();
                    let k = plain.len().min(n as usize);
                    prop_assert_eq!(played, plain.drain(..k).collect::<Vec<_>>());
                }
                PlaybackOp::RemoveTurn(turn) => {
                    let before = plain.len();
                    plain.retain(|f| f.turn != turn);
                    prop_assert_eq!(runs.remove_turn(turn) as usize, before - plain.len());
                }
                PlaybackOp::Clear => {
                    prop_assert_eq!(runs.clear() as usize, plain.len());
                    plain.clear();
                }
            }
            prop_assert_eq!(runs.len(), plain.len());
            prop_assert_eq!(runs.is_empty(), plain.is_empty());
            prop_assert!(runs.iter().eq(plain.iter()));
            prop_assert_eq!(runs.front(), plain.first());
            for turn in TURNS {
                let of = plain.iter().filter(|f| f.turn == turn).count();
                prop_assert_eq!(runs.frames_of(turn) as usize, of);
                prop_assert_eq!(runs.holds(turn), of > 0);
            }
            let mut one_form = Playback::default();
            for f in &plain {
                one_form.push(f.clone(), 1);
            }
            prop_assert_eq!(&one_form, &runs);
            let listed: Vec<&(Frame, u32)> = runs.runs().collect();
            prop_assert!(listed.iter().all(|(_, n)| *n > 0));
            prop_assert!(listed.windows(2).all(|w| w[0].0 != w[1].0));
        }
        Ok(())
    });
    if let Err(e) = result {
        fail_with_seed(seed, "the playback buffer misbehaved", format!("{e}"));
    }
}

/// What a turn holds is bounded, and reaching a bound is a typed misuse that changes nothing:
/// the last child within the limit is taken, the next is refused with `LimitReached`.
#[test]
fn a_child_past_the_limit_is_refused_and_changes_nothing() {
    use turnfence_model::turn::{Misuse, MAX_CHILDREN};
    let mut m = text_turn_t_accepted();
    drain(&mut m);
    let spawn = |i: usize| {
        Input::new(
            0,
            InputKind::Spawn {
                turn: "t".into(),
                child: format!("lookup-{i:03}").into(),
                kind: ChildKind::Retrieval,
                need_ms: None,
                timeout_ms: None,
            },
        )
    };
    for i in 0..MAX_CHILDREN {
        m.handle(&spawn(i))
            .unwrap_or_else(|e| panic!("child {i}: {e}"));
        drain(&mut m);
    }
    let before = m.session().clone();
    assert_eq!(
        m.handle(&spawn(MAX_CHILDREN)),
        Err(Misuse::LimitReached {
            what: "children per turn",
            limit: MAX_CHILDREN
        })
    );
    assert!(drain(&mut m).is_empty());
    assert_eq!(m.session(), &before, "a refused spawn changed the session");
}

/// Under livekit-agents, speech counts as an interruption from the start the detector dates it
/// to, not from the moment it said so: speech said at 900 ms but dated to 300 ms has lasted the
/// 500 ms by 800, so the speaking reply pauses at once; the same speech undated pauses only once
/// 500 ms have passed since 900.
#[test]
fn speech_dated_earlier_counts_from_its_start() {
    use turnfence_model::turn::{Output, Profile};

    let reply = [
        r#"{"at":0,"input":"accept","turn":"t1","generation":1,"mode":"audio"}"#,
        r#"{"at":10,"input":"delta","turn":"t1","generation":1,"seq":1,"frames":5000}"#,
    ];
    let paused = [Output::PlaybackPaused { turn: "t1".into() }];
    let mut m = TurnMachine::with_profile(Profile::LivekitAgents);
    let dated = r#"{"at":900,"input":"speech_started","confidence":1.0,"since":300}"#;
    let inputs = [&reply[..], &[dated]].concat();
    assert_eq!(crate::last_outputs(&mut m, &inputs), paused);

    let mut m = TurnMachine::with_profile(Profile::LivekitAgents);
    let undated = r#"{"at":900,"input":"speech_started","confidence":1.0}"#;
    let inputs = [&reply[..], &[undated]].concat();
    assert_eq!(crate::last_outputs(&mut m, &inputs), []);
    let later = [r#"{"at":1399,"input":"tick"}"#];
    assert_eq!(crate::last_outputs(&mut m, &later), []);
    let due = [r#"{"at":1400,"input":"tick"}"#];
    assert_eq!(crate::last_outputs(&mut m, &due), paused);
}

/// A session's own interruption options replace LiveKit's defaults: with 1.2 s of speech needed
/// and a 3 s timeout, speech of 1 s pauses nothing; speech of 1.2 s pauses, and its resume comes
/// 3 s after the speech ended, not 2 s. With resuming off, counted speech interrupts at once:
/// the output is cleared and the reply cancelled, nothing paused.
#[test]
fn a_sessions_interruption_options_decide_its_pauses() {
    use turnfence_model::turn::{Interruption, Output, Profile, Terminal};

    let options = Interruption {
        min_ms: 1_200,
        false_timeout_ms: Some(3_000),
        resume: true,
    };
    let made = || TurnMachine::with_profile(Profile::LivekitAgents).with_interruption(options);
    let reply = [
        r#"{"at":0,"input":"accept","turn":"t1","generation":1,"mode":"audio"}"#,
        r#"{"at":10,"input":"delta","turn":"t1","generation":1,"seq":1,"frames":9000}"#,
        r#"{"at":100,"input":"speech_started","confidence":1.0}"#,
    ];
    let mut m = made();
    let short = [
        r#"{"at":1100,"input":"speech_stopped"}"#,
        r#"{"at":1400,"input":"tick"}"#,
    ];
    crate::last_outputs(&mut m, &[&reply[..], &short[..1]].concat());
    assert_eq!(crate::last_outputs(&mut m, &short[1..]), []);

    let mut m = made();
    let counted = [r#"{"at":1300,"input":"tick"}"#];
    let paused = [Output::PlaybackPaused { turn: "t1".into() }];
    assert_eq!(
        crate::last_outputs(&mut m, &[&reply[..], &counted].concat()),
        paused
    );
    let stopped = [
        r#"{"at":1500,"input":"speech_stopped"}"#,
        r#"{"at":4499,"input":"tick"}"#,
    ];
    assert_eq!(crate::last_outputs(&mut m, &stopped), []);
    let resumed = [Output::PlaybackResumed { turn: "t1".into() }];
    assert_eq!(
        crate::last_outputs(&mut m, &[r#"{"at":4500,"input":"tick"}"#]),
        resumed
    );

    let no_resume = Interruption {
        resume: false,
        ..options
    };
    let mut m = TurnMachine::with_profile(Profile::LivekitAgents).with_interruption(no_resume);
    let out = crate::last_outputs(&mut m, &[&reply[..], &counted].concat());
    assert!(!out.contains(&paused[0]), "{out:?}");
    assert!(
        out.contains(&Output::Terminal {
            turn: "t1".into(),
            state: Terminal::Cancelled
        }),
        "{out:?}"
    );
}
