#!/usr/bin/env bash
# Exhaustive exploration of both machines at the CI bounds, in release, with the state-space
# counts pinned in snapshots/deep_explore_counts.snap; at the deeper bounds (three turns, three
# queued requests: snapshots/deep_explore_deeper_counts.snap); and of the fence bounds again with
# symmetry reduction (snapshots/deep_explore_symmetry_counts.snap); and every turn CI set walked
# again, each step held to leave the parts it did not change shared (tests/it/shared_parts.rs);
# and with sleep sets (tests/it/reduction.rs): every CI set explored reduced beside unreduced
# (the same states and verdict, the reduced counts in snapshots/deep_explore_reduced_counts.snap).
# Cost: a release build of the tests (about 2 minutes on 2 cores) and a few minutes of
# exploration and walking on both cores (59 s on 2026-12-04 before the reduced runs; 3.6 GB at
# the peak). Two walks of the sleep sets take longer than all that and are run by hand
# (`cargo test --release -p turnfence-checks --test it by_hand -- --ignored`: every pair of
# inputs the footprints call independent taken in both orders at every state of every CI set,
# and every planted turn flaw hunted reduced; 490-572 s with them on 2026-12-06, under load).
set -euo pipefail
cd "$(dirname "$0")/.."
refs=$(mktemp)
trap 'rm -f "$refs"' EXIT
INSTA_UPDATE=no CI=true INSTA_SNAPSHOT_REFERENCES_FILE="$refs" \
  cargo test --release -p turnfence-checks --test it explore -- --include-ignored
for snap in snapshots/deep_*.snap; do
  grep -qF "$(basename "$snap")" "$refs" || { echo "orphaned deep snapshot: $snap"; exit 1; }
done
echo "ok: exhaustive at the CI bounds, counts as pinned"
