//! The published JSON Schemas of the canonical trace form, generated from the model's serde
//! types: `schema/canonical-trace.schema.json` (the turn machine's traces) and
//! `schema/fence-trace.schema.json` (the fence machine's, `"machine": "fence"` in the meta line)
//! must be what the types generate now; regenerate them with
//! `TURNFENCE_WRITE_SCHEMA=1 cargo test -p turnfence-checks --test it schema`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use turnfence_model::fence;
use turnfence_model::turn::{Input, Output};

/// One line of a canonical trace.
// Of a machine whose inputs are `I` and outputs `O`.
#[allow(dead_code)] // A description for the schema generator only.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
enum TraceLine<I, O> {
    /// The first line only: the case's meta data, and `complete`, the output kinds the log
    /// records completely.
    Meta { meta: Value },
    /// Something that happened to the system (`input` names the kind).
    Input {
        /// The session the line belongs to (default `main`).
        #[serde(default)]
        session: Option<String>,
        #[serde(flatten)]
        input: I,
    },
    /// Something the system did (`output` names the kind), observed at `at`.
    Output {
        at: u64,
        #[serde(default)]
        session: Option<String>,
        #[serde(flatten)]
        output: O,
    },
    /// The session is over.
    End {
        session: Option<String>,
        session_end: bool,
        #[serde(default)]
        at: Option<u64>,
    },
}

/// The schema of `TraceLine<I, O>` under `title`, as it is published.
fn generated<I: JsonSchema, O: JsonSchema>(title: &str) -> String {
    let mut schema = schemars::schema_for!(TraceLine<I, O>);
    schema.insert("title".to_owned(), title.into());
    serde_json::to_string_pretty(&schema).unwrap() + "\n"
}

fn schema_text() -> String {
    generated::<Input, Output>("turnfence canonical trace line")
}

fn fence_schema_text() -> String {
    generated::<fence::Input, fence::Output>("turnfence canonical fence trace line")
}

/// `now` is what `schema/{file}` holds (or, with `TURNFENCE_WRITE_SCHEMA` set, comes to hold).
fn assert_published(file: &str, now: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../schema")
        .join(file);
    #[allow(clippy::disallowed_methods)] // The test owns this file: it regenerates it on request.
    let write = std::env::var_os("TURNFENCE_WRITE_SCHEMA").is_some();
    if write {
        std::fs::write(&path, now).unwrap();
    }
    #[allow(clippy::disallowed_methods)]
    let published = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        published == now,
        "{} is stale: rerun with TURNFENCE_WRITE_SCHEMA=1 and review the diff",
        path.display()
    );
}

#[test]
fn published_schema_is_current() {
    assert_published("canonical-trace.schema.json", &schema_text());
}

#[test]
fn published_fence_schema_is_current() {
    assert_published("fence-trace.schema.json", &fence_schema_text());
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

/// Each kind of `field` (`input`, `output`) the schema names, with the properties its object has
/// beside the tag.
type Kinds = BTreeMap<String, BTreeSet<String>>;

fn fields_by_tag(schema: &Value, field: &str, out: &mut Kinds) {
    match schema {
        Value::Object(o) => {
            let properties = o.get("properties").and_then(Value::as_object);
            if let Some((c, p)) = properties.and_then(|p| {
                let tag = p.get(field)?.get("const")?.as_str()?;
                Some((tag, p))
            }) {
                let names = p.keys().filter(|k| *k != field).cloned().collect();
                out.insert(c.to_owned(), names);
            }
            o.values().for_each(|v| fields_by_tag(v, field, out));
        }
        Value::Array(a) => a.iter().for_each(|v| fields_by_tag(v, field, out)),
        _ => {}
    }
}

/// The fence schema describes the fence traces the checker reads: every input and output of
/// every fence fixture, accepted and rejected, is a kind the schema names, and each of its fields
/// (beside `at` and `session`, which every line may carry) one the schema gives that kind; an id
/// (a worker, task, root, token or req) is a plain string, inline. An input error's fixture is
/// held to it but for the line its error names. Between them the fixtures
/// name every kind of fence input the schema has.
#[test]
fn the_fence_schema_describes_the_fence_fixtures() {
    let schema: Value = serde_json::from_str(&fence_schema_text()).unwrap();
    let (mut inputs, mut outputs) = (Kinds::new(), Kinds::new());
    fields_by_tag(&schema, "input", &mut inputs);
    fields_by_tag(&schema, "output", &mut outputs);
    let mut seen = BTreeSet::new();
    let files = ["accepted", "rejected"]
        .into_iter()
        .flat_map(crate::fixtures);
    let mut lines = 0;
    for file in files {
        let text = crate::read(&file);
        if crate::meta(&text)["machine"] != "fence" {
            continue;
        }
        let meta = crate::fixture(&text);
        // An input error's fixture breaks the form at the line it names, and only there.
        let broken = (meta["expect"] == "input_error").then(|| meta["line"].as_u64().unwrap());
        for (n, line) in text.lines().enumerate().skip(1) {
            if broken == Some(n as u64 + 1) {
                continue;
            }
            let value: Value = serde_json::from_str(line).unwrap();
            let object = value.as_object().unwrap();
            let Some((field, kinds)) = [("input", &inputs), ("output", &outputs)]
                .into_iter()
                .find(|(field, _)| object.contains_key(*field))
            else {
                assert!(
                    object.contains_key("session_end"),
                    "{}:{}",
                    file.display(),
                    n + 1
                );
                continue;
            };
            let tag = object[field].as_str().unwrap();
            let known = kinds
                .get(tag)
                .unwrap_or_else(|| panic!("{}:{}: {tag}", file.display(), n + 1));
            for key in object
                .keys()
                .filter(|k| !["at", "session", field].contains(&k.as_str()))
            {
                assert!(
                    known.contains(key),
                    "{}:{}: {tag}.{key}",
                    file.display(),
                    n + 1
                );
            }
            seen.insert((field, tag.to_owned()));
            lines += 1;
        }
    }
    assert!(lines > 500, "{lines} fence lines");
    let inputs_seen: BTreeSet<_> = seen
        .iter()
        .filter(|(f, _)| *f == "input")
        .map(|(_, t)| t)
        .collect();
    assert_eq!(
        inputs_seen,
        inputs.keys().collect(),
        "the fixtures name every fence input"
    );
    // Ids are `String`'s schema, in place: no definition of their own to look up.
    let compact = schema.to_string();
    assert!(
        !compact.contains("#/$defs/String"),
        "an id's schema is a definition"
    );
    assert!(
        compact.contains(r#""worker":{"type":"string"}"#),
        "a worker is not a string"
    );
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
    let mut fields = Kinds::new();
    fields_by_tag(&schema, "input", &mut fields);
    let mut named = BTreeSet::new();
    for &profile in Profile::ALL {
        for case in 0..200 {
            let make = || TurnMachine::new().profiled(profile);
            for input in fuzz::generate::<TurnMachine>(fuzz::case_seed(7, case), 60, &make).inputs {
                let tag = serde_json::to_value(&input).unwrap()["input"].clone();
                assert_eq!(Value::from(input.kind.name()), tag, "{input:?}");
                let bare = fields
                    .get(input.kind.name())
                    .is_some_and(BTreeSet::is_empty);
                assert_eq!(TurnMachine::is_bare(&input), bare, "{input:?}");
                named.insert(input.kind.name().to_owned());
            }
        }
    }
    let published: BTreeSet<String> = fields.into_keys().collect();
    assert!(
        published.contains("accept") && published.contains("client_receive"),
        "{published:?}"
    );
    assert_eq!(named, published, "the generated cases name every kind");
}
