#!/usr/bin/env bash
# The library as a user meets it: rustdoc without a warning (the doctests themselves run with the
# tests), and both crates packaged and verified together as they would be published (and the
# code-less snapshots package, which publish = false keeps off a registry). Cost: a doc
# build and a verification build of the two packaged crates, about a minute on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --workspace
# A package of the same version left by an earlier run would be reused unchanged: cargo keeps the
# packaged crates under target/package and unpacks them, for verifying the crates that depend on
# them, into a registry source directory it does not refresh while the version stays the same.
rm -rf target/package "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/turnfence-*-0.1.0
# And the verification builds a packaged crate as a registry crate in target/debug, whose
# fingerprint does not follow its source: a build an earlier run left of the same version would be
# linked against (no later gate builds in target/debug).
rm -rf target/debug/.fingerprint/turnfence-* target/debug/deps/libturnfence_* \
  target/debug/deps/turnfence_*
cargo package --workspace --allow-dirty
echo "ok: docs clean, both crates package and verify"
