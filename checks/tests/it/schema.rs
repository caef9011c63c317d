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

/// Each kind of `field` (`input`, `output`) the schema names, with how many properties its object
/// has beside the tag.
fn fields_by_tag(schema: &Value, field: &str, out: &mut std::collections::BTreeMap<String, usize>) {
    match schema {
        Value::Object(o) => {
            let properties = o.get("properties").and_then(Value::as_object);
            if let Some((c, p)) = properties.and_then(|p| {
                let tag = p.get(field)?.get("const")?.as_str()?;
                Some((tag, p))
            }) {
                out.insert(c.to_owned(), p.len() - 1);
            }
            o.values().for_each(|v| fields_by_tag(v, field, out));
        }
        Value::Array(a) => a.iter().for_each(|v| fields_by_tag(v, field, out)),
        _ => {}
    }
}

/// `InputKind::name` (what the explorer's coverage points are named by, without serializing the
/// input) is the kind's `input` tag in the canonical form, and the checker takes a kind as bare
/// (a line of it may carry no key but `at`, `session` and its tag) exactly when the published
/// schema gives it no field: for every input of 200 generated cases under each profile, and
/// between them every kind the published schema names.
#[test]
fn an_input_kind_is_named_by_its_tag_and_bare_without_fields() {
    use turnfence_checks::fuzz;
    use turnfence_checks::trace::conform::Conform;
    use turnfence_model::turn::{Profile, TurnMachine};

    let schema: Value = serde_json::from_str(&schema_text()).unwrap();
    let mut fields = std::collections::BTreeMap::new();
    fields_by_tag(&schema, "input", &mut fields);
    let mut named = std::collections::BTreeSet::new();
    for &profile in Profile::ALL {
        for case in 0..200 {
            let make = || TurnMachine::new().profiled(profile);
            for input in fuzz::generate::<TurnMachine>(fuzz::case_seed(7, case), 60, &make).inputs {
                let tag = serde_json::to_value(&input).unwrap()["input"].clone();
                assert_eq!(Value::from(input.kind.name()), tag, "{input:?}");
                let bare = fields.get(input.kind.name()) == Some(&0);
                assert_eq!(TurnMachine::is_bare(&input), bare, "{input:?}");
                named.insert(input.kind.name().to_owned());
            }
        }
    }
    let published: std::collections::BTreeSet<String> = fields.into_keys().collect();
    assert!(
        published.contains("accept") && published.contains("client_receive"),
        "{published:?}"
    );
    assert_eq!(named, published, "the generated cases name every kind");
}
