//! The lab vocabulary's writer: every input and output of the turn machine as a lab event
//! (`t_ms`, `scenario`, `turn_id`, `component`, `event`, `detail`), and the lab's one-line log form
//! (`[0061ms] model          response.delta seq=1 text=Storage`; a line about another turn than
//! the log's header names it, `turn=…`). The gate writes its log and `events.jsonl` with it.

use serde::Serialize;
use serde_json::{json, Map, Value};
use turnfence_model::turn::{
    Budget, ChildKind, DropReason, Input, InputKind, Mode, Output, StopAnswer, Terminal,
};
use turnfence_model::Millis;

use super::component_of;

/// One line of the lab's `events.jsonl`; its fields are [`super::FIELDS`].
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
    /// The lab's log line for this event, in a log whose header names `header_turn`: a line about
    /// another turn names it before its detail (`turn=turn-voice-002`), so a log with two turns
    /// never reads as one turn ending twice.
    pub fn log_line(&self, header_turn: &str) -> String {
        let turn = (self.turn_id != header_turn).then(|| format!("turn={}", self.turn_id));
        let detail: Vec<String> = turn
            .into_iter()
            .chain(
                self.detail
                    .iter()
                    .map(|(k, v)| format!("{k}={}", compact(v))),
            )
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

/// Numbers each `tts frame.played` within its delta (`frame=2`: the second of the delta's frames
/// to play), so a delta's frames played one after another do not read as one frame played twice.
pub fn number_frames(events: &mut [LabEvent]) {
    let mut played: Vec<(String, Value, Value)> = Vec::new();
    for e in events
        .iter_mut()
        .filter(|e| (e.component, e.event) == ("tts", "frame.played"))
    {
        let key = (
            e.turn_id.clone(),
            e.detail.get("generation").cloned().unwrap_or(Value::Null),
            e.detail.get("seq").cloned().unwrap_or(Value::Null),
        );
        played.push(key.clone());
        let n = played.iter().filter(|k| **k == key).count();
        e.detail.insert("frame".into(), json!(n));
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

/// A lab line without its time, scenario and turn: `(component, event, detail)`.
type Part = (&'static str, &'static str, Value);

fn detail(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// The component that speaks for a turn's child: its kind's, or `cancel-tree` for a child the
/// run never spawned.
fn child_component(
    kinds: &dyn Fn(&str, &str) -> Option<ChildKind>,
    turn: &str,
    child: &str,
) -> &'static str {
    kinds(turn, child).map_or("cancel-tree", |k| component_of(&k))
}

/// An input as a lab line: `(component, event, detail)`. `outputs` are the machine's answer to
/// it: an accept or a spawn the machine refused is written as what it was, a request
/// (`turn accept.requested`, `cancel-tree child.spawn_requested`), never as done.
pub fn input_line(
    input: &Input,
    outputs: &[Output],
    kinds: &dyn Fn(&str, &str) -> Option<ChildKind>,
) -> (&'static str, &'static str, Map<String, Value>) {
    let (component, event, d): Part = match &input.kind {
        InputKind::Accept {
            turn,
            generation,
            mode,
            deadline_ms,
            budget,
            interruptible,
        } => {
            let refused = outputs
                .iter()
                .any(|o| matches!(o, Output::TurnRefused { turn: t, .. } if t == turn));
            let mut part = accept(*generation, mode, *deadline_ms, budget.as_ref(), refused);
            if !interruptible {
                part.2["interruptible"] = json!(false);
            }
            part
        }
        InputKind::Spawn {
            turn,
            child,
            kind,
            need_ms,
            ..
        } => {
            let refused = outputs.iter().any(|o| {
                matches!(o, Output::ToolNotStarted { turn: t, child: c, .. } if t == turn && c == child)
            });
            spawn(child, kind, *need_ms, refused)
        }
        InputKind::ChildCompleted { turn, child } => (
            child_component(kinds, turn, child),
            "completed",
            json!({ "child": child }),
        ),
        InputKind::ChildFailed { turn, child } => (
            child_component(kinds, turn, child),
            "failed",
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
            (child_component(kinds, turn, child), "checkpoint", d)
        }
        InputKind::Delta {
            generation,
            seq,
            text,
            frames,
            ..
        } => delta(*generation, *seq, text.as_deref(), *frames),
        InputKind::ModelDone { .. } => ("model", "response.completed", json!({})),
        InputKind::FramePlayed { frames: 1 } => ("speaker", "frame.consumed", json!({})),
        InputKind::FramePlayed { frames } => {
            ("speaker", "frame.consumed", json!({ "frames": frames }))
        }
        InputKind::Stop { request_id, .. } => {
            ("client", "turn.cancel", json!({ "request_id": request_id }))
        }
        InputKind::SpeechStarted { confidence, .. } => (
            "vad",
            "input_audio.speech_started",
            json!({ "confidence": confidence }),
        ),
        InputKind::SpeechStopped => ("vad", "input_audio.speech_stopped", json!({})),
        InputKind::Transcribed => ("stt", "transcript.final", json!({})),
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

/// `turn accepted` (`turn accept.requested` when the machine refused it): the generation and
/// mode, and the deadline and budget when the turn has them.
fn accept(
    generation: u64,
    mode: &Mode,
    deadline_ms: Option<u64>,
    budget: Option<&Budget>,
    refused: bool,
) -> Part {
    let mut d = json!({ "generation": generation, "mode": mode });
    set_some(&mut d, "deadline_ms", deadline_ms);
    set_some(&mut d, "budget", budget);
    let event = requested_or(refused, "accept.requested", "accepted");
    ("turn", event, d)
}

/// `cancel-tree child.spawned` (`child.spawn_requested` when the machine did not start it): a
/// tool by its name and cancellability, any other child by kind.
fn spawn(child: &str, kind: &ChildKind, need_ms: Option<u64>, refused: bool) -> Part {
    let mut d = match kind {
        ChildKind::Tool { name, cancellable } => {
            json!({ "child": child, "tool": name, "cancellable": cancellable })
        }
        other => json!({ "child": child, "kind": other }),
    };
    set_some(&mut d, "need_ms", need_ms);
    let event = requested_or(refused, "child.spawn_requested", "child.spawned");
    ("cancel-tree", event, d)
}

/// Sets `key` in a detail to `value`, when there is one.
fn set_some(d: &mut Value, key: &str, value: Option<impl Serialize>) {
    if let Some(v) = value {
        d[key] = json!(v);
    }
}

/// The event of an accept or a spawn: the request when the machine refused it, else what
/// happened.
fn requested_or(refused: bool, requested: &'static str, done: &'static str) -> &'static str {
    if refused {
        requested
    } else {
        done
    }
}

/// The detail that names a delta: its generation and seq.
fn delta_id(generation: u64, seq: u64) -> Value {
    json!({ "generation": generation, "seq": seq })
}

/// A model delta: `response.audio.delta` when it carries frames, else `response.delta`.
fn delta(generation: u64, seq: u64, text: Option<&str>, frames: u32) -> Part {
    let mut d = delta_id(generation, seq);
    if let Some(t) = text {
        d["text"] = json!(t);
    }
    let event = if frames > 0 {
        d["frames"] = json!(frames);
        "response.audio.delta"
    } else {
        "response.delta"
    };
    ("model", event, d)
}

/// An output as a lab line: `(component, event, detail)`, or `None` for an output its input's
/// line already states (a child started: the spawn's line is `<child> started`).
pub fn output_line(
    output: &Output,
    kinds: &dyn Fn(&str, &str) -> Option<ChildKind>,
) -> Option<(&'static str, &'static str, Map<String, Value>)> {
    let (component, event, d): Part = match output {
        Output::ChildStarted { .. } => return None,
        Output::TurnRefused { reason, .. } => {
            ("turn", "accept.refused", json!({ "reason": reason }))
        }
        Output::Delivered {
            generation, seq, ..
        } => ("delivery-gate", "delivered", delta_id(*generation, *seq)),
        Output::LateDropped {
            generation,
            seq,
            reason,
            ..
        } => late_dropped(*generation, *seq, reason),
        Output::Played {
            generation,
            seq,
            frames,
            ..
        } => {
            let mut d = delta_id(*generation, *seq);
            if *frames != 1 {
                d["frames"] = json!(frames);
            }
            ("tts", "frame.played", d)
        }
        Output::PlaybackPaused { .. } => ("tts", "output_audio.paused", json!({})),
        Output::PlaybackResumed { .. } => ("tts", "output_audio.resumed", json!({})),
        Output::ToolAnswered { child, answer, .. } => (
            "tool",
            "call.answered",
            json!({ "child": child, "answer": answer }),
        ),
        Output::Truncated {
            generation, heard, ..
        } => (
            "tts",
            "output_audio.truncated",
            json!({ "generation": generation, "heard_frames": heard }),
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
        } => child_cancelled(child_component(kinds, turn, child), child, checkpoint),
        Output::ReportIgnored {
            turn,
            child,
            report,
        } => report_ignored(child_component(kinds, turn, child), child, report),
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
        } => persisted(*seq, text.as_deref(), *terminal),
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
    Some((component, event, detail(d)))
}

/// `delivery-gate late.delta.dropped`: the delta, and why the gate dropped it.
fn late_dropped(generation: u64, seq: u64, reason: &DropReason) -> Part {
    let mut d = delta_id(generation, seq);
    d["reason"] = json!(reason);
    ("delivery-gate", "late.delta.dropped", d)
}

/// A child stopped: the component that speaks for it says so, with the checkpoint it stopped at.
/// `<child> report.ignored`: a stopped child's late report, dropped.
fn report_ignored(
    component: &'static str,
    child: &str,
    report: &turnfence_model::turn::IgnoredReport,
) -> Part {
    let d = json!({ "child": child, "report": report });
    (component, "report.ignored", d)
}

fn child_cancelled(component: &'static str, child: &str, checkpoint: &str) -> Part {
    let d = json!({ "child": child, "checkpoint": checkpoint });
    (component, "cancelled", d)
}

/// `stream-store event.persisted`: the seq, the text when there is one, and whether it is the
/// turn's terminal event.
fn persisted(seq: u64, text: Option<&str>, terminal: bool) -> Part {
    let mut d = json!({ "seq": seq });
    if let Some(t) = text {
        d["text"] = json!(t);
    }
    if terminal {
        d["terminal"] = json!(true);
    }
    ("stream-store", "event.persisted", d)
}

fn stop_line(request_id: &str, answer: &StopAnswer) -> Part {
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

fn terminal_line(state: Terminal) -> Part {
    match state {
        Terminal::Completed => ("turn", "completed", json!({})),
        Terminal::Cancelled => ("turn", "cancelled", json!({})),
        Terminal::Failed { .. } => ("turn", "failed", json!({ "code": state.label() })),
        Terminal::ReconcileRequired => ("turn", "reconcile_required", json!({})),
    }
}
