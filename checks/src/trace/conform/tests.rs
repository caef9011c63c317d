//! The conformance engine's own tests: what a session holds unshown, and the search for a
//! stack's unlogged steps.

use super::{Observed, Pending, SessionCheck, Unlogged};
use turnfence_model::turn::{Input, InputKind, Mode, Output, Profile, Terminal, TurnMachine};
use turnfence_model::Millis;

/// A stack's unlogged step for these tests: the app stops a running interruptible turn.
const STOPS: &[Unlogged<TurnMachine>] = &[Unlogged {
    what: "the app stops the turn",
    source: "a test",
    inputs: stops,
}];

fn stops(m: &TurnMachine, at: Millis) -> Vec<Vec<Input>> {
    m.session()
        .turns
        .iter()
        .filter(|t| t.interruptible && t.phase.is_running())
        .map(|t| {
            let request_id = format!("{}-app", t.id);
            vec![Input::new(
                at,
                InputKind::Stop {
                    turn: t.id.clone(),
                    request_id,
                },
            )]
        })
        .collect()
}

/// A speaking turn under a profile that pauses on speech, interruptible or not, then its end shown
/// cancelled with nothing in the log that stopped it: the findings, and the hidden steps
/// the search supplied.
fn cancelled_without_cause(
    interruptible: bool,
    unlogged: &'static [Unlogged<TurnMachine>],
) -> (Vec<String>, Vec<String>) {
    let machine = TurnMachine::with_profile(Profile::LivekitAgents);
    let mut s = SessionCheck::new("main", machine, &[], true, true).with_unlogged(unlogged);
    let kinds = [
        InputKind::Accept {
            turn: "t1".into(),
            generation: 1,
            mode: Mode::Audio,
            deadline_ms: None,
            budget: None,
            interruptible,
        },
        InputKind::Delta {
            turn: "t1".into(),
            generation: 1,
            seq: 1,
            text: None,
            frames: 1,
        },
    ];
    for (i, kind) in kinds.into_iter().enumerate() {
        s.advance(10 * i as Millis, i + 1).unwrap();
        s.input(Input::new(10 * i as Millis, kind), i + 1);
    }
    s.advance(500, 3).unwrap();
    let cancelled = Output::Terminal {
        turn: "t1".into(),
        state: Terminal::Cancelled,
    };
    s.output(&Observed::exact(cancelled.clone()), 500, 3);
    // Explained or not, the trace's end is what the session holds as shown, at its line.
    let shown = s.steps.iter().flat_map(|st| &st.outputs).any(|o| {
        o.output == cancelled && o.seen != super::Seen::Implicit && o.line == Some((3, 500))
    });
    assert!(shown, "the observed end is held as shown");
    let hidden = s.hidden_kept().to_vec();
    let found = s
        .finish(None)
        .iter()
        .map(|f| format!("{} at {}", f.name(), f.line))
        .collect();
    (found, hidden)
}

/// An end the machine gives only after a step the log does not show is explained by that
/// step, when the stack declares it and the machine takes it; the step is supplied once.
#[test]
fn an_output_is_explained_by_a_declared_unlogged_step() {
    let (found, hidden) = cancelled_without_cause(true, STOPS);
    assert_eq!(found, Vec::<String>::new());
    assert_eq!(hidden.len(), 1, "{hidden:?}");
    assert!(hidden[0].contains(r#""input":"stop""#), "{hidden:?}");
}

/// For this test: a stack that may send a turn's audio without a line.
const SENDS: &[Unlogged<TurnMachine>] = &[Unlogged {
    what: "the stack sends a frame of the turn",
    source: "a test",
    inputs: sends,
}];

fn sends(m: &TurnMachine, at: Millis) -> Vec<Vec<Input>> {
    m.session()
        .turns
        .iter()
        .filter(|t| t.phase.is_running())
        .map(|t| {
            let delta = InputKind::Delta {
                turn: t.id.clone(),
                generation: t.generation,
                seq: t.last_delivered_seq + 1,
                text: None,
                frames: 1,
            };
            vec![Input::new(at, delta)]
        })
        .collect()
}

/// A frame played with nothing to play: refused as it stands, taken once the declared step
/// (the stack sent a frame) is supplied before it, and played then; without the step, or with
/// a declared step that does not make the machine take it (a stop), a finding and no step
/// supplied.
#[test]
fn a_refused_input_is_explained_by_a_declared_unlogged_step() {
    for (unlogged, want) in [(SENDS, 0), (&[][..], 1), (STOPS, 1)] {
        let machine = TurnMachine::with_profile(Profile::LivekitAgents);
        let mut s = SessionCheck::new("main", machine, &[], true, true).with_unlogged(unlogged);
        let accept = InputKind::Accept {
            turn: "t1".into(),
            generation: 1,
            mode: Mode::Audio,
            deadline_ms: None,
            budget: None,
            interruptible: true,
        };
        s.input(Input::new(0, accept), 1);
        s.advance(100, 2).unwrap();
        s.input(Input::new(100, InputKind::FRAME_PLAYED), 2);
        // Taken, the frame the step sent was played: nothing is left to play.
        let left = s.machine().session().playback.frames_of("t1");
        assert_eq!(left, 0, "{unlogged:?}", unlogged = unlogged.len());
        let hidden = s.hidden_kept().len();
        let found: Vec<String> = s.finish(None).iter().map(|f| f.name().to_owned()).collect();
        assert_eq!((found.len(), hidden), (want, 1 - want), "{found:?}");
    }
}

/// No declared step, or one the machine does not take here (the turn lets nothing
/// interrupt it): the output is the finding it was.
#[test]
fn without_a_step_that_explains_it_the_output_is_a_finding() {
    for (interruptible, unlogged) in [(true, &[][..]), (false, STOPS)] {
        let (found, hidden) = cancelled_without_cause(interruptible, unlogged);
        assert_eq!(found, ["unexpected_output at 3"], "{interruptible}");
        assert_eq!(hidden, Vec::<String>::new());
    }
}

#[derive(Debug)]
enum Out {
    A,
    B,
}

/// What a session holds unshown (the count the limit judges) is the outputs the model gave
/// and the trace has not shown yet: up with each given, down with each shown, unchanged by a
/// place that holds none.
#[test]
fn the_outputs_held_unshown_are_counted_down_as_they_are_shown() {
    let mut p = Pending::<Out>::default();
    for step in 0..3 {
        p.push(&Out::A, (step, 0));
        p.push(&Out::B, (step, 1));
    }
    assert_eq!(p.len, 6);
    let a = std::mem::discriminant(&Out::A);
    assert_eq!(p.remove(&a, 1), Some((1, 0)));
    assert_eq!(p.len, 5);
    assert_eq!(p.remove(&a, 2), None);
    assert_eq!(p.len, 5);
    let b = std::mem::discriminant(&Out::B);
    while p.remove(&b, 0).is_some() {}
    assert_eq!(
        (p.remove(&a, 0), p.remove(&a, 0), p.len),
        (Some((0, 0)), Some((2, 0)), 0)
    );
}
