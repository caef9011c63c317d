//! The turn machine's footprints: what an input reads and writes of a turn state, for sleep sets
//! (`sleep`).

use turnfence_model::turn::{Flaw, Input, InputKind, TurnMachine};
use turnfence_model::Plant;

use super::sleep::Footprint;

/// What an input reads and writes of a turn state. Each turn's own parts are its header (phase,
/// model done, deadline), the place where its next child goes, and each child; everything else —
/// the session's clock, generations, store, playback, client, pause, and what the alphabet reads
/// of them — is one part. An input that names a turn touches its turn's parts alone when it
/// cannot end the turn, end a child, move the clock or change what is stored or played: a spawn
/// (reads the header, writes the next child's place); a commit sent (writes its child); a
/// checkpoint that keeps work (its turn running, its child not asked to cancel), a child's end,
/// its result or a commit's while its turn runs and the model is not done (so the turn does not
/// settle), and any report about a child of a turn that has ended (it is ignored, and said so):
/// these read the header and write their child. A stop of a turn that has ended is answered
/// and changes nothing else: it writes the header. Every other input touches everything.
pub(super) fn footprint(m: &TurnMachine<impl Plant<Flaw>>, input: &Input) -> Footprint {
    let s = m.session();
    if input.at != s.now {
        return Footprint::ALL;
    }
    let Some(place) = input
        .turn()
        .and_then(|t| s.turns.iter().position(|x| x.id == t))
        .filter(|&place| place < PARTS_TURNS)
    else {
        return Footprint::ALL;
    };
    let t = &s.turns[place];
    let header = 1 << (1 + PARTS_PER_TURN * place);
    let next_child = header << 1;
    let child = |c: &str| {
        let j = t.children.iter().position(|x| x.id == c)?;
        (j < PARTS_PER_TURN - 2).then(|| header << (2 + j))
    };
    let running = t.phase.is_running();
    let ended = t.phase.is_terminal();
    let written = match &input.kind {
        InputKind::Spawn { .. } => Some(next_child),
        InputKind::CommitSent { child: c, .. } => child(c),
        InputKind::Checkpoint { child: c, .. }
            if ended || running && t.child(c).is_some_and(|x| !x.cancel_requested) =>
        {
            child(c)
        }
        InputKind::ChildCompleted { child: c, .. }
        | InputKind::ChildFailed { child: c, .. }
        | InputKind::CommitAcked { child: c, .. }
        | InputKind::CommitFailed { child: c, .. }
            if ended || running && !t.model_done =>
        {
            child(c)
        }
        InputKind::Stop { .. } if ended => Some(header),
        _ => None,
    };
    written.map_or(Footprint::ALL, |w| Footprint::new(header, w))
}

/// How many turns have parts of their own in a footprint, and how many parts each has (its
/// header, its next child's place, and its first children): one bit each, beside the session's.
const PARTS_TURNS: usize = 7;
const PARTS_PER_TURN: usize = 9;
