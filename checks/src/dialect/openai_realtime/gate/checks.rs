//! The `openai-realtime` scenarios' checks: what speech clears and truncates (during a reply and
//! after it is done), a create while a cancelled response unwinds, a cancel for a response that is
//! done. Audio is counted in frames, a millisecond each under this profile; every count is read
//! off the run's steps (what was delivered, played, cleared, truncated before or after a step),
//! never written down.

use std::ops::Range;

use turnfence_model::turn::{InputKind, Invariant, Output, RefuseReason, StopAnswer, Terminal};
use turnfence_model::Millis;

use crate::gate::checks::{labels, terminal_label, Checks, Facts};

/// The index of the first step whose input matches.
fn step_of(f: &Facts, found: impl Fn(&InputKind) -> bool) -> Option<usize> {
    f.run.steps.iter().position(|s| found(&s.input.kind))
}

/// The index of the first step that emitted a matching output.
fn output_step(f: &Facts, found: impl Fn(&Output) -> bool) -> Option<usize> {
    f.run
        .steps
        .iter()
        .position(|s| s.outputs.iter().any(&found))
}

/// The step of the first stop naming `turn`.
fn stop_step(f: &Facts, turn: &str) -> Option<usize> {
    step_of(
        f,
        |k| matches!(k, InputKind::Stop { turn: t, .. } if t == turn),
    )
}

/// The step `turn` ended at (its first terminal state).
fn terminal_step(f: &Facts, turn: &str) -> Option<usize> {
    output_step(
        f,
        |o| matches!(o, Output::Terminal { turn: t, .. } if t == turn),
    )
}

fn at(f: &Facts, step: usize) -> Millis {
    f.run.steps.get(step).map_or(0, |s| s.input.at)
}

/// The frames of `turn`'s deltas the gate let through in `steps`.
fn delivered_frames(f: &Facts, turn: &str, steps: Range<usize>) -> u32 {
    let steps = f.run.steps.get(steps).unwrap_or_default();
    steps
        .iter()
        .filter_map(|s| match &s.input.kind {
            InputKind::Delta {
                turn: t,
                seq,
                frames,
                ..
            } if t == turn
                && s.outputs.iter().any(
                    |o| matches!(o, Output::Delivered { turn: d, seq: q, .. } if d == turn && q == seq),
                ) =>
            {
                Some(*frames)
            }
            _ => None,
        })
        .sum()
}

/// The frames of `turn` the speaker played in `steps`.
fn played_frames(f: &Facts, turn: &str, steps: Range<usize>) -> u32 {
    outputs_in(f, steps)
        .filter_map(|o| match o {
            Output::Played {
                turn: t, frames, ..
            } if t == turn => Some(*frames),
            _ => None,
        })
        .sum()
}

fn outputs_in<'a>(f: &Facts<'a>, steps: Range<usize>) -> impl Iterator<Item = &'a Output> + 'a {
    f.run
        .steps
        .get(steps)
        .unwrap_or_default()
        .iter()
        .flat_map(|s| &s.outputs)
}

/// What one step did to a turn's audio: frames cleared, the truncation's `heard`.
fn cut_in(f: &Facts, turn: &str, step: usize) -> (u32, Option<u32>) {
    let mut cleared = 0;
    let mut heard = None;
    for o in outputs_in(f, step..step + 1) {
        match o {
            Output::PlaybackCleared { turn: t, frames } if t == turn => cleared += frames,
            Output::Truncated {
                turn: t, heard: h, ..
            } if t == turn => heard = Some(*h),
            _ => {}
        }
    }
    (cleared, heard)
}

/// The first speech in the run.
fn speech_step(f: &Facts) -> Option<usize> {
    step_of(f, |k| matches!(k, InputKind::SpeechStarted { .. }))
}

/// The checks of the scenario `name`, measured on the run's facts, about its turn.
pub(super) fn checks(name: &str, c: &mut Checks, f: &Facts, turn: &str) {
    match name {
        "realtime_barge_in_truncates" => barge_in_truncates(c, f, turn),
        "realtime_interrupt_after_done" => interrupt_after_done(c, f, turn),
        "realtime_cancel_then_create" => cancel_then_create(c, f, turn),
        "realtime_stale_cancel" => stale_cancel(c, f, turn),
        _ => {}
    }
}

/// `realtime_barge_in_truncates`: speech mid-reply clears what is queued, truncates the response
/// to what played, and cancels it.
fn barge_in_truncates(c: &mut Checks, f: &Facts, turn: &str) {
    let Some(speech) = speech_step(f) else {
        return no_speech(
            c,
            &[
                "queued-audio-cleared",
                "truncated-to-heard",
                "interrupted-response-cancelled",
            ],
        );
    };
    queued_audio_cleared(c, f, turn, speech, "queued-audio-cleared", None);
    truncated_to_played(c, f, turn, speech, "truncated-to-heard");

    let speech_at = at(f, speech);
    let terminals = f.terminals(turn);
    let delivered = f.delivered_after(turn, speech_at);
    let dropped = f.dropped_after(turn, speech_at);
    let ok = matches!(terminals.as_slice(), [(t, Terminal::Cancelled)] if *t >= speech_at)
        && delivered.is_empty();
    let actual = match terminals.as_slice() {
        [(t, Terminal::Cancelled)] if *t >= speech_at => {
            let mut a = format!(
                "cancelled {}ms after the speech",
                t.saturating_sub(speech_at)
            );
            if !delivered.is_empty() {
                a.push_str(&format!(", {} delivered after", deltas(delivered.len())));
            } else if !dropped.is_empty() {
                a.push_str(&format!(", {} dropped late", deltas(dropped.len())));
            }
            a
        }
        other => labels(other),
    };
    c.add(
        "interrupted-response-cancelled",
        "cancelled once, nothing delivered after the speech".into(),
        ok,
        actual,
        &[
            Invariant::OneTerminalState,
            Invariant::NoLateDelivery,
            Invariant::CancelTreeDrained,
        ],
    );
}

/// `realtime_interrupt_after_done`: speech after the response is done, its audio still queued
/// downstream, clears and truncates all the same; nothing of it plays after.
fn interrupt_after_done(c: &mut Checks, f: &Facts, turn: &str) {
    let Some(speech) = speech_step(f) else {
        return no_speech(
            c,
            &[
                "cleared-after-done",
                "truncated-after-done",
                "cut-audio-silenced",
            ],
        );
    };
    let done = terminal_step(f, turn);
    queued_audio_cleared(c, f, turn, speech, "cleared-after-done", Some(done));
    truncated_to_played(c, f, turn, speech, "truncated-after-done");

    let after = speech + 1..f.run.steps.len();
    let cut_played = played_frames(f, turn, after.clone());
    let others_played: u32 = outputs_in(f, after)
        .filter_map(|o| match o {
            Output::Played {
                turn: t, frames, ..
            } if t != turn => Some(*frames),
            _ => None,
        })
        .sum();
    let terminals = f.terminals(turn);
    let ok = cut_played == 0 && others_played > 0 && terminals.len() == 1;
    let actual = format!(
        "{cut_played} frames of it played after, {others_played} of the next; it ended {}",
        terminal_label(&terminals)
    );
    c.add(
        "cut-audio-silenced",
        "none of its frames played after the speech, the next response's played; one terminal"
            .into(),
        ok,
        actual,
        &[Invariant::NoLateDelivery, Invariant::OneTerminalState],
    );
}

fn deltas(n: usize) -> String {
    if n == 1 {
        "1 delta".to_owned()
    } else {
        format!("{n} deltas")
    }
}

/// Every check of a scenario whose script has no speech fails, saying so.
fn no_speech(c: &mut Checks, names: &[&'static str]) {
    for name in names {
        c.add(
            name,
            "speech in the run".into(),
            false,
            "no speech".into(),
            &[],
        );
    }
}

/// At the speech, the frames of `turn` delivered and not yet played are all cleared. With
/// `done`, the step the turn ended at, the turn must have ended before the speech.
fn queued_audio_cleared(
    c: &mut Checks,
    f: &Facts,
    turn: &str,
    speech: usize,
    name: &'static str,
    done: Option<Option<usize>>,
) {
    let queued =
        delivered_frames(f, turn, 0..speech).saturating_sub(played_frames(f, turn, 0..speech));
    let (cleared, _) = cut_in(f, turn, speech);
    let mut ok = queued > 0 && cleared == queued;
    let mut actual = format!("{cleared} frames cleared");
    let mut expected = format!("the {queued} frames still queued cleared");
    if let Some(done) = done {
        expected.push_str(", the response done before");
        match done {
            Some(d) if d < speech => {
                actual.push_str(&format!(
                    ", {}ms after the response was done",
                    at(f, speech).saturating_sub(at(f, d))
                ));
            }
            _ => {
                ok = false;
                actual.push_str(", the response not done before the speech");
            }
        }
    }
    c.add(
        name,
        expected,
        ok,
        actual,
        &[Invariant::TruncatedToHeard, Invariant::NoLateDelivery],
    );
}

/// At the speech, `turn` is truncated to the frames it played before it.
fn truncated_to_played(c: &mut Checks, f: &Facts, turn: &str, speech: usize, name: &'static str) {
    let played = played_frames(f, turn, 0..speech);
    let delivered = delivered_frames(f, turn, 0..speech);
    let (_, heard) = cut_in(f, turn, speech);
    let ok = heard == Some(played) && played < delivered;
    let actual = match heard {
        Some(h) => format!("truncated to {h} of {delivered} frames"),
        None => format!("not truncated ({delivered} frames delivered)"),
    };
    c.add(
        name,
        format!("truncated to the {played} frames played"),
        ok,
        actual,
        &[Invariant::TruncatedToHeard],
    );
}

/// `realtime_cancel_then_create`: a create while the cancelled response unwinds is refused; the
/// cancel is acknowledged by the response's own end; a create after it is accepted.
fn cancel_then_create(c: &mut Checks, f: &Facts, turn: &str) {
    let n = f.run.steps.len();
    let stop = stop_step(f, turn);
    let done = terminal_step(f, turn);
    let creates = |steps: Range<usize>| -> Vec<(String, bool)> {
        (steps)
            .filter_map(|i| {
                let s = &f.run.steps[i];
                let InputKind::Accept { turn: t, .. } = &s.input.kind else {
                    return None;
                };
                let refused = s.outputs.iter().any(|o| {
                    matches!(o, Output::TurnRefused { turn: r, reason: RefuseReason::ActiveTurnExists } if r == t)
                });
                Some((t.to_string(), refused))
            })
            .collect()
    };

    let window = stop.map_or(n..n, |s| s + 1..done.unwrap_or(n).max(s + 1));
    let during = creates(window);
    let refused = during.iter().filter(|(_, r)| *r).count();
    let actual = if during.is_empty() {
        "no create while the cancelled response unwound".to_owned()
    } else {
        format!("{refused} of {} refused", during.len())
    };
    c.add(
        "create-refused-while-cancelling",
        "every create before the cancelled response's end refused (active_turn_exists)".into(),
        !during.is_empty() && refused == during.len(),
        actual,
        &[Invariant::OneActiveResponse],
    );

    cancel_acknowledged_by_done(c, f, turn, stop, done);

    let next = done.map(|d| creates(d + 1..n)).unwrap_or_default();
    let expected = "the first create after its end accepted, and completed".to_owned();
    let guards = [
        Invariant::OneActiveResponse,
        Invariant::SingleRunningTurn,
        Invariant::OneTerminalState,
    ];
    match next.first() {
        Some((next, false)) => {
            let terminals = f.terminals(next);
            let ok = matches!(terminals.as_slice(), [(_, Terminal::Completed)]);
            let actual = format!("{next} accepted, {}", terminal_label(&terminals));
            c.add("create-accepted-after-done", expected, ok, actual, &guards);
        }
        Some((next, true)) => c.add(
            "create-accepted-after-done",
            expected,
            false,
            format!("{next} refused"),
            &guards,
        ),
        None => c.add(
            "create-accepted-after-done",
            expected,
            false,
            "no create after its end".into(),
            &guards,
        ),
    }
}

/// The stop is answered `requested`, and the response ends `cancelled` once, in the step its
/// last child stopped — not at the stop.
fn cancel_acknowledged_by_done(
    c: &mut Checks,
    f: &Facts,
    turn: &str,
    stop: Option<usize>,
    done: Option<usize>,
) {
    let answers = f.answers(turn);
    let terminals = f.terminals(turn);
    let child_stopped_then = done.is_some_and(|d| {
        outputs_in(f, d..d + 1)
            .any(|o| matches!(o, Output::ChildCancelled { turn: t, .. } if t == turn))
    });
    let ok = answers == [StopAnswer::Requested]
        && matches!(terminals.as_slice(), [(_, Terminal::Cancelled)])
        && child_stopped_then
        && stop.zip(done).is_some_and(|(s, d)| d > s);
    let actual = match (stop, done, terminals.as_slice()) {
        (Some(s), Some(d), [(_, state)]) if d > s => format!(
            "{} {}ms after the cancel{}",
            state.label(),
            at(f, d).saturating_sub(at(f, s)),
            if child_stopped_then {
                ", as its stream stopped"
            } else {
                ""
            }
        ),
        (Some(s), Some(d), [(_, state)]) if d == s => format!("{} at the cancel", state.label()),
        _ => labels(&terminals),
    };
    c.add(
        "cancel-acknowledged-by-done",
        "requested, then cancelled once, when its stream stopped".into(),
        ok,
        actual,
        &[Invariant::CancelTreeDrained, Invariant::OneTerminalState],
    );
}

/// `realtime_stale_cancel`: a cancel naming a response that is done is answered for it and
/// leaves the response running now alone.
fn stale_cancel(c: &mut Checks, f: &Facts, turn: &str) {
    let n = f.run.steps.len();
    let stop = stop_step(f, turn);
    let done = terminal_step(f, turn);
    let terminals = f.terminals(turn);
    let answers = f.answers(turn);
    let stale = stop.zip(done).is_some_and(|(s, d)| d < s);
    let ok = stale
        && matches!((answers.as_slice(), terminals.as_slice()),
            ([StopAnswer::AlreadyTerminal { state }], [(_, t)]) if state == t);
    let actual = match answers.as_slice() {
        _ if !stale => "the cancel did not come after the response was done".to_owned(),
        [StopAnswer::AlreadyTerminal { state }] => format!("already {}", state.label()),
        [StopAnswer::Requested] => "requested".to_owned(),
        [StopAnswer::AlreadyRequested] => "already requested".to_owned(),
        other => format!("{} answers", other.len()),
    };
    c.add(
        "stale-cancel-answered",
        format!("already {}", terminal_label(&terminals)),
        ok,
        actual,
        &[Invariant::IdempotentStop, Invariant::OneTerminalState],
    );

    // The response running when the cancel came: accepted before it, not ended by then.
    let successor = stop.and_then(|s| {
        f.run.steps[..s].iter().find_map(|st| match &st.input.kind {
            InputKind::Accept { turn: t, .. }
                if t != turn
                    && !st
                        .outputs
                        .iter()
                        .any(|o| matches!(o, Output::TurnRefused { .. }))
                    && terminal_step(f, t).is_none_or(|e| e >= s) =>
            {
                Some(t.to_string())
            }
            _ => None,
        })
    });
    let Some((stop, next)) = stop.zip(successor) else {
        for name in ["successor-untouched", "successor-completes"] {
            c.add(
                name,
                "a response running when the stale cancel came".into(),
                false,
                "none".into(),
                &[Invariant::CancelTargetsItsResponse],
            );
        }
        return;
    };
    successor_untouched(c, f, turn, stop, &next);
    successor_completes(c, f, &next, stop, n);
}

/// In the stale cancel's step, no cancel effect lands on another response.
fn successor_untouched(c: &mut Checks, f: &Facts, turn: &str, stop: usize, next: &str) {
    let effects: Vec<&str> = outputs_in(f, stop..stop + 1)
        .filter_map(|o| match o {
            Output::ChildCancelRequested { turn: t, .. } => Some((t, "child_cancel_requested")),
            Output::ChildCancelled { turn: t, .. } => Some((t, "child_cancelled")),
            Output::PlaybackCleared { turn: t, .. } => Some((t, "playback_cleared")),
            Output::Truncated { turn: t, .. } => Some((t, "truncated")),
            Output::GenerationFenced { turn: t, .. } => Some((t, "generation_fenced")),
            Output::Terminal { turn: t, .. } => Some((t, "terminal")),
            _ => None,
        })
        .filter(|(t, _)| *t != turn)
        .map(|(_, e)| e)
        .collect();
    let actual = if effects.is_empty() {
        format!("nothing done to {next}")
    } else {
        format!("{next}: {}", effects.join(", "))
    };
    c.add(
        "successor-untouched",
        format!("nothing done to {next}"),
        effects.is_empty(),
        actual,
        &[Invariant::CancelTargetsItsResponse],
    );
}

/// The response running at the stale cancel ends `completed`, every delta after the cancel
/// delivered and none of its audio cleared.
fn successor_completes(c: &mut Checks, f: &Facts, next: &str, stop: usize, n: usize) {
    let terminals = f.terminals(next);
    let dropped = f.dropped_after(next, at(f, stop)).len();
    let cleared: u32 = outputs_in(f, stop..n)
        .filter_map(|o| match o {
            Output::PlaybackCleared { turn: t, frames } if t == next => Some(*frames),
            _ => None,
        })
        .sum();
    let delivered = delivered_frames(f, next, stop..n);
    let ok = matches!(terminals.as_slice(), [(_, Terminal::Completed)])
        && dropped == 0
        && cleared == 0
        && delivered > 0;
    let actual = format!(
        "{}, {delivered} frames delivered after the cancel, {} dropped, {cleared} frames cleared",
        terminal_label(&terminals),
        deltas(dropped)
    );
    c.add(
        "successor-completes",
        "completed, its audio delivered, nothing dropped or cleared".into(),
        ok,
        actual,
        &[Invariant::OneTerminalState, Invariant::NoLateDelivery],
    );
}

#[cfg(test)]
mod tests {
    use turnfence_model::turn::{Profile, TurnMachine};

    use super::*;
    use crate::gate::run_scenario;

    /// A response done before the cancel naming it was not ended by that cancel: the check tells
    /// its state alone, never "at the cancel" nor "after the cancel".
    #[test]
    fn a_done_before_the_cancel_is_told_as_its_state_alone() {
        let scenario = super::super::scenarios::scenario("realtime_stale_cancel").unwrap();
        let run = run_scenario(
            &scenario,
            TurnMachine::with_profile(Profile::OpenaiRealtime),
        );
        let f = Facts { run: &run };
        let (stop, done) = (stop_step(&f, "resp-007"), terminal_step(&f, "resp-007"));
        assert!(
            done.zip(stop).is_some_and(|(d, s)| d < s),
            "{done:?} {stop:?}"
        );
        let mut c = Checks::new(&run);
        cancel_acknowledged_by_done(&mut c, &f, "resp-007", stop, done);
        let checks = c.finish();
        assert_eq!(checks.len(), 1);
        assert!(!checks[0].passed);
        assert_eq!(checks[0].actual, "COMPLETED x1");
    }

    /// A cancel with no create while the response it names unwinds (here the response was done
    /// before it) shows nothing of the rule the check states: it does not pass.
    #[test]
    fn no_create_while_the_response_unwinds_does_not_pass() {
        let scenario = super::super::scenarios::scenario("realtime_stale_cancel").unwrap();
        let run = run_scenario(
            &scenario,
            TurnMachine::with_profile(Profile::OpenaiRealtime),
        );
        let mut c = Checks::new(&run);
        cancel_then_create(&mut c, &Facts { run: &run }, "resp-007");
        let checks = c.finish();
        let refused = checks
            .iter()
            .find(|c| c.name == "create-refused-while-cancelling")
            .unwrap();
        assert!(!refused.passed);
        assert_eq!(
            refused.actual,
            "no create while the cancelled response unwound"
        );
    }
}
