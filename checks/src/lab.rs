//! The lab's line vocabulary: every input and output of the turn machine as a lab event
//! (`t_ms`, `scenario`, `turn_id`, `component`, `event`, `detail`), and the lab's one-line log form
//! (`[0061ms] model          response.delta seq=1 text=Storage`).

use serde::Serialize;
use serde_json::{json, Map, Value};
use turnfence_model::turn::{ChildKind, Input, InputKind, Output, StopAnswer, Terminal};
use turnfence_model::Millis;

/// One line of the lab's `events.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LabEvent {
    pub t_ms: Millis,
    pub scenario: String,
    pub turn_id: String,
    pub component: &'static str,
    pub event: &'static str,
    pub detail: Map<String, Value>,
}

impl LabEvent {
    /// The lab's log line for this event.
    pub fn log_line(&self) -> String {
        let detail: Vec<String> = self
            .detail
            .iter()
            .map(|(k, v)| format!("{k}={}", compact(v)))
            .collect();
        let suffix = if detail.is_empty() {
            String::new()
        } else {
            format!(" {}", detail.join(" "))
        };
        format!(
            "[{:04}ms] {:<14} {}{suffix}",
            self.t_ms, self.component, self.event
        )
    }
}

/// The lab's compact value form: booleans lower-case, spaces in strings as `_`, structures as JSON.
pub fn compact(v: &Value) -> String {
    match v {
        Value::String(s) => s.replace(' ', "_"),
        Value::Array(_) | Value::Object(_) => v.to_string(),
        other => other.to_string(),
    }
}

fn detail(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// The component that speaks for a child kind.
fn component_of(kind: &ChildKind) -> &'static str {
    match kind {
        ChildKind::Retrieval => "retriever",
        ChildKind::Model => "model",
        ChildKind::Tts => "tts",
        ChildKind::Tool { .. } => "tool",
    }
}

/// An input as a lab line: `(component, event, detail)`.
pub fn input_line(
    input: &Input,
    kinds: &dyn Fn(&str, &str) -> Option<ChildKind>,
) -> (&'static str, &'static str, Map<String, Value>) {
    let child_component =
        |turn: &str, child: &str| kinds(turn, child).map_or("cancel-tree", |k| component_of(&k));
    let (component, event, d) = match &input.kind {
        InputKind::Accept {
            generation,
            mode,
            deadline_ms,
            budget,
            ..
        } => {
            let mut d = json!({ "generation": generation, "mode": mode });
            if let Some(ms) = deadline_ms {
                d["deadline_ms"] = json!(ms);
            }
            if let Some(b) = budget {
                d["budget"] = json!(b);
            }
            ("turn", "accepted", d)
        }
        InputKind::Spawn {
            child,
            kind,
            need_ms,
            ..
        } => {
            let mut d = match kind {
                ChildKind::Tool { name, cancellable } => {
                    json!({ "child": child, "tool": name, "cancellable": cancellable })
                }
                other => json!({ "child": child, "kind": other }),
            };
            if let Some(ms) = need_ms {
                d["need_ms"] = json!(ms);
            }
            ("cancel-tree", "child.spawned", d)
        }
        InputKind::ChildCompleted { turn, child } => (
            child_component(turn, child),
            "completed",
            json!({ "child": child }),
        ),
        InputKind::Checkpoint {
            turn,
            child,
            phase,
            temporary_outputs,
        } => {
            let mut d = json!({ "child": child, "phase": phase });
            if *temporary_outputs > 0 {
                d["temporary_outputs"] = json!(temporary_outputs);
            }
            (child_component(turn, child), "checkpoint", d)
        }
        InputKind::Delta {
            generation,
            seq,
            text,
            frames,
            ..
        } => {
            let mut d = json!({ "generation": generation, "seq": seq });
            if let Some(t) = text {
                d["text"] = json!(t);
            }
            let event = if *frames > 0 {
                d["frames"] = json!(frames);
                "response.audio.delta"
            } else {
                "response.delta"
            };
            ("model", event, d)
        }
        InputKind::ModelDone { .. } => ("model", "response.completed", json!({})),
        InputKind::FramePlayed => ("speaker", "frame.consumed", json!({})),
        InputKind::Stop { request_id, .. } => {
            ("client", "turn.cancel", json!({ "request_id": request_id }))
        }
        InputKind::SpeechStarted { confidence } => (
            "vad",
            "input_audio.speech_started",
            json!({ "confidence": confidence }),
        ),
        InputKind::CommitSent {
            child,
            idempotency_key,
            ..
        } => (
            "tool",
            "commit.sent",
            json!({ "child": child, "idempotency_key": idempotency_key }),
        ),
        InputKind::CommitAcked { child, .. } => {
            ("tool", "commit.acknowledged", json!({ "child": child }))
        }
        InputKind::CommitFailed { child, .. } => {
            ("tool", "commit.failed", json!({ "child": child }))
        }
        InputKind::Tick => ("clock", "tick", json!({})),
        InputKind::ClientAck { seq } => ("client", "event.acked", json!({ "seq": seq })),
        InputKind::Disconnect => ("transport", "disconnected", json!({})),
        InputKind::Resume { after_seq } => {
            ("transport", "resume", json!({ "after_seq": after_seq }))
        }
        InputKind::ClientReceive { seq } => ("client", "event.received", json!({ "seq": seq })),
    };
    (component, event, detail(d))
}

/// An output as a lab line: `(component, event, detail)`.
pub fn output_line(
    output: &Output,
    kinds: &dyn Fn(&str, &str) -> Option<ChildKind>,
) -> (&'static str, &'static str, Map<String, Value>) {
    let child_component =
        |turn: &str, child: &str| kinds(turn, child).map_or("cancel-tree", |k| component_of(&k));
    let (component, event, d) = match output {
        Output::TurnRefused { reason, .. } => {
            ("turn", "accept.refused", json!({ "reason": reason }))
        }
        Output::Delivered {
            generation, seq, ..
        } => (
            "delivery-gate",
            "delivered",
            json!({ "generation": generation, "seq": seq }),
        ),
        Output::LateDropped {
            generation,
            seq,
            reason,
            ..
        } => (
            "delivery-gate",
            "late.delta.dropped",
            json!({ "generation": generation, "seq": seq, "reason": reason }),
        ),
        Output::Played {
            generation, seq, ..
        } => (
            "tts",
            "frame.played",
            json!({ "generation": generation, "seq": seq }),
        ),
        Output::PlaybackCleared { frames, .. } => (
            "tts",
            "output_audio.clear",
            json!({ "buffered_frames": frames }),
        ),
        Output::ChildCancelRequested { child, .. } => (
            "cancel-tree",
            "cancel.propagated",
            json!({ "child": child }),
        ),
        Output::ChildCancelled {
            turn,
            child,
            checkpoint,
        } => (
            child_component(turn, child),
            "cancelled",
            json!({ "child": child, "checkpoint": checkpoint }),
        ),
        Output::TemporaryOutputRemoved { child, count, .. } => (
            "tool",
            "temporary_output.removed",
            json!({ "child": child, "synthetic_files": count }),
        ),
        Output::ToolNotStarted { child, reason, .. } => (
            "planner",
            "tool.not_started",
            json!({ "child": child, "reason": reason }),
        ),
        Output::CancelDeferred { child, reason, .. } => (
            "tool",
            "cancel.deferred",
            json!({ "child": child, "reason": reason }),
        ),
        Output::ReconcileEnqueued {
            child,
            idempotency_key,
            ..
        } => (
            "reconciler",
            "status.enqueued",
            json!({ "child": child, "key": idempotency_key }),
        ),
        Output::StopAnswered {
            request_id, answer, ..
        } => stop_line(request_id, answer),
        Output::GenerationFenced { generation, .. } => (
            "turn",
            "barge_in.accepted",
            json!({ "fenced_generation": generation, "new_generation": generation.saturating_add(1) }),
        ),
        Output::DeadlineExceeded { .. } => {
            ("deadline", "exceeded", json!({ "source": "turn_envelope" }))
        }
        Output::Persisted {
            seq,
            text,
            terminal,
            ..
        } => {
            let mut d = json!({ "seq": seq });
            if let Some(t) = text {
                d["text"] = json!(t);
            }
            if *terminal {
                d["terminal"] = json!(true);
            }
            ("stream-store", "event.persisted", d)
        }
        Output::ResumeRefused { after_seq, reason } => (
            "stream-store",
            "resume.refused",
            json!({ "after_seq": after_seq, "reason": reason }),
        ),
        Output::Replayed { from, to } => (
            "stream-store",
            "replay",
            json!({ "seq_range": format!("{from}..{to}") }),
        ),
        Output::DuplicateIgnored { seq } => ("client", "duplicate.ignored", json!({ "seq": seq })),
        Output::Rendered { text, .. } => ("client", "render.completed", json!({ "text": text })),
        Output::Terminal { state, .. } => terminal_line(*state),
    };
    (component, event, detail(d))
}

fn stop_line(request_id: &str, answer: &StopAnswer) -> (&'static str, &'static str, Value) {
    match answer {
        StopAnswer::Requested => (
            "turn",
            "cancel.requested",
            json!({ "request_id": request_id }),
        ),
        StopAnswer::AlreadyRequested => (
            "turn",
            "cancel.already_requested",
            json!({ "request_id": request_id }),
        ),
        StopAnswer::AlreadyTerminal { state } => (
            "turn",
            "cancel.already_terminal",
            json!({ "request_id": request_id, "state": state.label() }),
        ),
    }
}

fn terminal_line(state: Terminal) -> (&'static str, &'static str, Value) {
    match state {
        Terminal::Completed => ("turn", "completed", json!({})),
        Terminal::Cancelled => ("turn", "cancelled", json!({})),
        Terminal::Failed { .. } => ("turn", "failed", json!({ "code": state.label() })),
        Terminal::ReconcileRequired => ("turn", "reconcile_required", json!({})),
    }
}
