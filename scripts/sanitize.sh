#!/usr/bin/env bash
# Builds headscan and its tests with AddressSanitizer and UndefinedBehaviorSanitizer in
# build-sanitize/ and runs the unit tests (`ctest -L unit`) under them. Any report fails the run.
# LibTorch (the venv's) and the Debian libraries are not instrumented (README, "Sanitizers").
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HEADSCAN_WITH_TESTS=1 HEADSCAN_SETUP_NO_BUILD=1 bash "$root/scripts/setup.sh"
build="$root/build-sanitize"
torch_prefix=$("$root/.venv/bin/python" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')
# -O1 -g1: the sanitizers' usual optimisation, and line tables for their stack traces; the test
# files (Catch2's macros, LibTorch's headers) compile about 2.4 times faster than at -O2 -g.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEADSCAN_SANITIZE=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCMAKE_PREFIX_PATH="$torch_prefix" -DHEADSCAN_PYTHON="$root/.venv/bin/python" >/dev/null
# Only what `ctest -L unit` runs: the two test executables (and headscan, which they depend on)
# and the fuzz targets' replays; the benchmarks and report fixtures are not built.
replays=$(ninja -C "$build" -t targets all | sed -n 's/^\(replay_[a-z_]*\): .*/\1/p' | sort -u)
cmake --build "$build" -j "$(nproc)" --target headscan_tests headscan_text_tests $replays
# detect_container_overflow: std::vector annotations differ between instrumented code and the
# uninstrumented LibTorch. Leaks are reported, but for the caches of Debian libraries listed in
# tests/sanitizers/lsan.supp.
export ASAN_OPTIONS="detect_container_overflow=0:abort_on_error=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$root/tests/sanitizers/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
cd "$build"
ctest -L unit --output-on-failure -j "$(nproc)" --timeout 600
