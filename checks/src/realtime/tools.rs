//! Function calls: a call the model made (`response.function_call_arguments.done`) is a tool
//! child of its response, answered by the `function_call_output` item the client creates; the
//! response's turn ends with its calls.

use turnfence_model::turn::{ChildKind, InputKind, Output};

use super::{Events, Line, Session};
use crate::trace::InputError;

impl Line<'_> {
    /// `response.function_call_arguments.done`: the model called a tool; the app runs it.
    pub(super) fn call(&self, s: &mut Session) -> Result<Events, InputError> {
        let turn = self.need_str(&["response_id"])?;
        let call = self
            .event
            .call_id
            .as_deref()
            .ok_or_else(|| self.error_at("response.function_call_arguments.done needs `call_id`"))?
            .to_owned();
        if s.out_of_band(&turn) {
            return Ok(Vec::new());
        }
        if !s.responses.contains_key(&turn) {
            return Err(self.error_at(format!(
                "a function call of response {turn:?}, which no response.created began"
            )));
        }
        s.calls.insert(call.clone(), turn.clone());
        let name = self.event.name.as_deref().unwrap_or_default().to_owned();
        Ok(vec![
            self.input(InputKind::Spawn {
                turn: turn.clone().into(),
                child: call.clone().into(),
                kind: ChildKind::Tool {
                    name,
                    cancellable: true,
                },
                need_ms: None,
            }),
            self.observed(
                Output::ChildStarted {
                    turn: turn.into(),
                    child: call.into(),
                },
                &[],
            ),
        ])
    }

    /// The client's `conversation.item.create`: a `function_call_output` answers its call (the
    /// call's end); the response's done, if it came while the calls ran, is
    /// observed once the last is answered. Other items have no turn semantics.
    pub(super) fn item_create(&self, s: &mut Session) -> Result<Events, InputError> {
        let Some(item) = self.event.item.as_ref() else {
            return Ok(Vec::new());
        };
        if item.kind.as_deref() != Some("function_call_output") {
            return Ok(Vec::new());
        }
        let call = item
            .call_id
            .as_deref()
            .ok_or_else(|| self.error_at("a function_call_output item needs `call_id`"))?;
        let Some(turn) = s.calls.remove(call) else {
            // A call this log never showed (made before it began, or out of band).
            return Ok(Vec::new());
        };
        let mut out = vec![self.input(InputKind::ChildCompleted {
            turn: turn.clone().into(),
            child: call.to_owned().into(),
        })];
        if !s.calls.values().any(|r| *r == turn) {
            if let Some((state, mut wildcards)) = s.ends.remove(&turn) {
                // Stopped while its calls ran (the user spoke over the call): it ends as the app
                // stopped it, whatever status its done gave.
                if self.stopped(&turn) {
                    wildcards = &["state"];
                }
                out.push(self.observed(
                    Output::Terminal {
                        turn: turn.into(),
                        state,
                    },
                    wildcards,
                ));
            }
        }
        Ok(out)
    }
}
