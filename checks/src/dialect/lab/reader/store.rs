//! The `stream-store`: events persisted, the replay after a resume, and a resume it refuses.

use turnfence_model::turn::Output;

use super::context::{Line, Memory, Out};
use super::detail::from_name;
use crate::trace::InputError;

/// `stream-store event.persisted`: an event stored with its seq (and text, unless the lab left it
/// out and the reader could not infer it from the final render).
pub(super) fn persisted(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let d = x.only(&["seq", "text", "delivered", "terminal"])?;
    let terminal = d.bool("terminal")?.unwrap_or(false);
    let text = d.str("text")?;
    o.exact(Output::Persisted {
        turn: x.turn().into(),
        seq: d.need_u64("seq")?,
        text,
        terminal,
    });
    Ok(())
}

/// `stream-store replay`: the events `FROM..TO` replayed after a resume.
pub(super) fn replay(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let d = x.only(&["seq_range"])?;
    let range = d.need_str("seq_range")?;
    let (from, to) = range
        .split_once("..")
        .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
        .ok_or_else(|| InputError::at(x.line, format!("seq_range {range:?} is not FROM..TO")))?;
    o.exact(Output::Replayed { from, to });
    Ok(())
}

/// `stream-store resume.refused`: a resume the store refused, and why.
pub(super) fn resume_refused(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let d = x.only(&["after_seq", "reason"])?;
    let reason = from_name(&d.need_str("reason")?, x.line)?;
    o.exact(Output::ResumeRefused {
        after_seq: d.need_u64("after_seq")?,
        reason,
    });
    Ok(())
}
