//! Tool calls: their starts, their tasks' returns, and their answers (`function_tools_executed`).

use super::*;

impl Line<'_> {
    /// The session closes at its time: what fell due by then happened, then it is judged. A
    /// tool call not answered by now never will be: a call its task ended is given its end (the
    /// model answers it; the log never does), and every one is stated unanswered.
    pub(super) fn close(&self, s: &mut Session) -> Events {
        let mut out = self.release_speech(s, false);
        out.push(self.input(InputKind::Tick));
        // LiveKit interrupts every speech still running when the session closes, with force
        // (`AgentSession._teardown_activity`: `interrupt(force=True)`, no event): a reply whose
        // interruption committed nothing (nothing of it was heard) ends here.
        let running = self.machine.map(|m| {
            m.session()
                .turns
                .iter()
                .filter(|t| t.phase.is_running())
                .map(|t| t.id.clone())
                .collect::<Vec<_>>()
        });
        for turn in running.unwrap_or_default() {
            let request_id = format!("{turn}-close");
            out.push(self.input(InputKind::Stop { turn, request_id }));
        }
        let open: Vec<(String, String)> = s
            .calls
            .iter()
            .filter(|(id, _)| !s.answered.contains(*id))
            .map(|(id, turn)| (id.clone(), turn.clone()))
            .collect();
        for (id, turn) in open {
            if let Some(how) = s.returned.get(&id).copied() {
                if !s.ended.contains_key(&id) {
                    out.extend(self.end_call(s, &id, how));
                }
            }
            out.push(Event::Fact {
                session: self.session.to_owned(),
                at: self.at,
                fact: Fact::Unanswered { turn, child: id },
            });
        }
        out.push(Event::End {
            session: self.session.to_owned(),
        });
        out
    }

    /// `tool_execution_updated`: a call started (a tool child of the current reply), or its task
    /// returned (how, kept for its answer).
    pub(super) fn tool_update(&self, s: &mut Session) -> Result<Events, InputError> {
        let Some(u) = self.ev.update.as_ref() else {
            return Err(InputError::at(
                self.line,
                "tool_execution_updated needs `update`",
            ));
        };
        s.sees_starts = true;
        match u.kind.as_deref() {
            Some("tool_call_started") => {
                let call = u.function_call.as_ref();
                let id = call.and_then(|c| c.call_id.clone());
                let Some(id) = id else {
                    return Err(InputError::at(
                        self.line,
                        "tool_call_started needs a function_call with a call_id",
                    ));
                };
                let name = call.and_then(|c| c.name.clone()).unwrap_or_default();
                let generation = call.and_then(Call::generation);
                Ok(self.start_call(s, &id, name, generation))
            }
            Some("tool_call_ended") => {
                let id = u
                    .call_id
                    .clone()
                    .ok_or_else(|| InputError::at(self.line, "tool_call_ended needs `call_id`"))?;
                let how = match u.status.as_deref() {
                    Some("done") => ToolAnswer::Result,
                    Some("error") => ToolAnswer::Error,
                    Some("cancelled") => ToolAnswer::Cancelled,
                    other => {
                        return Err(InputError::at(
                            self.line,
                            format!(
                            "tool_call_ended status {other:?}; expected done, error or cancelled"
                        ),
                        ))
                    }
                };
                // The task returned; the call ends, as the model takes it, with its answer
                // committed (`function_tools_executed`), which may come much later.
                s.returned.entry(id).or_insert(how);
                Ok(Vec::new())
            }
            // Progress and deferred replies: no answer, no turn semantics.
            Some("tool_call_updated" | "tool_reply_updated") => Ok(Vec::new()),
            other => Err(InputError::at(
                self.line,
                format!("unknown tool_execution_updated update {other:?}"),
            )),
        }
    }

    /// A call starts: a tool child of the reply in progress (or of the last one: a tool may
    /// start after its reply's message).
    pub(super) fn start_call(
        &self,
        s: &mut Session,
        id: &str,
        name: String,
        generation: Option<&str>,
    ) -> Events {
        let mut out = Vec::new();
        // A call of another generation than the reply in progress, which the model has stopped
        // (the user's turn interrupted it) while a speech waits to begin: that speech's reply
        // began, with no state of its own to say so (the agent was thinking already).
        let ended = |turn: &str| {
            self.machine
                .and_then(|m| m.session().turn(turn))
                .is_some_and(|t| !t.phase.is_running())
        };
        let superseded = s.current.as_ref().is_some_and(|r| {
            let other = r
                .generation_id
                .as_deref()
                .zip(generation)
                .is_some_and(|(own, call)| own != call);
            other && ended(&r.id)
        });
        if superseded && s.records_speeches && s.may_begin {
            s.last = s.current.take();
            s.pre_paused = false;
        }
        // Nor is it a call of the reply going on with its calls after its message: the waiting
        // speech's reply begins beside it (LiveKit schedules the next speech while one waits on
        // its tools among `_background_speeches`).
        let beside = s.continuing.is_some()
            && s.last.as_ref().is_some_and(|r| {
                Some(&r.id) == s.continuing.as_ref()
                    && r.generation_id
                        .as_deref()
                        .zip(generation)
                        .is_some_and(|(own, call)| own != call)
            });
        if beside && s.records_speeches && s.may_begin {
            s.continuing = None;
        }
        // A call with no reply in progress, where a speech was created and has not begun: that
        // queued speech's, whose tools start when it is scheduled, before its audio.
        if s.current.is_none() && s.continuing.is_none() && s.records_speeches && s.may_begin {
            out.push(self.begin_reply(s));
        }
        if let Some(r) = s.current.as_mut() {
            r.generation_id = r.generation_id.take().or(generation.map(str::to_owned));
        }
        let turn = s
            .current
            .as_ref()
            .map(|r| r.id.clone())
            .unwrap_or_else(|| format!("speech_{}", s.replies));
        // A call id started again once its call was answered is a new call (LiveKit takes the
        // ids the model gives, and keeps no record of those it answered): what the last one
        // returned and its answer are not this one's.
        if s.answered.remove(id) {
            s.returned.remove(id);
            s.ended.remove(id);
        }
        s.calls.insert(id.to_owned(), turn.clone());
        out.extend([
            self.input(InputKind::Spawn {
                turn: turn.clone().into(),
                child: id.to_owned().into(),
                kind: ChildKind::Tool {
                    name,
                    cancellable: true,
                },
                need_ms: None,
                timeout_ms: None,
            }),
            self.observed(Output::ChildStarted {
                turn: turn.into(),
                child: id.to_owned().into(),
            }),
        ]);
        out
    }

    /// `function_tools_executed`: the batch's answers, committed to the conversation — a
    /// call's one answer (its end, where no `tool_call_ended` said it, comes with it). Where the
    /// version emits no `tool_execution_updated` (before 1.6.5), a call is first seen here: it
    /// started and ended here, and a call never answered cannot be seen (not judged).
    pub(super) fn tools_executed(&self, s: &mut Session) -> Result<Events, InputError> {
        let e = self.ev;
        if e.function_calls.len() != e.function_call_outputs.len() {
            return Err(InputError::at(
                self.line,
                "function_tools_executed: function_calls and function_call_outputs differ in length",
            ));
        }
        let mut out = Vec::new();
        s.executed_when = Some(self.at);
        // A reply to the results may follow, without a speech of its own: its speech's,
        // scheduled again behind the speeches already waiting (`_pipeline_reply_task_impl`
        // schedules the same speech handle once its tools are done), each in its turn — unless
        // that speech was interrupted, which gets no reply to its results (`if
        // fnc_executed_ev.has_tool_reply and not speech_handle.interrupted`; 1.6.4 returns once
        // interrupted).
        let reply = s.current.as_ref().or(s.last.as_ref());
        if !reply.is_some_and(|r| r.interrupted) {
            if s.may_begin {
                s.queued += 1;
            }
            s.may_begin = true;
            s.tool_reply_flag = reply.map(|r| r.allows);
        }
        if !s.sees_starts && !s.said_starts {
            s.said_starts = true;
            out.push(self.not_judged(
                TurnInvariant::ToolCallSettled,
                Vec::new(),
                "tool_execution_updated (emitted from livekit-agents 1.6.5) to see a tool call start: a call never answered is not in this log".to_owned(),
            ));
        }
        for (call, o) in e.function_calls.iter().zip(&e.function_call_outputs) {
            // A call without an output (before 1.6.5) is not answered here.
            let Some(o) = o else { continue };
            let id = o.call_id.clone().ok_or_else(|| {
                InputError::at(self.line, "a function_call_output needs `call_id`")
            })?;
            if !s.calls.contains_key(&id) && s.answered.contains(&id) {
                // Answered before, where its start could not be placed: LiveKit answers a call
                // once, in the one `function_tools_executed` of its tool step
                // (`AgentActivity._pipeline_reply_task_impl`, after `exe_task`, or on the
                // interrupted path): a second answer is one too many, placed or not.
                let turn = s.last.as_ref().map(|r| r.id.clone()).unwrap_or_default();
                out.push(Event::Fact {
                    session: self.session.to_owned(),
                    at: self.at,
                    fact: Fact::ToolCall {
                        turn,
                        call: id,
                        what: ToolCallFact::AnsweredTwice,
                    },
                });
                continue;
            }
            if !s.calls.contains_key(&id) && !s.answered.contains(&id) {
                // First seen at its answer (before 1.6.5 every call is; later, a call LiveKit
                // refused — an unknown tool, bad arguments — is answered without a start): a call
                // of the reply in progress. One whose reply already ended cannot be placed —
                // ended in the log, or stopped for the model (its calls unseen, the user's turn
                // interrupted it while they ran: `_interrupt_background_speeches`): when it
                // started is not judged, a part of the rule named without subjects, for its
                // answers are still counted (a second is one too many, above).
                let running = |turn: &str| {
                    self.machine
                        .and_then(|m| m.session().turn(turn))
                        .is_none_or(|t| t.phase.is_running())
                };
                if !s.current.as_ref().is_some_and(|r| running(&r.id)) {
                    s.answered.insert(id.clone());
                    out.push(self.not_judged(
                        TurnInvariant::ToolCallSettled,
                        Vec::new(),
                        format!("when tool call {id} started (tool_execution_updated, from livekit-agents 1.6.5): it is answered after its reply ended"),
                    ));
                    continue;
                }
                let name = call.name.clone().unwrap_or_default();
                out.extend(self.start_call(s, &id, name, call.generation()));
            }
            let returned = s.returned.get(&id).copied();
            let answer = match (returned, o.is_error) {
                // A cancelled call's output is an error saying so.
                (Some(ToolAnswer::Cancelled), true) => ToolAnswer::Cancelled,
                (_, true) => ToolAnswer::Error,
                (_, false) => ToolAnswer::Result,
            };
            if !s.ended.contains_key(&id) {
                out.extend(self.end_call(s, &id, answer));
            }
            s.answered.insert(id.clone());
            let turn = s.calls.get(&id).cloned().unwrap_or_default();
            out.push(self.observed(Output::ToolAnswered {
                turn: turn.into(),
                child: id.into(),
                answer,
            }));
        }
        Ok(out)
    }

    /// A call ended (its task's one terminal entry): the child's end, as the model takes it.
    pub(super) fn end_call(&self, s: &mut Session, id: &str, how: ToolAnswer) -> Events {
        let Some(turn) = s.calls.get(id).cloned() else {
            return Vec::new();
        };
        s.ended.insert(id.to_owned(), how);
        let child = id.to_owned();
        let end = match how {
            ToolAnswer::Result => InputKind::ChildCompleted {
                turn: turn.into(),
                child: child.into(),
            },
            ToolAnswer::Error => InputKind::ChildFailed {
                turn: turn.into(),
                child: child.into(),
            },
            ToolAnswer::Cancelled => InputKind::Checkpoint {
                turn: turn.into(),
                child: child.into(),
                phase: "cancelled".to_owned(),
                temporary_outputs: 0,
            },
        };
        vec![self.input(end)]
    }
}
