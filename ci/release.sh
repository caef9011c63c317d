#!/usr/bin/env bash
# The release binary: runs the README's main command from a fresh directory, proves the flaw
# switch is absent from it and that it cannot open a network connection (no socket function is
# even linked). Cost: one release build, about 30 s on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --bin turnfence
bin="$PWD/target/release/turnfence"

echo "== no socket, connect or name lookup linked into the release binary"
linked=$(nm -D --undefined-only "$bin" | awk '{print $NF}' | sed 's/@.*//' \
  | grep -xE 'socket|connect|getaddrinfo|gethostbyname|gethostbyname_r|sendto|sendmsg|bind|listen|accept|accept4' || true)
if [ -n "$linked" ]; then
  echo "network functions linked into turnfence:"; echo "$linked"; exit 1
fi
echo "ok"

echo "== the gate, as the README runs it"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && cargo run --quiet --release --manifest-path "$OLDPWD/Cargo.toml" --bin turnfence -- gate)
report="$work/lab-output/report.json"
grep -q '"status": "PASS"' "$report"
grep -q '"flaws_compiled": false' "$report" || { echo "the release build carries the flaw switch"; exit 1; }
(cd "$work" && "$bin" gate --agent --clean) | grep -q '"status":"PASS"'
echo "ok: PASS, flaw switch absent"
