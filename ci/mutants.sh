#!/usr/bin/env bash
# Mutation testing: does every branch that judges have a test that fails without it?
# cargo-mutants mutates the files `.cargo/mutants.toml` names (the model, the checker's trace
# reading and conformance, the lab dialect's reader), and a mutant counts as caught only if the
# whole workspace's `cargo test` fails on it. The gate fails on any mutant no test catches
# (missed) or that makes the tests hang (timeout); a mutant that does not build (unviable) is
# fine. A mutant shown equivalent to the original is listed, by name and with its reason, in the
# configuration's `exclude_re`.
#
# Two parts:
#   1. the change: every mutant in the lines touched since the previous main (`--in-diff`). The
#      base is MUTANTS_BASE if set; else, on a branch other than main, its merge-base with main;
#      else HEAD~1 (CI's clone is of main, whose last commit is the change). A diff that touches
#      no examined file skips this part, saying so.
#   2. a rotating shard: shard k of N, mutants dealt round-robin (every file sampled), k = the
#      commit count mod N, so successive commits walk through all N shards. MUTANTS_SHARD=k/N
#      picks one; MUTANTS_SHARD=none skips this part.
# The full run is the N shards, `--shard 0/N` … `--shard N-1/N`, for a nightly job's matrix
# (README, "Mutation testing").
#
# The tests run once unmutated first (cargo-mutants' own baseline runs only the mutated crate's
# tests, which for the model are none), and their time sets the timeout: 5x, at least 120 s.
# Under CI (CI=true, a throwaway clone) mutants are applied in place and reuse target/;
# elsewhere each run copies the tree and its target/ to a scratch directory, so the work tree
# is never left mutated.
#
# Installs cargo-mutants if absent. Cost: one shard (N = 48, about 30 mutants) ~15 minutes on
# 2 cores (README gives the measured time), plus the diff's mutants, about 20 s each.
set -euo pipefail
cd "$(dirname "$0")/.."

SHARDS=48

command -v cargo-mutants >/dev/null || cargo install cargo-mutants --locked
cargo mutants --version

# A snapshot test failing on a mutant must not leave a pending snapshot behind.
export INSTA_UPDATE=no

out=target/mutants
mkdir -p "$out"
common=(--baseline=skip --no-times)
if [ "${CI:-}" = true ]; then
  common+=(--in-place)
fi

echo "== baseline: cargo test --workspace, unmutated"
start=$(date +%s)
cargo test --workspace -q >"$out/baseline.log" 2>&1 || { cat "$out/baseline.log"; exit 1; }
took=$(( $(date +%s) - start ))
timeout=$(( took * 5 > 120 ? took * 5 : 120 ))
echo "baseline passed in $took s; test timeout $timeout s"
common+=(--timeout "$timeout")

status=0

echo "== the change"
if [ -n "${MUTANTS_BASE:-}" ]; then
  base=$MUTANTS_BASE
elif [ "$(git rev-parse --abbrev-ref HEAD)" != main ] && git rev-parse -q --verify main >/dev/null; then
  base=$(git merge-base HEAD main)
else
  base=$(git rev-parse -q --verify HEAD~1 || true)
fi
if [ -z "$base" ]; then
  echo "no previous commit to diff against: part skipped"
else
  git diff --no-ext-diff "$base" >"$out/change.diff"
  n=$(cargo mutants --list --in-diff "$out/change.diff" 2>/dev/null | wc -l)
  if [ "$n" -eq 0 ]; then
    echo "the diff against $(git rev-parse --short "$base") touches no examined line: part skipped"
  else
    echo "$n mutants in the lines changed since $(git rev-parse --short "$base")"
    cargo mutants "${common[@]}" --in-diff "$out/change.diff" -o "$out/change" || status=$?
  fi
fi

echo "== a rotating shard"
shard=${MUTANTS_SHARD:-$(( $(git rev-list --count HEAD) % SHARDS ))/$SHARDS}
if [ "$shard" = none ]; then
  echo "MUTANTS_SHARD=none: part skipped"
else
  echo "shard $shard (round-robin; reproduce with MUTANTS_SHARD=$shard bash ci/mutants.sh)"
  cargo mutants "${common[@]}" --shard "$shard" -o "$out/shard" || { rc=$?; [ "$status" -ne 0 ] || status=$rc; }
fi

if [ "$status" -ne 0 ]; then
  for f in "$out"/{change,shard}/mutants.out/{missed,timeout}.txt; do
    [ -s "$f" ] && { echo "-- $f"; cat "$f"; }
  done
  echo "mutation testing failed (cargo-mutants exit $status: 2 = a mutant missed, 3 = a timeout);"
  echo "kill each with a test that states the rule it breaks, or list it in .cargo/mutants.toml"
  echo "as equivalent with the reason (the diff of each is in $out/*/mutants.out/diff/)"
fi
exit "$status"
