//! Function calls: started by an LLM response (`FunctionCallsStartedFrame`), in progress, and
//! answered once — by their result (`FunctionCallResultFrame`) or their cancellation
//! (`FunctionCallCancelFrame`: an interruption's, or the call's timeout).

use turnfence_model::turn::state::{Child, ChildState};
use turnfence_model::turn::{ChildKind, ToolAnswer};

use super::*;
use crate::trace::turn_facts::Fact;

impl Line<'_> {
    /// `FunctionCallsStartedFrame`: the response in progress starts its calls — each a tool
    /// child, cancellable unless its tool was registered `cancel_on_interruption=False`, with its
    /// timeout where one is set (the meta line's `options.tools`, else Pipecat's defaults).
    pub(super) fn calls_started(&self, s: &mut Pipecat) -> Result<Events, InputError> {
        let mut out = Vec::new();
        for c in &self.f.calls {
            let id = c.tool_call_id.clone().ok_or_else(|| {
                self.error("FunctionCallsStartedFrame: each call needs `tool_call_id`")
            })?;
            let name = c.function_name.clone().unwrap_or_default();
            out.extend(self.start_call(s, &id, &name)?);
        }
        Ok(out)
    }

    fn start_call(&self, s: &mut Pipecat, id: &str, name: &str) -> Result<Events, InputError> {
        if s.calls.contains_key(id) {
            return Ok(Vec::new());
        }
        let Some(r) = s.response.or(s.last_response) else {
            return Err(self.error("a function call before any LLM response: no response made it"));
        };
        let tool = s.options.tool(name);
        s.calls
            .insert(id.to_owned(), (r, tool.cancel_on_interruption));
        let mut out = self.accept(s, r);
        let turn = s.replies[r].id.clone();
        out.extend([
            self.input(InputKind::Spawn {
                turn: turn.clone().into(),
                child: id.to_owned().into(),
                kind: ChildKind::Tool {
                    name: name.to_owned(),
                    cancellable: tool.cancel_on_interruption,
                },
                need_ms: None,
                timeout_ms: s.options.timeout_of(name),
            }),
            self.observed(Output::ChildStarted {
                turn: turn.into(),
                child: id.to_owned().into(),
            }),
        ]);
        Ok(out)
    }

    /// `FunctionCallInProgressFrame`: the call runs (started here if no
    /// `FunctionCallsStartedFrame` named it). The `cancel_on_interruption` it states is the
    /// one its call was started with.
    pub(super) fn call_in_progress(&self, s: &mut Pipecat) -> Result<Events, InputError> {
        let id = self.call_id("FunctionCallInProgressFrame")?;
        let name = self.f.function_name.clone().unwrap_or_default();
        let out = self.start_call(s, &id, &name)?;
        let spawned = s.calls.get(&id).map(|(_, c)| *c);
        if let (Some(stated), Some(spawned)) = (self.f.cancel_on_interruption, spawned) {
            if stated != spawned {
                return Err(self.error(&format!(
                    "call {id} runs with cancel_on_interruption={stated}, but the meta line's options.tools.{name}.cancel_on_interruption is {spawned}: state the tool as it was registered"
                )));
            }
        }
        Ok(out)
    }

    /// `FunctionCallResultFrame`: the call's result, taken into the context — its answer. A
    /// result of a call the interruption asked to stop (and that never stopped) is a side
    /// effect the cancelled call left, stated as such.
    ///
    /// A result with `is_final: false` is the call's progress (1.x, an async call's
    /// `FunctionCallResultProperties(is_final=False)`): it settles nothing, clears no timeout,
    /// and the call runs on (`LLMService._run_function_call`'s result callback), so one of a
    /// call still running is no answer. One of a call already settled, which Pipecat rejects,
    /// is read as an answer: the model judges it.
    ///
    /// A final result logged in the very millisecond its call's timeout ends came before the
    /// timeout fired: Pipecat pushes a result only for a call not yet settled, and its timeout
    /// settles the call when it fires (`LLMService._run_function_call`: the result callback
    /// returns early once `runner_item.settled`; `timeout_handler` sets it, and a result that
    /// settles the call first cancels the handler's task). The log's clock is the millisecond, so
    /// while nothing else came in that instant the result is given in the millisecond before,
    /// where the model still holds the call running.
    pub(super) fn call_result(&self, s: &mut Pipecat) -> Result<Events, InputError> {
        let (turn, id) = self.started_call(s, "FunctionCallResultFrame")?;
        let child = self
            .machine
            .and_then(|m| m.session().turn(&turn)?.child(&id).cloned());
        let running = child.as_ref().is_some_and(|c| c.state.is_pending());
        if self.f.is_final == Some(false) && running {
            return Ok(Vec::new());
        }
        let before_timeout = child
            .as_ref()
            .is_some_and(|c| c.state == ChildState::Running && c.times_out_at == Some(self.at))
            && self.machine.is_some_and(|m| m.session().now < self.at)
            && s.given_up_to < self.at;
        if before_timeout {
            let x = Line {
                at: self.at - 1,
                ..*self
            };
            return Ok(x.answered(turn, id, child.as_ref()));
        }
        Ok(self.answered(turn, id, child.as_ref()))
    }

    /// The call's result taken: its answer, and a side effect it left where an interruption had
    /// asked it to stop.
    fn answered(&self, turn: String, id: String, child: Option<&Child>) -> Events {
        let mut out = Vec::new();
        if child.is_some_and(|c| c.cancel_requested && c.state.is_pending()) {
            out.push(Event::Fact {
                session: SESSION.to_owned(),
                at: self.at,
                fact: Fact::CommittedSideEffects {
                    turn: turn.clone(),
                    child: id.clone(),
                    count: 1,
                    claims_cancelled: true,
                },
            });
        }
        out.push(self.input(InputKind::ChildCompleted {
            turn: turn.clone().into(),
            child: id.clone().into(),
        }));
        out.push(self.observed(Output::ToolAnswered {
            turn: turn.into(),
            child: id.into(),
            answer: ToolAnswer::Result,
        }));
        out
    }

    /// `FunctionCallCancelFrame`: the call is cancelled — by the interruption that asked it to
    /// stop (it stops here), or at its timeout (time passes to here; the model cancels it where
    /// its timeout fell) — and answered with its cancellation.
    pub(super) fn call_cancelled(&self, s: &mut Pipecat) -> Result<Events, InputError> {
        let (turn, id) = self.started_call(s, "FunctionCallCancelFrame")?;
        let requested = self
            .machine
            .and_then(|m| {
                m.session()
                    .turn(&turn)?
                    .child(&id)
                    .map(|c| c.cancel_requested)
            })
            .unwrap_or(false);
        let stop = if requested {
            InputKind::Checkpoint {
                turn: turn.clone().into(),
                child: id.clone().into(),
                phase: "cancelled".to_owned(),
                temporary_outputs: 0,
            }
        } else {
            InputKind::Tick
        };
        Ok(vec![
            self.input(stop),
            self.observed(Output::ToolAnswered {
                turn: turn.into(),
                child: id.into(),
                answer: ToolAnswer::Cancelled,
            }),
        ])
    }

    fn call_id(&self, frame: &str) -> Result<String, InputError> {
        self.f
            .tool_call_id
            .clone()
            .ok_or_else(|| self.error(&format!("{frame} needs `tool_call_id`")))
    }

    /// The call a frame answers (its `tool_call_id`) and its reply: one a frame before started.
    fn started_call(&self, s: &Pipecat, frame: &str) -> Result<(String, String), InputError> {
        let id = self.call_id(frame)?;
        match s.calls.get(&id) {
            Some((r, _)) => Ok((s.replies[*r].id.clone(), id)),
            None => Err(self.error(&format!(
                "{frame} for call {id}, which no FunctionCallsStartedFrame or FunctionCallInProgressFrame started"
            ))),
        }
    }
}
