//! The one integration-test binary: modules by subject, shared helpers here.

/// The allocator the `turnfence` binary runs on, so that the deep explorations CI runs here cost
/// what the command costs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod adapter;
mod cli;
mod cli_check;
mod dialect_choice;
mod evidence;
mod explore;
mod fence;
mod fence_rules;
mod field_bounds;
mod fifth_dialect;
mod fixtures;
mod flaws;
mod fuzz;
mod gate;
mod hostile;
mod interop;
mod live;
mod live_cli;
mod livekit_speech;
mod mangled;
mod model;
mod model_rules;
mod monitors;
mod monitors_reach;
mod mutation;
mod peer;
mod pipecat_replies;
mod read_once;
mod readers;
mod realtime_playback;
mod report;
// Runs the recorder's tokio example, and tokio is not built under `--cfg loom`.
#[cfg(not(loom))]
mod recorder;
#[cfg(not(loom))]
mod recorder_live;
mod reduction;
mod schema;
mod shared_parts;
mod snapshots;
mod streaming;
mod symmetry;
mod third_machine;
mod turn_symmetry;

#[path = "../support/plain_walk.rs"]
mod plain_walk;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// The seed every random test draws from: `TURNFENCE_SEED` if set, else a fixed one. Same seed,
/// same cases.
pub fn seed() -> u64 {
    #[allow(clippy::disallowed_methods)] // Tests take their seed from the environment, by design.
    let var = std::env::var("TURNFENCE_SEED");
    var.ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x7475_726e_6665_6e63)
}

/// A proptest runner seeded from [`seed`]; `PROPTEST_CASES` still sets the number of cases.
pub fn runner(seed: u64) -> TestRunner {
    runner_with(
        seed,
        Config {
            failure_persistence: None,
            ..Config::default()
        },
    )
}

/// A seeded proptest runner with a given configuration.
pub fn runner_with(seed: u64, config: Config) -> TestRunner {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
}

/// insta settings that keep every snapshot in the workspace's top-level `snapshots/`.
/// A random walk over a machine's bounded alphabet from where exploring starts (the machine as
/// the bounds make it, after its prelude): at each step the input `choice` picks, modulo the
/// alphabet's length, taken and observed; it stops early where the alphabet is empty.
pub fn walk<M: turnfence_checks::explore::Explore>(
    make: &dyn Fn() -> M,
    bounds: &M::Bounds,
    choices: &[u8],
) -> (M, M::Monitor) {
    use turnfence_model::Monitor as _;
    let (mut m, mut mon) = turnfence_checks::explore::start(&|| make().bounded(bounds));
    for &choice in choices {
        let inputs = m.alphabet(bounds);
        if inputs.is_empty() {
            break;
        }
        let input = &inputs[choice as usize % inputs.len()];
        let (steps, _) = turnfence_checks::shared::take(&mut m, input);
        steps.iter().for_each(|s| drop(mon.observe(s)));
    }
    (m, mon)
}

pub fn snapshot_settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/../snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings
}

/// The trace files (`*.jsonl`) in `fixtures/<dir>/`, sorted.
pub fn fixtures(dir: &str) -> Vec<PathBuf> {
    fixture_files(dir, "jsonl")
}

/// The files `*.<ext>` in `fixtures/<dir>/`, sorted.
pub fn fixture_files(dir: &str, ext: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures")
        .join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    files.sort();
    files
}

/// The interop corpus: every log a real stack's own code wrote (`fixtures/interop/STACK@VERSION/`),
/// sorted.
pub fn interop_corpus() -> Vec<PathBuf> {
    corpus("interop")
}

/// Generated sessions of the real stacks kept for their cause (`fixtures/generated/STACK@VERSION/`,
/// each counterexample the generators shrank, once the checker judges it right), sorted.
pub fn generated_corpus() -> Vec<PathBuf> {
    corpus("generated")
}

/// Generated sessions the checker still judges wrongly (`fixtures/open/STACK@VERSION/`): each
/// meta line says the verdict that is right, and the test holds that the checker does not give it
/// yet, so a fix moves the file to `fixtures/generated/`.
pub fn open_corpus() -> Vec<PathBuf> {
    corpus("open")
}

/// The logs in every `STACK@VERSION` folder of `fixtures/<dir>/`, sorted.
fn corpus(dir: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures")
        .join(dir);
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(&root) else {
        return files;
    };
    for entry in entries {
        let entry = entry.unwrap().path();
        if entry.is_dir() {
            let name = entry
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            files.extend(fixtures(&format!("{dir}/{name}")));
        }
    }
    files.sort();
    files
}

/// Under livekit-agents, a reply that played all its audio (two frames) before the user spoke
/// over it: the speech, lasting 500 ms, pauses it at 600 ms with nothing left buffered.
pub const PAUSED_AFTER_PLAYING_ALL: [&str; 5] = [
    r#"{"at":0,"input":"accept","turn":"t1","generation":1,"mode":"audio"}"#,
    r#"{"at":10,"input":"delta","turn":"t1","generation":1,"seq":1,"frames":2}"#,
    r#"{"at":50,"input":"frame_played","frames":2}"#,
    r#"{"at":100,"input":"speech_started","confidence":0.9}"#,
    r#"{"at":600,"input":"tick"}"#,
];

/// `m` run through `lines` (each a JSON input, as a canonical trace's line holds it, without its
/// session), every one accepted: its steps.
pub fn run_lines<M: turnfence_model::Machine>(
    m: &mut M,
    lines: &[impl AsRef<str>],
) -> Vec<turnfence_model::StepOf<M>>
where
    M::Input: serde::de::DeserializeOwned,
{
    let inputs: Vec<M::Input> = lines
        .iter()
        .map(|line| serde_json::from_str(line.as_ref()).expect("an input"))
        .collect();
    let (steps, refused) = turnfence_model::run(m, &inputs);
    assert!(refused.is_none(), "{refused:?}");
    steps
}

/// Steps `m` through `inputs` (each a JSON input, as a canonical trace's line holds it, without
/// its session), every one accepted; returns the outputs of the last.
pub fn last_outputs<M: turnfence_model::Machine>(m: &mut M, inputs: &[&str]) -> Vec<M::Output>
where
    M::Input: serde::de::DeserializeOwned,
{
    let mut last = Vec::new();
    for text in inputs {
        let input: M::Input = serde_json::from_str(text).unwrap();
        let mut steps = Vec::new();
        turnfence_model::step(m, &input, &mut steps).unwrap();
        last = steps.into_iter().flat_map(|s| s.outputs).collect();
    }
    last
}

/// The meta data of a fixture's text: its first line's `meta` object.
pub fn meta(text: &str) -> serde_json::Value {
    let first: serde_json::Value =
        serde_json::from_str(text.lines().next().unwrap_or_default()).unwrap();
    first["meta"].clone()
}

/// A fixture's own keys, under its meta line's `fixture` (what it expects, where its bug is, its
/// story), which `check` ignores by rule.
pub fn fixture(text: &str) -> serde_json::Value {
    meta(text)["fixture"].clone()
}

/// The inputs of a log's effective trace, as JSON: `<dialect> <the input as JSON> <the lines it
/// came of>`.
pub fn effective_inputs(log: &str) -> Vec<serde_json::Value> {
    let v = turnfence_checks::dialect::check_input_keeping(
        log.as_bytes(),
        &Default::default(),
        turnfence_checks::trace::Keep::Effective,
    )
    .verdict
    .unwrap();
    v.effective
        .iter()
        .map(|l| {
            let json = &l[l.find('{').unwrap()..];
            serde_json::Deserializer::from_str(json)
                .into_iter()
                .next()
                .unwrap()
                .unwrap()
        })
        .collect()
}

/// `log` with the first `from` made `to`, which it must hold (else the test would judge the
/// log unchanged).
pub fn edited(log: &str, from: &str, to: &str) -> String {
    let out = log.replacen(from, to, 1);
    assert_ne!(out, log, "{from} is not in the log");
    out
}

/// A file the tests read (a fixture, a report they wrote).
pub fn read(path: &Path) -> String {
    #[allow(clippy::disallowed_methods)] // Fixtures and reports are the tests' input.
    let text = std::fs::read_to_string(path);
    text.unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A LiveKit event log as LiveKit's own `model_dump` writes it: each speech's own
/// `allow_interruptions`, which the corpus states beside `speech_created`, taken out again.
pub fn without_speech_flags(text: &str) -> String {
    let mut out = String::new();
    let mut taken = 0;
    for line in text.lines() {
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["type"] == "speech_created" {
            let flag = v.as_object_mut().unwrap().remove("allow_interruptions");
            taken += usize::from(flag.is_some());
            out.push_str(&v.to_string());
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    assert!(taken > 0, "no speech's flag stated");
    out
}

/// The invariants of `V` a run never put to the test (a model that does nothing cannot pass).
pub fn unreached<V: turnfence_model::Invariant>(reached: &BTreeSet<V>) -> Vec<&'static str> {
    V::ALL
        .iter()
        .filter(|i| !reached.contains(*i))
        .map(|i| i.name())
        .collect()
}

/// Whether `path`, replayed from `start` (a machine and its monitor), breaks `invariant` at its
/// last input; every input must be taken (`what` names the run if one is refused).
pub fn replays_to<M: turnfence_model::Machine>(
    (mut machine, mut monitor): (M, M::Monitor),
    path: &[M::Input],
    invariant: M::Invariant,
    what: &str,
) -> bool {
    use turnfence_model::Monitor as _;
    let mut last = Vec::new();
    for input in path {
        let (steps, ok) = turnfence_checks::shared::take(&mut machine, input);
        assert!(ok, "{what}: {input:?} refused on replay");
        last = steps.iter().flat_map(|s| monitor.observe(s)).collect();
    }
    last.iter().any(|v| v.invariant == invariant)
}
