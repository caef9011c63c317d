//! Time passing: the `budget`, `adapter` and `clock` lines the model knows only as time moving
//! on, and the `deadline` firing.

use turnfence_model::turn::{InputKind, Output};

use super::context::{Line, Memory, Out};
use crate::trace::turn_facts::{Fact, TurnFact};
use crate::trace::InputError;

/// `budget allocated`: folded into the accept before it (see `fold_budgets`); time passes.
pub(super) fn budget_allocated(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    x.d.only(&["retrieval_ms", "model_ms", "reserve_ms"])?;
    o.input(InputKind::Tick);
    Ok(())
}

/// `budget nearly_exhausted`, `adapter response.cancel`, `clock tick`: time passes.
pub(super) fn passes(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    x.d.only(&["remaining_ms", "target_generation"])?;
    o.input(InputKind::Tick);
    o.stated(&x.turn(), x.d.u64("remaining_ms")?, TurnFact::RemainingMs);
    if let Some(generation) = x.d.u64("target_generation")? {
        o.fact(Fact::CancelTargets { generation });
    }
    Ok(())
}

/// `deadline exceeded`: time passes to the deadline, which fires.
pub(super) fn deadline_exceeded(x: &Line, o: &mut Out, _: &mut Memory) -> Result<(), InputError> {
    x.d.only(&["source"])?;
    o.input(InputKind::Tick);
    o.exact(Output::DeadlineExceeded {
        turn: x.turn().into(),
    });
    Ok(())
}
