//! Function calls. A response's turn ends at its done, as the API's active response does; the
//! app runs the tool after it. A call is made when its arguments are done (a call its response's
//! cancel cut short, left `incomplete`, never was), and is answered by the `function_call_output`
//! item the client creates: exactly once, and never a call the model did not make
//! (`tool_call_settled`, stated as facts at the line that breaks it).

use super::{Events, Line, Session};
use crate::trace::turn_facts::{Fact, ToolCallFact};
use crate::trace::{Event, InputError};

impl Line<'_> {
    /// `response.function_call_arguments.done`, or `response.output_item.done` of a function
    /// call that completed: the model made the call.
    pub(super) fn call_made(&self, s: &mut Session) {
        let item = self.event.item.as_ref();
        let done = match self.kind() {
            "response.output_item.done" => item
                .filter(|i| i.status.as_deref() == Some("completed"))
                .and_then(|i| i.call_id.as_deref()),
            _ => self.event.call_id.as_deref(),
        };
        let Some(call) = done else {
            return;
        };
        let response = self.str_at(&["response_id"]).unwrap_or_default().to_owned();
        if s.out_of_band(&response) {
            return;
        }
        let c = s.calls.entry(call.to_owned()).or_default();
        c.made = true;
        if c.response.is_empty() {
            c.response = response;
        }
    }

    /// The client's `conversation.item.create`: a `function_call_output` answers its call. Other
    /// items have no turn semantics; an answer to a call this log never showed is not judged.
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
        let Some(c) = s.calls.get_mut(call) else {
            return Ok(Vec::new());
        };
        let what = match (c.made, c.answered) {
            (false, _) => ToolCallFact::AnsweredUnmade,
            (true, true) => ToolCallFact::AnsweredTwice,
            (true, false) => {
                c.answered = true;
                return Ok(Vec::new());
            }
        };
        Ok(vec![self.call_fact(&c.response.clone(), call, what)])
    }

    /// The session closes: a call made and never answered may still have been running, and
    /// the SDK cancels its running tool tasks when the session closes
    /// (`RealtimeSession._cleanup`), so nothing was left to answer it. The log has no line for a
    /// tool's end: whether the call was settled is not judged.
    pub(super) fn unanswered(&self, s: &Session) -> Events {
        s.calls
            .iter()
            .filter(|(_, c)| c.made && !c.answered)
            .map(|(id, c)| Event::NotJudged {
                session: self.session.to_owned(),
                rule: "tool_call_settled",
                ids: vec![c.response.clone(), id.clone()],
                needs: format!(
                    "function call {id}'s answer or its tool's end: the app closed the session \
                     with the call unanswered, and its tool may still have been running (the \
                     SDK cancels running tool tasks when the session closes)"
                ),
            })
            .collect()
    }

    fn call_fact(
        &self,
        turn: &str,
        call: &str,
        what: ToolCallFact,
    ) -> Event<turnfence_model::turn::TurnMachine> {
        Event::Fact {
            session: self.session.to_owned(),
            at: self.at,
            fact: Fact::ToolCall {
                turn: turn.to_owned(),
                call: call.to_owned(),
                what,
            },
        }
    }
}
