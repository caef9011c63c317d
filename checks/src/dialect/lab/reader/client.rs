//! The `client` and its `transport`: a stop request, events received, acknowledged, ignored as
//! duplicates and rendered, and the connection dropping and resuming.

use turnfence_model::turn::{InputKind, Output};

use super::context::{Line, Memory, Out};
use crate::trace::turn_facts::Fact;
use crate::trace::InputError;

/// `client turn.cancel`: the client asks to stop the turn; the answers may leave its request id
/// out, so the reader remembers it.
pub(super) fn stop(x: &Line, o: &mut Out, m: &mut Memory) -> Result<(), InputError> {
    let d = &x.d;
    let turn = x.turn();
    d.only(&["request_id", "reason", "attempt"])?;
    let request_id = d.need_str("request_id")?;
    m.last_stop.push((turn.clone(), request_id.clone()));
    o.input(InputKind::Stop {
        turn: turn.into(),
        request_id,
    });
    Ok(())
}

/// `client event.acked`: the client acknowledged every event up to `seq`.
pub(super) fn acked(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let d = x.only(&["seq"])?;
    let seq = d.need_u64("seq")?;
    // The lab acks without logging the receipt: the client took the events in first.
    for s in x.view.received() + 1..=seq {
        o.input(InputKind::ClientReceive { seq: s });
    }
    o.input(InputKind::ClientAck { seq });
    Ok(())
}

/// `client event.received`: the transport handed the client an event.
pub(super) fn received(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let d = x.only(&["seq"])?;
    o.input(InputKind::ClientReceive {
        seq: d.need_u64("seq")?,
    });
    Ok(())
}

/// `client duplicate.ignored`: the client saw an event again and ignored it.
pub(super) fn duplicate_ignored(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let d = x.only(&["seq"])?;
    o.exact(Output::DuplicateIgnored {
        seq: d.need_u64("seq")?,
    });
    Ok(())
}

/// `client render.completed`: the client rendered the turn's text.
pub(super) fn rendered(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let (turn, text) = x.turn_and("text")?;
    o.exact(Output::Rendered {
        turn: turn.into(),
        text,
    });
    Ok(())
}

/// `transport disconnected`: the client's connection dropped.
pub(super) fn disconnected(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    x.d.only(&["last_acked_seq"])?;
    o.input(InputKind::Disconnect);
    if let Some(seq) = x.d.u64("last_acked_seq")? {
        o.fact(Fact::LastAckedSeq { seq });
    }
    Ok(())
}

/// `transport resume`: the client reconnected, asking for every event after `after_seq`.
pub(super) fn resume(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    let d = x.only(&["after_seq", "token"])?;
    o.input(InputKind::Resume {
        after_seq: d.need_u64("after_seq")?,
    });
    Ok(())
}
