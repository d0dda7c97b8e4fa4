#!/usr/bin/env bash
# headscan on a GPU against a bare forward of the same archive on the same GPU (README, "GPUs").
#
#   bench/run_gpu.sh WORK_DIR [--batches N] [--repeats R] [--device cuda:N] [--only MODEL]
#
# Builds (scripts/gpu/build.sh installs the binaries of build-gpu/ where this project's libraries are
# missing; elsewhere scripts/setup.sh builds them), makes the models and corpora
# (bench/make_gpu_models.py: GPT-2 small in float32; Llama-3-8B's shape, 4 layers, in bfloat16)
# and, per case, alternating R times (default 1), runs
#   headscan        MODEL CORPUS --device D --batch-size B --max-length T --parser none --no-html --no-plots
#   C++ bare        headscan_bench_forward, the same batches through torch::jit forward calls
#   Python bare     bench/bare_forward.py, torch.jit.load and the same batches under no_grad
# and prints one table: seconds (headscan: its corpus pass, the bare forwards: their forward calls;
# each synchronized with the GPU per batch), tokens per second, headscan's ratio to each bare
# forward, the whole headscan process, and peak GPU memory (LibTorch's caching allocator's peak of
# allocated bytes; headscan's against the C++ bare forward's plus one layer's attention in float32).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=${1:?usage: bench/run_gpu.sh WORK_DIR [--batches N] [--repeats R] [--device cuda:N] [--only MODEL]}
shift
batches=100 repeats=1 device=cuda only=""
while (($#)); do
  case $1 in
    --batches) batches=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;  # gpt2_small or llama3_8b_4l: that model's cases only
    *) echo "run_gpu.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$work"
work=$(realpath "$work")

if [[ -x $root/build-gpu/libexec/headscan || -f $root/build-gpu.tar.xz ]]; then
  bash "$root/scripts/gpu/build.sh" --no-tests >/dev/null
  bin=$root/build-gpu/bin
  headscan=$bin/headscan bare_cpp=$bin/headscan_bench_forward
  python=${HEADSCAN_GPU_PYTHON:-python3}
else
  bash "$root/scripts/setup.sh" >/dev/null
  headscan=$root/build/headscan bare_cpp=$root/build/bench/headscan_bench_forward
  python=$root/.venv/bin/python
fi
"$python" "$root/bench/make_gpu_models.py" "$work" --batches "$batches" ${only:+--only "$only"}
"$headscan" --version

# case: model batch length layers heads (for one layer's attention in float32: B * H * T * T * 4)
cases=("gpt2_small 8 1024 12" "llama3_8b_4l 8 1024 32" "llama3_8b_4l 2 4096 32")
value() { sed -n "s/^$1 //p" "$2" | tail -n 1; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf '\n| model | B x T | batches | bare C++ s | bare Python s | headscan s | tokens/s (headscan) | vs C++ | vs Python | headscan process s | peak GiB: bare C++ / Python / headscan | headscan − bare C++ in layers of fp32 attention |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|---|\n'
for spec in "${cases[@]}"; do
  read -r model batch length heads <<<"$spec"
  [[ -z $only || $only == "$model" ]] || continue
  corpus=$work/corpus_${model}_${batch}x${length}.txt
  archive=$work/$model.pt
  tokens=$((batch * length * batches))
  cpp_times=() py_times=() hs_times=() process_times=()
  for ((r = 0; r < repeats; r++)); do
    "$bare_cpp" "$archive" "$corpus" --device "$device" --batch-size "$batch" --max-length "$length" >"$work/cpp.out"
    cpp_times+=("$(value forward_seconds "$work/cpp.out")")
    cpp_peak=$(value peak_device_memory_bytes "$work/cpp.out")
    cpp_peak=${cpp_peak:--1}
    "$python" "$root/bench/bare_forward.py" "$archive" "$corpus" --device "$device" --batch-size "$batch" \
      --max-length "$length" >"$work/py.out"
    py_times+=("$(value forward_seconds "$work/py.out")")
    py_peak=$(value peak_device_memory_bytes "$work/py.out")
    py_peak=${py_peak:--1}
    start=$(date +%s.%N)
    "$headscan" "$archive" "$corpus" -o "$work/report" --force -q --device "$device" --batch-size "$batch" \
      --max-length "$length" --parser none --no-html --no-plots
    process_times+=("$("$python" -c 'import sys; print(float(sys.argv[1]) - float(sys.argv[2]))' "$(date +%s.%N)" "$start")")
    hs_times+=("$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["run"]["phases"]["corpus"])' "$work/report/heads.json")")
    hs_peak=$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["run"].get("peak_device_memory_bytes", -1))' "$work/report/heads.json")
  done
  cpp=$(printf '%s\n' "${cpp_times[@]}" | median)
  py=$(printf '%s\n' "${py_times[@]}" | median)
  hs=$(printf '%s\n' "${hs_times[@]}" | median)
  process=$(printf '%s\n' "${process_times[@]}" | median)
  "$python" - "$model" "$batch" "$length" "$batches" "$cpp" "$py" "$hs" "$process" "$tokens" "$heads" \
    "$cpp_peak" "$py_peak" "$hs_peak" <<'PY'
import sys
model, batch, length, batches = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
cpp, py, hs, process = map(float, sys.argv[5:9])
tokens, heads = int(sys.argv[9]), int(sys.argv[10])
cpp_peak, py_peak, hs_peak = map(int, sys.argv[11:14])
layer = batch * heads * length * length * 4
gib = 2 ** 30
peaks = " / ".join(f"{peak / gib:.2f}" if peak >= 0 else "n/a" for peak in (cpp_peak, py_peak, hs_peak))
excess = f"{(hs_peak - cpp_peak) / layer:.2f}" if min(cpp_peak, hs_peak) >= 0 else "n/a (not a GPU)"
print(f"| {model} | {batch} x {length} | {batches} | {cpp:.2f} | {py:.2f} | {hs:.2f} | {tokens / hs:,.0f} | "
      f"{hs / cpp:.3f} | {hs / py:.3f} | {process:.1f} | {peaks} | {excess} |")
PY
done
echo
echo "Goals: headscan <= 1.10 x the bare forward at 1024 tokens, <= 1.20 x at 4096; peak memory <= bare + one layer's"
echo "attention in float32 + 10 % (the last column <= 1.0, with the 10 % of the bare peak besides)."
