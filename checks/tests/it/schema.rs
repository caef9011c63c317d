//! The published JSON Schema of the canonical trace form, generated from the model's serde types.
//! `schema/canonical-trace.schema.json` must be what the types generate now; regenerate it with
//! `TURNFENCE_WRITE_SCHEMA=1 cargo test -p turnfence-checks --test it schema`.

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use turnfence_model::turn::{Input, Output};

/// One line of a canonical trace.
#[allow(dead_code)] // A description for the schema generator only.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
#[schemars(title = "turnfence canonical trace line")]
enum TraceLine {
    /// The first line only: the case's meta data, and `complete`, the output kinds the log
    /// records completely.
    Meta { meta: Value },
    /// Something that happened to the system (`input` names the kind).
    Input {
        /// The session the line belongs to (default `main`).
        #[serde(default)]
        session: Option<String>,
        #[serde(flatten)]
        input: Input,
    },
    /// Something the system did (`output` names the kind), observed at `at`.
    Output {
        at: u64,
        #[serde(default)]
        session: Option<String>,
        #[serde(flatten)]
        output: Output,
    },
    /// The session is over.
    End {
        session: Option<String>,
        session_end: bool,
        #[serde(default)]
        at: Option<u64>,
    },
}

fn schema_text() -> String {
    let schema = schemars::schema_for!(TraceLine);
    serde_json::to_string_pretty(&schema).unwrap() + "\n"
}

#[test]
fn published_schema_is_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../schema/canonical-trace.schema.json");
    let now = schema_text();
    #[allow(clippy::disallowed_methods)] // The test owns this file: it regenerates it on request.
    let write = std::env::var_os("TURNFENCE_WRITE_SCHEMA").is_some();
    if write {
        std::fs::write(&path, &now).unwrap();
    }
    #[allow(clippy::disallowed_methods)]
    let published = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        published == now,
        "{} is stale: rerun with TURNFENCE_WRITE_SCHEMA=1 and review the diff",
        path.display()
    );
}

/// Every kind of input and output the model has is in the schema.
#[test]
fn schema_names_every_kind() {
    let text = schema_text();
    for kind in ["accept", "client_receive", "speech_started", "frame_played"] {
        assert!(
            text.contains(&format!("\"{kind}\"")),
            "input kind {kind} missing"
        );
    }
    for kind in [
        "delivered",
        "late_dropped",
        "stop_answered",
        "reconcile_enqueued",
        "rendered",
        "terminal",
    ] {
        assert!(
            text.contains(&format!("\"{kind}\"")),
            "output kind {kind} missing"
        );
    }
}
