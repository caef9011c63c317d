//! The lab's vocabulary: how the lab logs what happens to a turn, as lines of `t_ms`, `scenario`,
//! `turn_id`, `component`, `event` and `detail`, in `events.jsonl` and in its one-line log form
//! (`[0061ms] model          response.delta seq=1 text=Storage`).
//!
//! Both directions live here, so the vocabulary is stated once: [`writer`] turns every input and
//! output of the turn machine into a lab line (what the gate writes), and [`reader`] turns lab
//! lines back into inputs and observed outputs (the lab dialect of `turnfence check`).
//!
//! Dependencies: the writer needs the model only, and `gate` uses it. The reader is a dialect of
//! `trace`: it implements `trace::Reader`, and `trace` names it as its lab dialect. Nothing here
//! uses `gate`.

pub mod entry;
pub mod reader;
pub mod writer;

use turnfence_model::turn::ChildKind;

/// The fields of every lab line, in the order the lab writes them.
pub const FIELDS: [&str; 6] = [
    "t_ms",
    "scenario",
    "turn_id",
    "component",
    "event",
    "detail",
];

/// The component that speaks for a child kind.
pub fn component_of(kind: &ChildKind) -> &'static str {
    match kind {
        ChildKind::Retrieval => "retriever",
        ChildKind::Model => "model",
        ChildKind::Tts => "tts",
        ChildKind::Tool { .. } => "tool",
    }
}

/// The kind of child a component speaks for; any other component speaks for a tool.
pub fn kind_of(component: &str) -> ChildKind {
    match component {
        "retriever" => ChildKind::Retrieval,
        "model" => ChildKind::Model,
        "tts" => ChildKind::Tts,
        _ => ChildKind::Tool {
            name: String::new(),
            cancellable: true,
        },
    }
}

/// The usual name of the child a component speaks for, when a line does not name it.
pub fn usual_child(component: &str) -> String {
    match component {
        "retriever" => "retrieval".to_owned(),
        c => c.to_owned(),
    }
}
