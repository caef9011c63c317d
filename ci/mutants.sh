#!/usr/bin/env bash
# Mutation testing: does every branch that judges have a test that fails without it?
# cargo-mutants mutates the files `.cargo/mutants.toml` names (the model, the checker's trace
# reading and conformance, the dialects' readers), and a mutant counts as caught only if the
# whole workspace's `cargo test` fails on it, or hangs past the timeout (a hang is caught: CI's
# own time limit would stop it; cargo-mutants counts these apart and they are listed). The gate
# fails on any mutant no test catches (missed), read from missed.txt because cargo-mutants' exit
# code says "timeout" (3) before "missed" (2); a mutant that does not build (unviable) is fine.
# A mutant shown equivalent to the original is listed, by name and with its reason, in the
# configuration's `exclude_re` (cargo-mutants 27.1 skips them, but for its "delete field" mutants,
# which it tests anyway: the gate sets those apart from the missed by the same list). Before
# anything is built, each entry must name exactly one mutant of the code as it is (one whose code
# moved names none): the gate fails on a stale entry.
#
# Two parts:
#   1. the change: the mutants in the lines touched since the previous main (`--in-diff`). The
#      base is MUTANTS_BASE if set; else, on a branch other than main, its merge-base with main;
#      else the commit `ci/mutants.base` records, if the clone holds it as an ancestor (the main
#      the change started from: whoever lands a change sets it so, and CI's run of main tests the
#      whole change, not its last commit alone); else HEAD~1. A diff that touches
#      no examined file skips this part, saying so. A big change is capped: beyond
#      MUTANTS_DIFF_CAP mutants (16; 0 for no cap) it runs shard 0 of the fewest round-robin shards
#      of the diff's mutants that each hold at most the cap (every file sampled, the same subset
#      every time), and prints how many it left out and the command that runs the rest.
#   2. a rotating shard: shard k of N, mutants dealt round-robin (every file sampled), k = the
#      commit count mod N, so successive commits walk through all N shards. MUTANTS_SHARD=k/N
#      picks one; MUTANTS_SHARD=none skips this part. It is a sample: a shard no commit has run
#      yet may still hold a mutant no test catches, and the commit that draws it fails until the
#      mutant is killed or shown equivalent.
# The full run is the N shards, `--shard 0/N` … `--shard N-1/N`, for a nightly job's matrix
# (docs/TESTING.md, "Mutation testing").
#
# With neither part to run (the change touches no examined line, MUTANTS_SHARD=none) nothing is
# built. Otherwise the tests run once unmutated first (cargo-mutants' own baseline runs only the
# mutated crate's tests, which for the model are none), and their time sets the timeout: 5x, at
# least 120 s.
# Everything is built with the `mutants` profile (opt-level 1, root Cargo.toml), the baseline too.
# Under CI (CI=true, a throwaway clone) mutants are applied in place and reuse target/;
# elsewhere each run copies the tree, without its target/, to a scratch directory, so the work
# tree is never left mutated, and builds in the tree's own target/ (CARGO_TARGET_DIR, absolute,
# unless already set), reusing its dependencies.
#
# Budget: MUTANTS_BUDGET_S (2100 s, 35 minutes) for the whole script, installing cargo-mutants
# included; past it the running cargo-mutants is stopped and the gate fails, saying so. Cost,
# measured on CI's 2 cores (2026-12-06): the baseline's build about 200 s (its dependencies at
# opt-level 3 included), its tests about 22 s; some 31 s a mutant (71 mutants and one timeout took 2 478 s, which
# put the whole CI run past its hour). So N is 140 (3 605 mutants examined: 25 or 26 a shard,
# some 13 minutes) and the diff's cap 16 (some 8 minutes): about 25 minutes, leaving the other
# gates' 27 minutes inside the hour.
set -euo pipefail
cd "$(dirname "$0")/.."

SHARDS=140
CAP=${MUTANTS_DIFF_CAP:-16}
BUDGET_S=${MUTANTS_BUDGET_S:-2100}
begun=$(date +%s)

command -v cargo-mutants >/dev/null || cargo install cargo-mutants --version 27.1.0 --locked
cargo mutants --version

# A snapshot test failing on a mutant must not leave a pending snapshot behind.
export INSTA_UPDATE=no

out=target/mutants-out
mkdir -p "$out"
common=(--baseline=skip --no-times)
if [ "${CI:-}" = true ]; then
  common+=(--in-place)
else
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
fi

echo "== the mutants listed as equivalent"
# The configuration's exclude_re entries, one extended regex a line (each is a whole mutant name).
sed -n "/^exclude_re = \[/,/^\]/s/^ *'\(.*\)',\$/\1/p" .cargo/mutants.toml >"$out/equivalent.re"
[ -s "$out/equivalent.re" ] || { echo "no exclude_re entries read from .cargo/mutants.toml"; exit 1; }
# Each must still name exactly one mutant of the examined files: an entry whose code moved names
# none (or another), and the mutant it meant would count as missed when a shard draws it. Listed
# without the configuration, so that its exclusions do not hide what they name.
globs=()
while read -r g; do globs+=(-f "$g"); done < <(sed -n '/^examine_globs = \[/,/^\]/s/^ *"\(.*\)",$/\1/p' .cargo/mutants.toml)
[ "${#globs[@]}" -gt 0 ] || { echo "no examine_globs read from .cargo/mutants.toml"; exit 1; }
cargo mutants --list --no-config "${globs[@]}" >"$out/all.txt"
stale=0
while read -r re; do
  n=$(grep -cE -- "$re" "$out/all.txt" || true)
  if [ "$n" -ne 1 ]; then
    echo "exclude_re entry names $n mutants, not one (has its code moved?): $re"; stale=1
  fi
done <"$out/equivalent.re"
[ "$stale" -eq 0 ] || { echo "mutation testing failed: re-check each entry above and move it with its code"; exit 1; }
echo "$(wc -l <"$out/equivalent.re") mutants listed as equivalent, each found in the code"

status=0 missed=0 over=0
# One cargo-mutants run into $out/<name>: a missed mutant fails the gate; a timeout is listed.
run() {
  local name=$1 rc=0
  shift
  rm -rf "$out/$name"
  local left=$(( BUDGET_S - ($(date +%s) - begun) ))
  if [ "$left" -le 0 ]; then
    echo "the budget of $BUDGET_S s is spent before $name"; status=1; over=1; return
  fi
  # Stopped by the budget, cargo-mutants puts back the source it mutated in place.
  timeout --foreground "$left" cargo mutants "${common[@]}" "$@" -o "$out/$name" || rc=$?
  if [ "$rc" -eq 124 ]; then
    echo "the budget of $BUDGET_S s ran out during $name (what it tested so far: $out/$name/mutants.out)"
    status=1; over=1
  fi
  local res=$out/$name/mutants.out
  if [ -s "$res/timeout.txt" ]; then
    echo "caught by hanging the tests past ${timeout} s:"; cat "$res/timeout.txt"
  fi
  # cargo-mutants 27.1 does not apply exclude_re to its "delete field" mutants (its issue #632):
  # one the configuration names as equivalent is tested anyway, and set apart here.
  if [ -s "$res/missed.txt" ]; then
    grep -E -f "$out/equivalent.re" "$res/missed.txt" >"$res/equivalent.txt" || true
    grep -v -E -f "$out/equivalent.re" "$res/missed.txt" >"$res/missed-not-equivalent.txt" || true
    if [ -s "$res/equivalent.txt" ]; then
      echo "missed but listed as equivalent in .cargo/mutants.toml:"; cat "$res/equivalent.txt"
    fi
  fi
  if [ -s "$res/missed-not-equivalent.txt" ]; then
    echo "MISSED:"; cat "$res/missed-not-equivalent.txt"; status=1; missed=1
  elif [ "$rc" -ne 0 ] && [ "$rc" -ne 2 ] && [ "$rc" -ne 3 ] && [ "$rc" -ne 124 ]; then
    echo "cargo-mutants failed (exit $rc)"; status=1
  fi
}

# What to run, decided before anything is built: the change's mutants, a shard, or nothing.
echo "== the change"
change=()
if [ -n "${MUTANTS_BASE:-}" ]; then
  base=$MUTANTS_BASE
elif [ "$(git rev-parse --abbrev-ref HEAD)" != main ] && git rev-parse -q --verify main >/dev/null; then
  base=$(git merge-base HEAD main)
elif recorded=$(sed -n 's/^\([0-9a-f]\{7,40\}\)$/\1/p' ci/mutants.base 2>/dev/null) && [ -n "$recorded" ] \
    && git merge-base --is-ancestor "$recorded" HEAD 2>/dev/null; then
  base=$recorded
  echo "the base is the main ci/mutants.base records ($recorded)"
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
    change=(--in-diff "$out/change.diff")
    if [ "$CAP" -gt 0 ] && [ "$n" -gt "$CAP" ]; then
      parts=$(( (n + CAP - 1) / CAP ))
      kept=$(( (n + parts - 1) / parts ))
      echo "more than $CAP: testing shard 0/$parts of them (round-robin, $kept mutants), $(( n - kept )) left out;"
      echo "run them all with: MUTANTS_BASE=$(git rev-parse --short "$base") MUTANTS_DIFF_CAP=0 MUTANTS_SHARD=none bash ci/mutants.sh"
      change+=(--shard "0/$parts")
    fi
  fi
fi

echo "== a rotating shard"
shard=${MUTANTS_SHARD:-$(( $(git rev-list --count HEAD) % SHARDS ))/$SHARDS}
if [ "$shard" = none ]; then
  echo "MUTANTS_SHARD=none: part skipped"
else
  echo "shard $shard (round-robin; reproduce with MUTANTS_SHARD=$shard bash ci/mutants.sh)"
fi

if [ "${#change[@]}" -eq 0 ] && [ "$shard" = none ]; then
  echo "no mutant to test: nothing built (mutation testing took $(( $(date +%s) - begun )) s)"
  exit 0
fi

echo "== baseline: cargo test --workspace --profile mutants, unmutated"
start=$(date +%s)
cargo test --workspace --profile mutants --no-run -q >"$out/baseline.log" 2>&1 || { cat "$out/baseline.log"; exit 1; }
built=$(date +%s)
cargo test --workspace --profile mutants -q >>"$out/baseline.log" 2>&1 || { cat "$out/baseline.log"; exit 1; }
took=$(( $(date +%s) - built ))
timeout=$(( took * 5 > 120 ? took * 5 : 120 ))
echo "baseline built in $(( built - start )) s, passed in $took s; test timeout $timeout s"
common+=(--timeout "$timeout")

if [ "${#change[@]}" -gt 0 ]; then
  run change "${change[@]}"
fi
if [ "$shard" != none ]; then
  run shard --shard "$shard"
fi

if [ "$over" -ne 0 ]; then
  echo "mutation testing failed: over its budget (MUTANTS_BUDGET_S=$BUDGET_S); a slower machine"
  echo "needs fewer mutants a commit (more shards, a lower MUTANTS_DIFF_CAP)"
fi
if [ "$missed" -ne 0 ]; then
  echo "mutation testing failed: kill each missed mutant with a test that states the rule it"
  echo "breaks, or list it in .cargo/mutants.toml as equivalent with the reason (the diff of each"
  echo "is in $out/*/mutants.out/diff/)"
fi
echo "mutation testing took $(( $(date +%s) - begun )) s of its $BUDGET_S s"
exit "$status"
