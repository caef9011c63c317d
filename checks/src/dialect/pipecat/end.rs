//! The pipeline's end: an `EndFrame` asks for it, a `CancelFrame` forces it, and the log ends
//! with it.
//!
//! The observer logs a frame where it enters the pipeline, not where each processor takes it.
//! An `EndFrame` is a control frame (`frames/frames.py`): every processor handles it in order,
//! after the frames it already holds, so the TTS still speaks what it was given, the output still
//! plays what it queued (`MediaSender.stop` lets its audio task drain the queue up to the
//! `EndFrame`) and the LLM still finishes the response it streams; the pipeline ends when the
//! `EndFrame` reaches its end, and nothing is logged after. So frames behind an `EndFrame` are
//! read as any frame is, and the session ends at the log's end.
//!
//! A `CancelFrame` is a system frame: each processor takes it before what it holds, cancels its
//! process task (`FrameProcessor.__cancel`) and passes it on; a processor it has not reached
//! yet still pushes in that instant (the LLM pushes its `LLMFullResponseEndFrame` from the
//! `finally` of the generation the cancel stops; the output writes out the chunk in hand). A
//! line at a later time comes after the cancel reached every processor: every reply still
//! running was stopped there, and the output, its media tasks cancelled
//! (`MediaSender.cancel`), plays nothing more of them — audio of such a reply played after is
//! late audio, judged as such.
//!
//! A tool call still running when the pipeline ends is cancelled by its cleanup without a frame
//! (1.x `LLMService.cleanup`, `_cancel_all_function_call_tasks`; 0.0.84 cancels the pipeline's
//! tasks with its task manager), and a handler that returned without calling back leaves none
//! either: the log cannot tell the two apart, so the reply that waits for it is not judged left
//! open. A call an interruption asked to stop is answered at once (its `FunctionCallCancelFrame`):
//! one still unanswered at the end stays judged.

use turnfence_model::turn::state::ChildState;
use turnfence_model::turn::{InputKind, TurnMachine};
use turnfence_model::Millis;

use super::*;

impl Pipecat {
    /// The `CancelFrame` at `at` has reached every processor (a line at a later time came, or
    /// the log ended): the replies given and not done are stopped.
    pub(super) fn cancel_reached(
        &mut self,
        at: Millis,
        line: usize,
        machine: Option<&TurnMachine>,
    ) -> Events {
        self.cancel_reached = true;
        // The calls an interruption already asked to stop: the cancel does not excuse them.
        self.stopping_at_cancel = machine
            .into_iter()
            .flat_map(|m| m.session().turns.iter())
            .flat_map(|t| t.children.iter())
            .filter(|c| c.cancel_requested)
            .map(|c| c.id.to_string())
            .collect();
        let frame = Frame::default();
        let x = Line {
            at,
            line,
            f: &frame,
            machine,
        };
        // Stopped before their generations are done: a response the cancel cut ends its
        // generation in that instant (the LLM's `finally`), and the TTS speaks none of it.
        let mut out = x.accept_up_to(self, self.replies.len());
        let running = |id: &str| {
            machine
                .and_then(|m| m.session().turn(id))
                .is_none_or(|t| !t.phase.is_terminal())
        };
        for (r, reply) in self.replies.iter().enumerate() {
            if reply.accepted && (!reply.done || running(&reply.id)) {
                self.stopped_by_cancel.push(r);
                out.push(x.input(InputKind::Stop {
                    turn: reply.id.clone().into(),
                    request_id: "CancelFrame".to_owned(),
                }));
            }
        }
        out.extend(x.finish_all(self));
        out
    }

    /// The log's end. After an `EndFrame` or a `CancelFrame` it is the pipeline's: every reply
    /// not yet given is given, every reply whose generation ended is done (0.0.84's TTS closes
    /// each sentence), time passes to the last line, and a reply waiting for a call still
    /// running is not judged left open. A log that stops before either ends as it stands.
    pub(super) fn pipeline_ended(&mut self, line: usize, machine: Option<&TurnMachine>) -> Events {
        if !self.end_requested && self.cancelled_at.is_none() {
            return Vec::new();
        }
        let mut out = Vec::new();
        if let Some(cancelled) = self.cancelled_at.filter(|_| !self.cancel_reached) {
            out = self.cancel_reached(cancelled, line, machine);
        }
        let frame = Frame::default();
        let x = Line {
            at: self.clock,
            line,
            f: &frame,
            machine,
        };
        out.extend(x.accept_up_to(self, self.replies.len()));
        out.extend(x.finish_all(self));
        out.push(x.input(InputKind::Tick));
        out.extend(self.calls_at_end(machine));
        out.push(Event::End {
            session: SESSION.to_owned(),
        });
        out
    }

    /// The replies still running at the end that the pipeline's end cut: not judged left open.
    /// A response whose generation never ended began after the `EndFrame` had passed the LLM
    /// (the user aggregator pushes the `EndFrame` on, then the user's last turn behind it:
    /// `LLMUserAggregator.process_frame` and `_stop`), and the end cancels it; a reply waiting for
    /// a call still running waits for one the cleanup cancels without a frame. A call an
    /// interruption asked to stop (answered at once) or whose timeout passed stays judged.
    ///
    /// `machine` stands before the end's own events: none where the log gave the model nothing
    /// before its end (the first reply given at the end), and then every reply is one not given.
    fn calls_at_end(&self, machine: Option<&TurnMachine>) -> Events {
        let mut out = Vec::new();
        for reply in &self.replies {
            // A reply not given to the model yet is given at the end: it runs, with no call.
            let turn = machine.and_then(|m| m.session().turn(&reply.id));
            if turn.is_some_and(|t| t.phase.is_terminal()) {
                continue;
            }
            let children = turn.map_or(&[][..], |t| &t.children[..]);
            let owed = children.iter().any(|c| {
                c.kind.is_tool()
                    && c.state == ChildState::Running
                    && (self.stopping_at_cancel.contains(&c.id.to_string())
                        || c.cancel_requested && self.cancelled_at.is_none()
                        || c.times_out_at.is_some_and(|t| t <= self.clock))
            });
            if owed {
                continue;
            }
            let call = children
                .iter()
                .find(|c| c.kind.is_tool() && c.state == ChildState::Running);
            let needs = match call {
                _ if !(reply.llm_ended || reply.speak) => format!(
                    "{}'s LLMFullResponseEndFrame: the pipeline ended while the LLM generated it \
                     (a user turn the EndFrame closes reaches the LLM behind it), and its end \
                     cancels the generation",
                    reply.id
                ),
                Some(call) => format!(
                    "call {}'s FunctionCallResultFrame: the pipeline ended while it ran, and \
                     Pipecat's cleanup cancels a running handler without a frame \
                     (LLMService.cleanup), as a handler that returned without its result \
                     leaves none",
                    call.id
                ),
                None => continue,
            };
            out.push(Event::NotJudged {
                session: SESSION.to_owned(),
                rule: crate::trace::FindingKind::LeftOpen.name(),
                ids: vec![reply.id.clone()],
                needs,
            });
        }
        out
    }
}
