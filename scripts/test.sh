#!/usr/bin/env bash
# Installs, builds and runs every test: ctest, then the wheel's.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HEADSCAN_WITH_TESTS=1 bash "$root/scripts/setup.sh"
cd "$root/build"
ctest --output-on-failure -j 2 --timeout 600
# The Python wheel: built, installed into a fresh venv and tested there (tests/python/run.sh).
bash "$root/tests/python/run.sh"
