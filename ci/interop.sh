#!/usr/bin/env bash
# LiveKit Agents ground truth: run the real AgentSession of each pinned livekit-agents version
# offline (interop/livekit/harness.py: scripted fake VAD, STT, LLM, TTS and audio I/O, no room,
# no network), one process per scenario, and compare what it emits with the committed
# fixtures/interop/livekit-agents@VERSION/*.jsonl after normalizing the fields that vary from
# run to run (interop/livekit/compare.py). Fails, printing the first difference of each
# differing file, on anything else.
#
#   ci/interop.sh               record into a temp dir and compare with fixtures/interop
#   ci/interop.sh --write       record and rewrite fixtures/interop instead
#   ci/interop.sh --repeat N    record everything N times, comparing every round (stability)
#   ci/interop.sh --only NAME   only the scenario NAME (repeatable)
#   INTEROP_JOBS=N              scenario processes run at once (default 4)
#
# Versions: one per interop/livekit/requirements-VERSION.txt. Their venvs live in
# target/interop/venv-VERSION (gitignored), installed with `pip install --no-deps -r` from the
# lock file and reused while the lock file's hash is unchanged. The sessions run in real time
# (about 10-15 s each); the whole run takes about 2-3 minutes on 2 cores from a cold cache.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)

mode=compare
repeat=1
only=()
jobs=${INTEROP_JOBS:-4}
while [ $# -gt 0 ]; do
  case "$1" in
    --write) mode=write ;;
    --repeat) repeat=$2; shift ;;
    --only) only+=("$2"); shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "interop: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

here=interop/livekit
fixtures=fixtures/interop
python=${PYTHON:-python3}

versions=()
for lock in "$here"/requirements-*.txt; do
  v=${lock##*/requirements-}
  versions+=("${v%.txt}")
done
[ ${#versions[@]} -gt 0 ] || { echo "interop: no lock files in $here" >&2; exit 1; }

# -- venvs, one per version, installed in parallel -------------------------------------------
install() {
  local v=$1 venv=target/interop/venv-$1 lock=$here/requirements-$1.txt want
  want=$(sha256sum "$lock" | cut -d' ' -f1)
  if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.lock-sha256" 2>/dev/null)" = "$want" ]; then
    echo "interop: venv-$v up to date"
    return 0
  fi
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$lock"
  echo "$want" > "$venv/.lock-sha256"
  echo "interop: venv-$v installed from $lock"
}
mkdir -p target/interop
pids=()
for v in "${versions[@]}"; do
  install "$v" > "target/interop/install-$v.log" 2>&1 &
  pids+=($!)
done
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then
    cat "target/interop/install-${versions[$i]}.log"
    echo "interop: installing livekit-agents ${versions[$i]} failed" >&2
    exit 1
  fi
  cat "target/interop/install-${versions[$i]}.log"
done
echo "interop: venvs ready after $(( $(date +%s) - started )) s"

# -- record --------------------------------------------------------------------------------
if [ ${#only[@]} -gt 0 ]; then
  scenarios=("${only[@]}")
else
  mapfile -t scenarios < <("$python" "$here/script.py")
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/interop.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

record() {  # record ROUND: every scenario of every version into $tmp/ROUND
  local round=$1 list=$tmp/jobs-$1
  : > "$list"
  for s in "${scenarios[@]}"; do
    for v in "${versions[@]}"; do
      echo "$v $s" >> "$list"
    done
  done
  mkdir -p "$tmp/$round" "$tmp/logs-$round"
  # each line: VERSION SCENARIO; a failed harness run leaves its log and a .failed marker
  xargs -P "$jobs" -L 1 sh -c '
    v=$1; s=$2
    if ! target/interop/venv-$v/bin/python '"$here"'/harness.py --scenario "$s" \
        --out '"$tmp/$round"' > '"$tmp/logs-$round"'/$v-$s.log 2>&1; then
      touch '"$tmp/logs-$round"'/$v-$s.failed
    fi' sh < "$list"
  local failed=0
  for f in "$tmp/logs-$round"/*.failed; do
    [ -e "$f" ] || continue
    failed=1
    log=${f%.failed}.log
    echo "interop: harness failed: ${log##*/}" >&2
    tail -n 30 "$log" >&2
  done
  return $failed
}

status=0
for round in $(seq 1 "$repeat"); do
  t=$(date +%s)
  record "$round" || { echo "interop: round $round: a scenario failed to run" >&2; exit 1; }
  echo "interop: round $round recorded ${#scenarios[@]} scenarios x ${#versions[@]} versions in $(( $(date +%s) - t )) s"
  if [ "$mode" = write ] && [ "$round" = 1 ]; then
    for v in "${versions[@]}"; do
      dir=$fixtures/livekit-agents@$v
      mkdir -p "$dir"
      if [ ${#only[@]} -eq 0 ]; then
        rm -f "$dir"/*.jsonl
      fi
      cp "$tmp/1/livekit-agents@$v"/*.jsonl "$dir"/
    done
    echo "interop: wrote $fixtures"
  fi
  if [ ${#only[@]} -gt 0 ]; then
    # compare only what was recorded
    ref=$tmp/ref-$round
    for v in "${versions[@]}"; do
      mkdir -p "$ref/livekit-agents@$v"
      for s in "${scenarios[@]}"; do
        cp "$fixtures/livekit-agents@$v/$s".*.jsonl "$ref/livekit-agents@$v/" 2>/dev/null || true
      done
    done
  else
    ref=$fixtures
  fi
  if ! "$python" "$here/compare.py" "$ref" "$tmp/$round"; then
    status=1
  fi
done

echo "interop: done in $(( $(date +%s) - started )) s"
exit $status
