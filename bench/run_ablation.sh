#!/usr/bin/env bash
# The cost of the causal passes (--ablation) against plain forwards, on a GPT-2-small-shaped model
# with random weights (bench/make_gpt2_small.py):
#   importance pass / one bare forward over the ablation set      (target ≤ 3.5)
#   ablation pass   / ((L·H + 1) bare forwards over the set)       (target ≤ 1.1)
# and the pruning and circuit passes' times. The bare forward is headscan_bench_forward over a
# corpus that is exactly the ablation set, with the same threads and batch size: the time inside
# its forward calls, the median of 3 passes over the set (so loading and TorchScript's first,
# profiling call are not counted, as they are not in headscan's passes). The two sides alternate
# and the medians of --repeats runs are reported.
#
#   bench/run_ablation.sh [--sequences N] [--words W] [--repeats R] [--threads T] [--batch-size B] WORK_DIR
#
# WORK_DIR keeps the model (~490 MiB) between runs. Needs the venv's python (scripts/setup.sh).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
sequences=8
words=127
repeats=3
threads=2
batch_size=8
while [[ $# -gt 1 ]]; do
  case "$1" in
    --sequences) sequences=$2; shift 2 ;;
    --words) words=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --batch-size) batch_size=$2; shift 2 ;;
    *) echo "run_ablation.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
work=${1:?usage: bench/run_ablation.sh [options] WORK_DIR}
mkdir -p "$work"
build="$root/build"
if [[ ! -f "$work/gpt2_small.pt" ]]; then
  "$root/.venv/bin/python" "$here/make_gpt2_small.py" "$work" --lines 1 --min-words 8 --max-words 8
fi
# Exactly the ablation set: N lines of W random words of the model's vocabulary, one window each.
python3 -c '
import random, sys
rng = random.Random(1)
for _ in range(int(sys.argv[1])):
    print(" ".join("w%d" % rng.randrange(50255) for _ in range(int(sys.argv[2]))))
' "$sequences" "$words" > "$work/ablation_set.txt"

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

: > "$work/bare.txt"
: > "$work/phases.txt"
for ((r = 0; r < repeats; ++r)); do
  "$build/bench/headscan_bench_forward" "$work/gpt2_small.pt" "$work/ablation_set.txt" --threads "$threads" \
    --batch-size "$batch_size" --passes 3 | awk '/^forward_seconds/ {print $2}' >> "$work/bare.txt"
  rm -rf "$work/report"
  "$build/headscan" "$work/gpt2_small.pt" "$work/ablation_set.txt" -o "$work/report" --ablation \
    --ablation-sequences "$sequences" --threads "$threads" --batch-size "$batch_size" --parser none \
    --no-html --no-plots -q
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
p = d["run"]["phases"]
layers = d["model"]["layers"]  # the model's layers (index, path, kind), or the number of attention layers
layers = sum(l["kind"] == "attention" for l in layers) if isinstance(layers, list) else layers
print(p["corpus"], p["importance"], p["ablation"], p["pruning"], p["circuits"], layers, d["model"]["heads"])
' "$work/report/heads.json" >> "$work/phases.txt"
done

bare=$(median < "$work/bare.txt")
column() { awk -v c="$1" '{print $c}' "$work/phases.txt" | median; }
corpus=$(column 1); importance=$(column 2); ablation=$(column 3); pruning=$(column 4); circuits=$(column 5)
layers=$(awk 'NR==1 {print $6}' "$work/phases.txt"); heads=$(awk 'NR==1 {print $7}' "$work/phases.txt")
python3 - "$bare" "$corpus" "$importance" "$ablation" "$pruning" "$circuits" "$layers" "$heads" "$sequences" "$words" "$repeats" <<'EOF'
import sys
bare, corpus, importance, ablation, pruning, circuits = map(float, sys.argv[1:7])
layers, heads, sequences, words, repeats = map(int, sys.argv[7:12])
evaluations = layers * heads + 1
print(f"ablation set: {sequences} sequences of {words + 1} tokens; medians of {repeats} runs")
print(f"bare forward over the set   {bare:8.3f} s")
print(f"corpus pass (same set)      {corpus:8.3f} s")
print(f"importance pass             {importance:8.3f} s  = {importance / bare:5.2f} x bare forward (target <= 3.5)")
print(f"ablation pass               {ablation:8.3f} s  = {ablation / (evaluations * bare):5.2f} x {evaluations} bare forwards (target <= 1.1)")
print(f"pruning pass                {pruning:8.3f} s")
print(f"circuit pass                {circuits:8.3f} s")
EOF
