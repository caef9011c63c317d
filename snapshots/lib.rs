//! The reviewed insta snapshots of the suite, one `*.snap` file each in this directory; no code.
//!
//! The tests write their snapshots here (`snapshot_settings()` in `checks/tests/it/main.rs`).
//! cargo-insta finds pending snapshots (`*.snap.new`) only under the directories of the
//! workspace's packages — each package's manifest directory and its targets' source
//! directories — so this directory is a package of its own: with it, `cargo insta review`,
//! `accept`, `reject` and `pending-snapshots`, run from the workspace root, see them.
