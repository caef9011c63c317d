#!/usr/bin/env bash
# The main gate: format, lints, the tests (the README's test command), the snapshot check and the
# model's purity. Cost: about 2 minutes on 2 cores from a cold target/ directory.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== fmt"
cargo fmt --all -- --check

echo "== clippy (default features: every planted path of the model is generic code, checked here;"
echo "   then the CLI with its flaw switch, the --flaw path)"
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy -p turnfence-checks --all-targets --features flaws -- -D warnings

echo "== no pending snapshot committed (a passing test deletes its stale .snap.new, so look first)"
tracked=$(git ls-files -- '*.snap.new' '*.pending-snap' 2>/dev/null || true)
if [ -n "$tracked" ]; then
  echo "pending snapshots are committed (review them, commit the .snap files, remove these):"
  echo "$tracked"; exit 1
fi

echo "== tests (snapshots must match; insta records which ones the tests reference)"
refs=$(mktemp)
trap 'rm -f "$refs"' EXIT
INSTA_UPDATE=no CI=true INSTA_SNAPSHOT_REFERENCES_FILE="$refs" cargo test --workspace

echo "== snapshots: none pending, none orphaned"
pending=$(find . -path ./target -prune -o \( -name '*.snap.new' -o -name '*.pending-snap' \) -print)
if [ -n "$pending" ]; then
  echo "pending snapshots (review them, then commit the .snap files):"; echo "$pending"; exit 1
fi
orphans=0
for snap in snapshots/*.snap; do
  # deep_* snapshots belong to the release-only gates (ci/explore.sh checks them).
  case "$(basename "$snap")" in deep_*) continue ;; esac
  if ! grep -qF "$(basename "$snap")" "$refs"; then
    echo "orphaned snapshot (no test references it): $snap"; orphans=1
  fi
done
[ "$orphans" -eq 0 ]
echo "$(ls snapshots/*.snap | wc -l) snapshots, all referenced"

echo "== purity: the model depends on serde, three data-structure crates and a hasher alone"
# arrayvec (the fence ids' inline buffer), compact_str (the turn ids, inline short strings) and
# litemap (maps as sorted vectors) hold the states cheaply, and foldhash hashes the parts of a
# state that keep their hash (`Hashed`, under a fixed seed: model/clippy.toml bans its random
# seeds); like serde they do no IO, read no clock and start no thread.
deps=$(cargo tree -p turnfence-model -e normal --depth 1 --prefix none | tail -n +2 | awk '{print $1}' | sort -u | tr '\n' ' ')
if [ "$deps" != "arrayvec compact_str foldhash litemap serde " ]; then
  echo "turnfence-model may depend on serde, arrayvec, compact_str, foldhash and litemap only; it depends on:"; echo "$deps"; exit 1
fi
echo "ok: $deps"
