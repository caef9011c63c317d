//! The one integration-test binary: modules by subject, shared helpers here.

mod adapter;
mod cli;
mod explore;
mod fence;
mod fixtures;
mod flaws;
mod fuzz;
mod gate;
mod model;
mod peer;
mod schema;
mod snapshots;
mod streaming;
mod third_machine;

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
pub fn snapshot_settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/../snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings
}
