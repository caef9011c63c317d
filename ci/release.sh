#!/usr/bin/env bash
# The release binary: runs the README's main command from a fresh directory, proves that it
# cannot open a network connection (no socket function is even linked) and that it carries no
# flaw switch however it was built — also after the release test and bench builds, which rebuild
# target/release/turnfence with the dev-dependencies' features unified in. Cost: the release
# builds with and without the switch, about 3 minutes on 2 cores from a cold target/ directory,
# then the release test and bench builds, about 5 more.
set -euo pipefail
cd "$(dirname "$0")/.."

bin="$PWD/target/release/turnfence"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A binary holding any planted machine's code has its symbols (`Planted::planted` is never
# inlined, so there is always one); a binary with the --flaw switch holds the flaws' names.
planted_symbols() { nm -C "$bin" | grep -cF 'turnfence_model::plant::Planted<' || true; }
flaw_names() {
  for machine in turn fence; do
    { "$bin" explore --machine "$machine" --flaw '?' 2>&1 || true; } \
      | sed -n 's/.*flaws are: //p' | tr -d ','
  done
}

echo "== the control: the build with the flaw switch (--features flaws) shows both marks"
cargo build --release --bin turnfence --features flaws
names=$(flaw_names)
[ "$(echo "$names" | wc -w)" -gt 0 ] || { echo "the flaws build lists no flaw"; exit 1; }
[ "$(planted_symbols)" -gt 0 ] || { echo "no planted machine's symbol in the flaws build"; exit 1; }
for name in $names; do
  grep -qaF "$name" "$bin" || { echo "the flaws build does not hold the name $name"; exit 1; }
done
(cd "$work" && "$bin" gate --agent --output with-flaws >/dev/null)
grep -q '"flaws_compiled": true' "$work/with-flaws/report.json"
echo "ok: $(echo "$names" | wc -w) flaw names, $(planted_symbols) planted symbols, flaws_compiled true"

cargo build --release --bin turnfence

echo "== no socket, connect or name lookup linked into the release binary"
linked=$(nm -D --undefined-only "$bin" | awk '{print $NF}' | sed 's/@.*//' \
  | grep -xE 'socket|connect|getaddrinfo|gethostbyname|gethostbyname_r|sendto|sendmsg|bind|listen|accept|accept4' || true)
if [ -n "$linked" ]; then
  echo "network functions linked into turnfence:"; echo "$linked"; exit 1
fi
echo "ok"

echo "== the gate, as the README runs it"
(cd "$work" && cargo run --quiet --release --manifest-path "$OLDPWD/Cargo.toml" --bin turnfence -- gate)
report="$work/lab-output/report.json"
grep -q '"status": "PASS"' "$report"
grep -q '"flaws_compiled": false' "$report" || { echo "the release build carries the flaw switch"; exit 1; }
(cd "$work" && "$bin" gate --agent --clean) | grep -q '"status":"PASS"'
echo "ok: PASS"

# No cargo command between these builds and the checks below: `cargo run` would rebuild the
# binary without the dev-dependencies' features.
echo "== no flaw switch in the binary the release test and bench builds leave behind"
before=$(sha256sum "$bin")
cargo test --release --workspace --no-run
cargo bench --workspace --no-run
[ "$(sha256sum "$bin")" != "$before" ] && echo "(target/release/turnfence was rebuilt by them)"
no_switch() {
  (cd "$work" && "$bin" gate --agent --output "$1") | grep -q '"status":"PASS"'
  grep -q '"flaws_compiled": false' "$work/$1/report.json" \
    || { echo "$1: the gate reports flaws_compiled true"; exit 1; }
  [ "$(planted_symbols)" -eq 0 ] || { echo "$1: a planted machine's code is in the binary"; exit 1; }
  for name in $names; do
    if grep -qaF "$name" "$bin"; then echo "$1: the binary holds the flaw name $name"; exit 1; fi
  done
  if "$bin" explore --machine turn --flaw deliver_after_stop >/dev/null 2>&1; then
    echo "$1: the binary planted a flaw"; exit 1
  fi
  echo "ok ($1): flaws_compiled false, no planted symbol, no flaw name, --flaw refused"
}
no_switch unified
cargo build --release --bin turnfence
no_switch release
