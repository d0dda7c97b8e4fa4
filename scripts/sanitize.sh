#!/usr/bin/env bash
# Runs the unit tests of headscan's LibTorch-free libraries, the code that reads untrusted input
# (tokenizers, corpus readers, JSON, archive and pickle scanners, shard states, option values), under
# AddressSanitizer and UndefinedBehaviorSanitizer: headscan_text_tests and the fuzz targets' replays
# (`ctest -L unit`), built by clang in build-fuzz/, the LibTorch-free build that scripts/fuzz.sh
# fuzzes next (one instrumented build serves both). Any report fails the run. The code that needs
# LibTorch is built with the sanitizers by `cmake -DHEADSCAN_SANITIZE=ON` (README, "Sanitizers").
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/scripts/fuzz_build.sh"
replays=$(ninja -C "$build" -t targets all | sed -n 's/^\(replay_[a-z_]*\): .*/\1/p' | sort -u)
cmake --build "$build" -j "$(nproc)" --target headscan_text_tests $replays
# Leaks are reported, but for the caches of Debian libraries listed in tests/sanitizers/lsan.supp.
export ASAN_OPTIONS="abort_on_error=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$root/tests/sanitizers/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
cd "$build"
ctest -L unit --output-on-failure -j "$(nproc)" --timeout 600
