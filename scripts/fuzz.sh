#!/usr/bin/env bash
# Fuzzes headscan's parsers of untrusted input with libFuzzer (tests/fuzz/, README "Fuzzing and
# limits"). Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
#   SECONDS   how long each target runs (default 60); the targets run side by side, one per core
#   TARGET    tokenizer_json sentencepiece_model conllu text_corpus headscan_json idf option_values shard_state
#             compare_run torchscript_pickle
#             (default: all)
# Builds the targets with ASan and UBSan in build-fuzz/ (scripts/fuzz_build.sh: HEADSCAN_FUZZ=ON,
# clang, no LibTorch) and runs each on a copy of its seed corpus in a working directory outside the
# repository, so that new corpus entries never land in it. Exits 1 on any crash, leak, timeout or out-of-memory, printing the
# reproducer's path; replay one with build-fuzz/tests/fuzz/fuzz_TARGET FILE.
# Environment: HEADSCAN_FUZZ_WORK (working directory; default a new one under /tmp, kept),
# HEADSCAN_FUZZ_JOBS (compile jobs; default all cores), HEADSCAN_FUZZ_PARALLEL (targets fuzzed at once;
# default all cores).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=${1:-60}
[[ $# -gt 0 ]] && shift
all_targets=(tokenizer_json sentencepiece_model conllu text_corpus headscan_json idf option_values torchscript_pickle shard_state
             compare_run compressed_corpus examples)
targets=("$@")
((${#targets[@]})) || targets=("${all_targets[@]}")
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || ((seconds == 0)); then
  echo "fuzz.sh: expected SECONDS to be a positive whole number, found \"$seconds\"" >&2
  exit 2
fi
for target in "${targets[@]}"; do
  if [[ " ${all_targets[*]} " != *" $target "* ]]; then
    echo "fuzz.sh: unknown target \"$target\"; targets: ${all_targets[*]}" >&2
    exit 2
  fi
done

source "$root/scripts/fuzz_build.sh"
cmake --build "$build" -j "${HEADSCAN_FUZZ_JOBS:-$(nproc)}" --target "${targets[@]/#/fuzz_}"

work=${HEADSCAN_FUZZ_WORK:-$(mktemp -d /tmp/headscan-fuzz.XXXXXX)}
mkdir -p "$work"
dictionary_of() {
  case "$1" in
    tokenizer_json | headscan_json) echo "$root/tests/fuzz/dictionaries/json.dict" ;;
    conllu) echo "$root/tests/fuzz/dictionaries/conllu.dict" ;;
    idf) echo "$root/tests/fuzz/dictionaries/idf.dict" ;;
    option_values) echo "$root/tests/fuzz/dictionaries/option_values.dict" ;;
    shard_state) echo "$root/tests/fuzz/dictionaries/shard_state.dict" ;;
  esac
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# One target: its log, its stats and its result in $work/TARGET/ (result: "ok" or "FAILED (exit N)").
fuzz_one() {
  local target=$1 dir="$work/$1" dictionary status=0 start
  rm -rf "$dir/corpus" "$dir/result"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp "$root/tests/fuzz/corpus/$target/"* "$dir/corpus/"
  local options=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 -max_len=16384
                 -print_final_stats=1 -artifact_prefix="$dir/artifacts/")
  dictionary=$(dictionary_of "$target")
  [[ -n "$dictionary" ]] && options+=(-dict="$dictionary")
  start=$(date +%s)
  "$build/tests/fuzz/fuzz_$target" "${options[@]}" "$dir/corpus" >"$dir/log" 2>&1 || status=$?
  echo "$(($(date +%s) - start)) $status" >"$dir/result"
}

# The targets run side by side, one per core (HEADSCAN_FUZZ_PARALLEL; default all cores): each is
# one libFuzzer job of SECONDS, so the stage takes SECONDS × targets ÷ cores.
parallel=${HEADSCAN_FUZZ_PARALLEL:-$(nproc)}
running=0
for target in "${targets[@]}"; do
  if ((running >= parallel)); then
    wait -n
    running=$((running - 1))
  fi
  fuzz_one "$target" &
  running=$((running + 1))
done
wait

failed=()
printf '%-20s %10s %8s %8s %6s  %s\n' target executions cov ft secs result
for target in "${targets[@]}"; do
  dir="$work/$target"
  read -r elapsed status <"$dir/result" || { elapsed="?"; status=1; }
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -n 1)
  coverage=$(grep -E '^#[0-9]+' "$dir/log" | tail -n 1 | sed -n 's/.* cov: \([0-9]*\) ft: \([0-9]*\).*/\1 \2/p')
  result=ok
  artifacts=$(find "$dir/artifacts" -type f 2>/dev/null | sort)
  if ((status != 0)) || [[ -n "$artifacts" ]]; then
    result="FAILED (exit $status)"
    failed+=("$target")
  fi
  printf '%-20s %10s %8s %8s %6s  %s\n' "$target" "${executions:-?}" ${coverage:-? ?} "$elapsed" "$result"
  if [[ "$result" != ok ]]; then
    grep -E 'ERROR: |SUMMARY: |runtime error|invariant broken|terminate called|what\(\)' "$dir/log" | head -n 5 >&2 || true
    for artifact in $artifacts; do echo "  reproducer: $artifact" >&2; done
    echo "  log: $dir/log" >&2
  fi
done
echo "corpora and logs: $work"
if ((${#failed[@]})); then
  echo "fuzz.sh: ${failed[*]} failed; replay a reproducer with $build/tests/fuzz/fuzz_TARGET FILE" >&2
  exit 1
fi
