//! The steps a LiveKit session takes that its events do not show, each with its place in
//! LiveKit's code: conformance looks for them before it reports (`Unlogged`).

use turnfence_model::turn::{Input, InputKind, TurnMachine};
use turnfence_model::Millis;

use crate::trace::conform::Unlogged;

/// The steps a LiveKit session takes that its events do not show.
pub const UNLOGGED: &[Unlogged<TurnMachine>] = &[Unlogged {
    what: "the app interrupts the speech in progress (`session.interrupt()`), or the session's \
           close does",
    source: "livekit-agents voice/agent_session.py `AgentSession.interrupt(force=...)` and \
             `_aclose_impl` (`activity.interrupt(force=True)`): no event; forced, a speech that \
             allows no interruption is interrupted too",
    inputs: app_interrupts,
}];

/// `session.interrupt()` (forced, as the close forces it): the reply still running is stopped.
/// Speech cutting a reply that allows no interruption, where LiveKit weighs the speech at that
/// instant, is not this step: the dialect shows that pause itself, for
/// `uninterruptible_output_survives` to judge.
fn app_interrupts(m: &TurnMachine, at: Millis) -> Vec<Vec<Input>> {
    m.session()
        .turns
        .iter()
        .filter(|t| t.phase.is_running())
        .map(|t| {
            vec![Input::new(
                at,
                InputKind::Stop {
                    turn: t.id.clone(),
                    request_id: format!("{}-interrupt", t.id),
                },
            )]
        })
        .collect()
}
