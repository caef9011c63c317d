#!/usr/bin/env bash
# Generated sessions of the real stacks (docs/TESTING.md, "Generated sessions"): for every stack
# under interop/ with a generate.py and every version it pins, a seeded sample of sessions drawn
# by hypothesis and run through the stack's own code in virtual time, unpatched and with a
# planted regression drawn per session, each judged by the oracles (interop/oracle.py). The
# run's causes of sessions not as the oracles expect are held to ci/generated.baseline.json
# (interop/tally.py): more sessions of a cause than the baseline holds, or a new cause, fails;
# the open causes are kept, one log each, in fixtures/open/. A dimension of a stack's sessions
# that no session hit fails too (the generator says which).
#
#   ci/generated.sh                    the CI sample (600 unpatched, 200 patched, or what a
#                                      stack's ci.env says: GEN_COUNT, GEN_PATCHED)
#   ci/generated.sh --write-baseline   run the sample and write its causes as the baseline
#   GEN_SEED=S GEN_COUNT=N             another seed or size (a longer run: GEN_COUNT=10000;
#                                      its causes are printed, held to no baseline)
#
# Needs the stacks' venvs (ci/interop.sh makes them; .ci/run runs it first) and installs
# interop/requirements-generate.txt into each. Cost on CI's 2 cores: docs/TESTING.md.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)

SEED=${GEN_SEED:-1}
write=""
[ "${1:-}" = --write-baseline ] && write=--write-baseline
baseline=ci/generated.baseline.json
# A baseline holds the CI sample alone: another seed or size is printed, not held.
held=yes
if [ -n "${GEN_SEED:-}${GEN_COUNT:-}${GEN_PATCHED:-}" ]; then
  held=""
fi
# A stack's sample sizes: GEN_COUNT and GEN_PATCHED of its ci.env (enough sessions for every
# dimension its generator names to be hit), else 600 and 200.
setting() {  # setting STACK KEY DEFAULT
  local value=""
  [ -f "interop/$1/ci.env" ] && value=$(sed -n "s/^$2=//p" "interop/$1/ci.env" | tail -n 1)
  echo "${value:-$3}"
}

cargo build --release -q -p turnfence-checks --bin turnfence
bin=$PWD/target/release/turnfence
tmp=$(mktemp -d "${TMPDIR:-/tmp}/generated.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

status=0
for dir in interop/*/; do
  stack=$(basename "$dir")
  [ -f "$dir/generate.py" ] || continue
  COUNT=${GEN_COUNT:-$(setting "$stack" GEN_COUNT 600)}
  PATCHED=${GEN_PATCHED:-$(setting "$stack" GEN_PATCHED 200)}
  for lock in "$dir"requirements-*.txt; do
    v=${lock##*/requirements-}
    v=${v%.txt}
    venv=target/interop/$stack/venv-$v
    [ -x "$venv/bin/python" ] || { echo "generated: no venv $venv (run ci/interop.sh first)" >&2; exit 1; }
    "$venv/bin/python" -c "import hypothesis" 2>/dev/null \
      || "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -r interop/requirements-generate.txt
    for kind in unpatched patched; do
      out=$tmp/$stack-$v-$kind
      args=(--seed "$SEED" --count "$COUNT" --survey)
      if [ "$kind" = patched ]; then
        args=(--seed "$SEED" --count "$PATCHED" --survey --patches all --no-coverage)
      fi
      # A generator that keeps only its failing sessions' logs unless asked keeps them all.
      if grep -q '"--keep"' "$dir/generate.py"; then
        args+=(--keep)
      fi
      t=$(date +%s)
      # The generator's own verdict is the oracles' over its sessions: tally.py holds it to the
      # baseline instead; what it says of coverage is read here.
      "$venv/bin/python" "$dir/generate.py" "${args[@]}" --turnfence "$bin" --out "$out" \
        > "$out.log" 2>&1 || true
      unhit=$( (grep -i "dimensions not hit" "$out.log" || true) | head -n 1 | sed 's/.*not hit[^:]*: *//')
      key="$stack@$v $kind"
      echo "### $key: $(( $(date +%s) - t )) s"
      if [ "$kind" = unpatched ] && [ -n "$unhit" ] && [ "$unhit" != none ]; then
        echo "generated: $key: dimensions no session hit: $unhit"
        status=1
      fi
      if ! grep -q "reproduce" "$out.log"; then
        echo "generated: $key: the generator did not finish:"; tail -n 30 "$out.log"
        status=1
        continue
      fi
      if [ -n "$held" ]; then
        python3 interop/tally.py "$bin" "$out" --baseline "$baseline" --key "$key" $write || status=1
      else
        python3 interop/tally.py "$bin" "$out" --key "$key" || true
      fi
    done
  done
done
echo "generated: done in $(( $(date +%s) - started )) s"
exit $status
