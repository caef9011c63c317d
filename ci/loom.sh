#!/usr/bin/env bash
# The concurrency adapter under loom: every interleaving of each scenario's threads within a
# preemption bound of 2, in release, with `--cfg loom` (its own target directory, so the normal
# builds stay cached). Prints each test's time and how many executions loom ran (for a planted
# variant: the execution that caught it). Cost: a loom release build of the tests (about 3
# minutes on 2 cores the first time) and a few seconds of checking.
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="--cfg loom"
export LOOM_MAX_PREEMPTIONS=2
export CARGO_TARGET_DIR=target/loom
cargo clippy -p turnfence-checks --tests -- -D warnings
cargo test --release -p turnfence-checks --test it --no-run
tests=$(cargo test --release -q -p turnfence-checks --test it adapter_ -- --list 2>/dev/null | sed -n 's/: test$//p')
[ -n "$tests" ] || { echo "no loom tests found"; exit 1; }
for t in $tests; do
  start=$(date +%s%N)
  out=$(cargo test --release -q -p turnfence-checks --test it "$t" -- --exact --nocapture 2>&1) \
    || { echo "$out"; echo "$t: FAILED"; exit 1; }
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  # The test prints how many executions loom ran (all of them, or up to the planted failure).
  explored=$(echo "$out" | sed -n 's/^loom: //p' | tail -n 1)
  [ -n "$explored" ] || { echo "$out"; echo "$t: no loom execution count (built without --cfg loom?)"; exit 1; }
  echo "$t: ok in $ms ms ($explored)"
done
