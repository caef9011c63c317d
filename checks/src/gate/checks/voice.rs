//! Barge-in (`voice_barge_in`): the audible output is cleared, the old generation is fenced, and
//! the new turn continues.

use turnfence_model::turn::{InputKind, Invariant, Output, Terminal};
use turnfence_model::Millis;

use super::facts::Facts;
use super::{late_delivery_check, seqs, terminal_label, Checks};

/// `voice_barge_in`: the buffered audio is cleared, the old generation is fenced, and the new
/// turn continues.
pub(super) fn voice_barge_in(c: &mut Checks, f: &Facts, turn: &str) {
    let (_, generation, _) = f.accept(turn).unwrap_or((0, 0, None));
    let fenced = f.outputs().find_map(|(at, o)| match o {
        Output::GenerationFenced { generation: g, .. } if *g == generation => Some(at),
        _ => None,
    });
    let fence_at = fenced.unwrap_or(Millis::MAX);
    let cleared = f.outputs().find_map(|(at, o)| match o {
        Output::PlaybackCleared { turn: t, frames } if t == turn && at == fence_at => Some(*frames),
        _ => None,
    });
    let old_played = f
        .outputs()
        .filter(|(at, o)| matches!(o, Output::Played { generation: g, .. } if *g == generation && *at >= fence_at))
        .count();
    let ok = cleared.is_some_and(|n| n > 0) && old_played == 0;
    let actual = match cleared {
        Some(n) if old_played == 0 => format!("{n} frames cleared"),
        Some(n) => format!("{n} frames cleared, {old_played} old frames played after"),
        None => format!("not cleared, {old_played} old frames played after"),
    };
    c.add(
        "audible-output-cleared",
        "buffer cleared".into(),
        ok,
        actual,
        &[Invariant::NoLateDelivery],
    );

    let expected = format!("generation {generation} blocked");
    if fenced.is_none() {
        c.add(
            "old-generation-fenced",
            expected,
            false,
            "not fenced".into(),
            &[Invariant::NoLateDelivery],
        );
    } else {
        let dropped = f.dropped_after(turn, fence_at);
        let actual = seqs("late ", &dropped, "dropped");
        late_delivery_check(
            c,
            f,
            turn,
            "old-generation-fenced",
            expected,
            fence_at,
            Some(actual),
        );
    }

    new_turn_continues(c, f, generation, fence_at);
}

/// The turn that takes the next generation after the fence completes.
fn new_turn_continues(c: &mut Checks, f: &Facts, generation: u64, fence_at: Millis) {
    let successor = f.inputs().find_map(|(at, k)| match k {
        InputKind::Accept {
            turn: t,
            generation: g,
            ..
        } if *g == generation.saturating_add(1) && at >= fence_at => Some(t.clone()),
        _ => None,
    });
    let guards = [Invariant::SingleRunningTurn, Invariant::OneTerminalState];
    let expected = format!("generation {} completes", generation.saturating_add(1));
    match successor {
        Some(next) => {
            let terminals = f.terminals(&next);
            let ok = matches!(terminals.as_slice(), [(_, Terminal::Completed)]);
            let actual = terminal_label(&terminals);
            c.add("new-turn-continues", expected, ok, actual, &guards);
        }
        None => c.add(
            "new-turn-continues",
            expected,
            false,
            "no successor turn".into(),
            &guards,
        ),
    }
}
