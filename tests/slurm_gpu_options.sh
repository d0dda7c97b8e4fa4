#!/usr/bin/env bash
# scripts/slurm/submit.sh --gpus-per-shard against a stand-in sbatch that records its arguments:
# the shards' array job asks Slurm for GPUs per task and runs headscan with --device cuda (unless
# the options name a device); the merge asks for none; a bad count is refused with exit 2.
#   tests/slurm_gpu_options.sh HEADSCAN
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
headscan=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin"
cat >"$tmp/bin/sbatch" <<'FAKE'
#!/bin/sh
echo "$*" >>"$SBATCH_LOG"
echo 4242
FAKE
chmod +x "$tmp/bin/sbatch"
: >"$tmp/model.pt"
echo "a line" >"$tmp/corpus.txt"
fail() { echo "FAIL: $*" >&2; exit 1; }

submit() {  # log-file submit.sh-arguments...
  local log=$1
  shift
  SBATCH_LOG=$log PATH="$tmp/bin:$PATH" bash "$root/scripts/slurm/submit.sh" --headscan "$headscan" "$@" >/dev/null
}

submit "$tmp/gpu.log" --shards 3 --gpus-per-shard 1 "$tmp/model.pt" "$tmp/corpus.txt" "$tmp/out" -- --parser none
shard_call=$(sed -n 1p "$tmp/gpu.log")
merge_call=$(sed -n 2p "$tmp/gpu.log")
[[ $shard_call == *"--array=0-2"* && $shard_call == *"--gpus-per-task=1"* && $shard_call == *"--ntasks=1"* ]] ||
  fail "the shards' sbatch asks for no GPU: $shard_call"
[[ $shard_call == *"shard.sbatch "*" 3 --parser none --device cuda" ]] || fail "the shards do not run on cuda: $shard_call"
[[ $merge_call != *"--gpus"* ]] || fail "the merge asks for a GPU: $merge_call"

submit "$tmp/given.log" --shards 2 --gpus-per-shard=2 "$tmp/model.pt" "$tmp/corpus.txt" "$tmp/out" -- --device cuda:0
shard_call=$(sed -n 1p "$tmp/given.log")
[[ $shard_call == *"--gpus-per-task=2"* && $shard_call == *" 2 --device cuda:0" ]] || fail "a given --device was not kept: $shard_call"

submit "$tmp/cpu.log" --shards 2 "$tmp/model.pt" "$tmp/corpus.txt" "$tmp/out"
[[ $(sed -n 1p "$tmp/cpu.log") != *"--gpus"* && $(sed -n 1p "$tmp/cpu.log") != *"--device"* ]] ||
  fail "a run without --gpus-per-shard asks for GPUs: $(sed -n 1p "$tmp/cpu.log")"

status=0
submit "$tmp/bad.log" --shards 2 --gpus-per-shard two "$tmp/model.pt" "$tmp/corpus.txt" "$tmp/out" 2>/dev/null || status=$?
((status == 2)) || fail "--gpus-per-shard two: exit $status, expected 2"
[[ ! -s $tmp/bad.log ]] || fail "--gpus-per-shard two submitted a job"
echo "slurm gpu options: ok"
