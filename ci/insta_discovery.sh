#!/usr/bin/env bash
# cargo-insta must see the snapshots in the top-level snapshots/. It looks for pending snapshots
# only under the workspace's package directories (each manifest's directory and its targets'
# source directories) and skips git-ignored files, so snapshots/ must be a workspace package's
# directory and a pending snapshot there must not be ignored. When cargo-insta is installed, a
# pending snapshot is also written there and `cargo insta pending-snapshots` must list it and
# `cargo insta reject` remove it. Cost: under 2 s; no build, no network.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== snapshots/ is a workspace package's directory"
root=$(dirname "$(cargo locate-project --workspace --message-format plain)")
if ! cargo metadata --no-deps --format-version 1 --offline \
  | grep -qF "\"manifest_path\":\"$root/snapshots/Cargo.toml\""; then
  echo "snapshots/Cargo.toml is not a workspace member: cargo insta review would not see snapshots/"
  exit 1
fi
echo "ok"

echo "== a pending snapshot in snapshots/ is not git-ignored"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  for name in probe.snap.new .probe.pending-snap; do
    if git check-ignore -q "snapshots/$name"; then
      echo "snapshots/$name would be ignored: cargo insta review would not see it"; exit 1
    fi
  done
  echo "ok"
else
  echo "skipped: not a git work tree"
fi

echo "== cargo insta pending-snapshots lists a pending snapshot in snapshots/, reject removes it"
if ! cargo insta --version >/dev/null 2>&1; then
  echo "skipped: cargo-insta is not installed (cargo install cargo-insta --version 1.49.0 --locked)"
  exit 0
fi
probe=snapshots/zz_insta_discovery_probe.snap
trap 'rm -f "$probe.new" "$probe"' EXIT
printf -- '---\nsource: ci/insta_discovery.sh\n---\nprobe\n' >"$probe.new"
listed=$(cargo insta pending-snapshots)
if ! grep -qxF "  $probe" <<<"$listed"; then
  echo "cargo insta pending-snapshots does not list $probe:"; echo "$listed"; exit 1
fi
cargo insta reject --snapshot "$probe" >/dev/null
if [ -e "$probe.new" ] || [ -e "$probe" ]; then
  echo "cargo insta reject left $probe.new or wrote $probe"; exit 1
fi
echo "ok: $(cargo insta --version)"
