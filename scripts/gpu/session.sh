#!/usr/bin/env bash
# One call on a lent GPU machine (README, "GPUs"): the tests labelled gpu (scripts/gpu/build.sh),
# then the benchmark (bench/run_gpu.sh), each under its own time limit so that one running long
# leaves the other its time. Logs go to $OUT (the device tool's folder that comes back), else
# /tmp/gpu-session.
#
#   scripts/gpu/session.sh [TESTS_SECONDS [BENCH_SECONDS [BENCH_BATCHES [BENCH_REPEATS]]]]
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${OUT:-/tmp/gpu-session}
mkdir -p "$out"
tests_s=${1:-300} bench_s=${2:-240} batches=${3:-30} repeats=${4:-2}
nvidia-smi -L 2>&1 | tee "$out/gpu.txt"
start=$SECONDS
timeout "$tests_s" bash "$root/scripts/gpu/build.sh" >"$out/tests.log" 2>&1
echo "gpu tests: exit $? after $((SECONDS - start)) s (124: stopped at the limit)" | tee -a "$out/tests.log"
grep -E '^(ok|FAIL|fail|skipped|All tests|test cases|[0-9]+ fixtures)|passed|failed|differ|Error|error' "$out/tests.log" | tail -40
start=$SECONDS
timeout "$bench_s" bash "$root/bench/run_gpu.sh" /tmp/gpubench --batches "$batches" --repeats "$repeats" >"$out/bench.log" 2>&1
echo "benchmark: exit $? after $((SECONDS - start)) s (124: stopped at the limit)" | tee -a "$out/bench.log"
tail -n 12 "$out/bench.log"
