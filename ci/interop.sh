#!/usr/bin/env bash
# Interop ground truth: run the real client code of each voice-agent stack under interop/
# offline, one process per scenario, and compare what it records with the committed fixtures
# after normalizing the fields that vary from run to run. Fails, printing the first difference
# of each differing file, on anything else.
#
#   interop/livekit            LiveKit Agents' AgentSession with scripted fakes (no room, no
#                              network) -> fixtures/interop/livekit-agents@VERSION/
#   interop/openai-realtime    the OpenAI Agents SDK's realtime client against a scripted
#                              Realtime server on 127.0.0.1 -> fixtures/interop/openai-realtime@VERSION/
#   interop/pipecat            Pipecat's pipeline machinery (PipelineWorker, LLM, TTS, output
#                              transport) with scripted fakes, recorded by its observer
#                              -> fixtures/interop/pipecat@VERSION/
#
#   ci/interop.sh               record into a temp dir and compare with fixtures/interop
#   ci/interop.sh --write       record and rewrite fixtures/interop instead
#   ci/interop.sh --repeat N    record everything N times, comparing every round (stability)
#   ci/interop.sh --only NAME   only the scenario NAME, in whichever stack has it (repeatable)
#   ci/interop.sh --stack NAME  only the stack interop/NAME (repeatable)
#   INTEROP_JOBS=N              scenario processes run at once (default: the stack's JOBS, else 4)
#
# A stack is a directory interop/NAME with harness.py (--scenario NAME --out DIR), script.py
# (prints its scenario names; no packages needed), compare.py (EXPECTED_DIR ACTUAL_DIR), and one
# lock file requirements-VERSION.txt per version it runs. It may have a ci.env setting JOBS (its
# default parallelism) and PREFIX (the fixture directory's name before @VERSION; default: NAME,
# livekit-agents for livekit). Its venvs live in target/interop/NAME/venv-VERSION (gitignored),
# installed with `pip install --no-deps -r` from the lock file and reused while the lock file's
# hash is unchanged. The stacks run one after the other; every version of a stack at once.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)

mode=compare
repeat=1
only=()
want_stacks=()
while [ $# -gt 0 ]; do
  case "$1" in
    --write) mode=write ;;
    --repeat) repeat=$2; shift ;;
    --only) only+=("$2"); shift ;;
    --stack) want_stacks+=("$2"); shift ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "interop: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

fixtures=fixtures/interop
python=${PYTHON:-python3}

stacks=()
for dir in interop/*/; do
  s=$(basename "$dir")
  [ -f "$dir/harness.py" ] || continue
  if [ ${#want_stacks[@]} -gt 0 ] && [[ ! " ${want_stacks[*]} " == *" $s "* ]]; then
    continue
  fi
  stacks+=("$s")
done
for s in "${want_stacks[@]}"; do
  [ -f "interop/$s/harness.py" ] || { echo "interop: no stack interop/$s" >&2; exit 2; }
done
[ ${#stacks[@]} -gt 0 ] || { echo "interop: no stack to run" >&2; exit 1; }

# the fixture directory prefix and default parallelism of a stack
stack_setting() {  # stack_setting STACK KEY DEFAULT
  local value=""
  if [ -f "interop/$1/ci.env" ]; then
    value=$(sed -n "s/^$2=//p" "interop/$1/ci.env" | tail -n 1)
  fi
  echo "${value:-$3}"
}
prefix_of() {
  local default=$1
  [ "$1" = livekit ] && default=livekit-agents
  stack_setting "$1" PREFIX "$default"
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/interop.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p target/interop

# -- venvs, one per stack and version, installed in parallel ------------------------------------
install() {  # install STACK VERSION
  local stack=$1 v=$2 venv=target/interop/$1/venv-$2 lock=interop/$1/requirements-$2.txt want
  want=$(sha256sum "$lock" | cut -d' ' -f1)
  if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.lock-sha256" 2>/dev/null)" = "$want" ]; then
    echo "interop: $stack venv-$v up to date"
    return 0
  fi
  rm -rf "$venv"
  mkdir -p "target/interop/$stack"
  "$python" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$lock"
  echo "$want" > "$venv/.lock-sha256"
  echo "interop: $stack venv-$v installed from $lock"
}
declare -A versions_of
pids=()
labels=()
for s in "${stacks[@]}"; do
  vs=()
  for lock in interop/"$s"/requirements-*.txt; do
    [ -e "$lock" ] || continue
    v=${lock##*/requirements-}
    vs+=("${v%.txt}")
  done
  [ ${#vs[@]} -gt 0 ] || { echo "interop: no lock files in interop/$s" >&2; exit 1; }
  versions_of[$s]="${vs[*]}"
  for v in "${vs[@]}"; do
    install "$s" "$v" > "$tmp/install-$s-$v.log" 2>&1 &
    pids+=($!)
    labels+=("$s $v")
  done
done
for i in "${!pids[@]}"; do
  read -r s v <<< "${labels[$i]}"
  if ! wait "${pids[$i]}"; then
    cat "$tmp/install-$s-$v.log"
    echo "interop: installing the $s venv for $v failed" >&2
    exit 1
  fi
  cat "$tmp/install-$s-$v.log"
done
echo "interop: venvs ready after $(( $(date +%s) - started )) s"

# -- scenarios of each stack ----------------------------------------------------------------------
declare -A scenarios_of
declare -A matched
for s in "${stacks[@]}"; do
  mapfile -t all < <("$python" "interop/$s/script.py")
  if [ ${#only[@]} -gt 0 ]; then
    picked=()
    for name in "${only[@]}"; do
      for x in "${all[@]}"; do
        if [ "$x" = "$name" ]; then
          picked+=("$name")
          matched[$name]=1
        fi
      done
    done
    scenarios_of[$s]="${picked[*]}"
  else
    scenarios_of[$s]="${all[*]}"
  fi
done
for name in "${only[@]}"; do
  [ -n "${matched[$name]:-}" ] || { echo "interop: no stack has a scenario $name" >&2; exit 2; }
done

record() {  # record STACK ROUND: every scenario of every version of STACK into $tmp/ROUND/STACK
  local stack=$1 round=$2 list=$tmp/jobs-$1-$2 out=$tmp/$2/$1 logs=$tmp/logs-$2-$1 jobs
  jobs=${INTEROP_JOBS:-$(stack_setting "$stack" JOBS 4)}
  : > "$list"
  for sc in ${scenarios_of[$stack]}; do
    for v in ${versions_of[$stack]}; do
      echo "$v $sc" >> "$list"
    done
  done
  mkdir -p "$out" "$logs"
  # each line: VERSION SCENARIO; a failed harness run leaves its log and a .failed marker
  xargs -P "$jobs" -L 1 sh -c '
    v=$1; sc=$2
    if ! target/interop/'"$stack"'/venv-$v/bin/python interop/'"$stack"'/harness.py --scenario "$sc" \
        --out '"$out"' > '"$logs"'/$v-$sc.log 2>&1; then
      touch '"$logs"'/$v-$sc.failed
    fi' sh < "$list"
  local failed=0
  for f in "$logs"/*.failed; do
    [ -e "$f" ] || continue
    failed=1
    log=${f%.failed}.log
    echo "interop: $stack harness failed: ${log##*/}" >&2
    tail -n 30 "$log" >&2
  done
  return $failed
}

status=0
for s in "${stacks[@]}"; do
  [ -n "${scenarios_of[$s]}" ] || continue
  prefix=$(prefix_of "$s")
  read -r -a vs <<< "${versions_of[$s]}"
  read -r -a scs <<< "${scenarios_of[$s]}"
  for round in $(seq 1 "$repeat"); do
    t=$(date +%s)
    record "$s" "$round" || { echo "interop: $s round $round: a scenario failed to run" >&2; exit 1; }
    echo "interop: $s round $round recorded ${#scs[@]} scenarios x ${#vs[@]} versions in $(( $(date +%s) - t )) s"
    if [ "$mode" = write ] && [ "$round" = 1 ]; then
      for v in "${vs[@]}"; do
        dir=$fixtures/$prefix@$v
        mkdir -p "$dir"
        if [ ${#only[@]} -eq 0 ]; then
          rm -f "$dir"/*.jsonl
        fi
        cp "$tmp/1/$s/$prefix@$v"/*.jsonl "$dir"/ 2>/dev/null || true
      done
      echo "interop: wrote $fixtures/$prefix@*"
    fi
    if [ ${#only[@]} -gt 0 ]; then
      # compare only what was recorded
      ref=$tmp/ref-$round-$s
      for v in "${vs[@]}"; do
        mkdir -p "$ref/$prefix@$v"
        for sc in "${scs[@]}"; do
          cp "$fixtures/$prefix@$v/$sc".jsonl "$fixtures/$prefix@$v/$sc".*.jsonl "$ref/$prefix@$v/" 2>/dev/null || true
        done
      done
    else
      ref=$fixtures
    fi
    if ! "$python" "interop/$s/compare.py" "$ref" "$tmp/$round/$s"; then
      status=1
    fi
  done
done

echo "interop: done in $(( $(date +%s) - started )) s"
exit $status
