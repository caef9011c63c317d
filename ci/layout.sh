#!/usr/bin/env bash
# The house's layout (ci/layout.py): no Rust file over 600 lines, no file importing one that
# imports it back, no stack named outside its folder (the rule first shown failing on files made
# to break it). Before the tests: a layout broken is found in a second.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 ci/layout.py --self-test
python3 ci/layout.py
