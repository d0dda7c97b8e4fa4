#!/usr/bin/env bash
# headscan's overhead benchmark: wall time and peak RSS of `headscan` against a bare forward pass
# (headscan_bench_forward) over the same batches with the same threads, on a GPT-2-small-shaped
# model with random weights. Target: time ratio <= 1.15, peak RSS <= bare + 25 %.
#
#   bench/run_overhead.sh [options] [WORK_DIR]
#
#   WORK_DIR            where the model (~490 MiB), corpus and report go (default: a new temp dir,
#                       removed at the end; a given one is kept and its model reused)
#   --threads N         LibTorch threads on both sides (default 2)
#   --batch-size N      sequences per forward call on both sides (default 8)
#   --max-length N      tokens per sequence, BOS included (default: the model's 1024)
#   --repeats N         runs of each side; the median is reported (default 3)
#   --lines N           corpus documents (default 24)
#   --min-words N       shortest document in words (default 64)
#   --max-words N       longest document in words (default 1023)
#   --build DIR         build directory with headscan and headscan_bench_forward (default build)
#   --no-build          do not run ninja first
#   --headscan PATH     the headscan binary to measure (default DIR/headscan)
#   --wait-idle S       before each run, wait up to S seconds for the other processes on the
#                       machine to use under 10 % of the CPUs (default 0: do not wait)
#   --layers L, --heads H, --d-model D
#                       another GPT-2 shape (default 12, 12, 768: GPT-2 small)
#   --bare cpp|python   the bare side: headscan_bench_forward (C++, default) or bench/bare_forward.py
#                       (torch.jit.load in the venv's Python under no_grad: what a Python user pays)
#   --headscan-args "…" extra options for headscan (e.g. "--no-html --no-plots --parser none")
#   --formats           also export the same module as a program (.pt2, headscan.export through the
#                       build's Python package) and run headscan on it in turn with the others: the
#                       table gets a row "headscan .pt2" and the ratio of its wall time to the
#                       TorchScript archive's (target <= 1.0: the exported program is no slower)
#
# Each run is its own process, measured by GNU time (/usr/bin/time, Debian package `time`): wall
# clock seconds, CPU seconds (user + system) and maximum resident set size. The two sides
# alternate so that background load hits both alike. The targets are on the medians of wall time
# and peak RSS; CPU time is printed too, as it suffers less from other processes on a shared
# machine. Exit status: 0 when both targets are met, 3 when one is missed, else an error.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
threads=2
batch_size=8
max_length=
repeats=3
lines=24
min_words=64
max_words=1023
build_dir="$root/build"
build=1
work=
headscan=
wait_idle=0
layers=12
heads=12
d_model=768
bare_kind=cpp
headscan_args=
formats=0

usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) threads="$2"; shift 2 ;;
    --batch-size) batch_size="$2"; shift 2 ;;
    --max-length) max_length="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --lines) lines="$2"; shift 2 ;;
    --min-words) min_words="$2"; shift 2 ;;
    --max-words) max_words="$2"; shift 2 ;;
    --build) build_dir="$2"; shift 2 ;;
    --no-build) build=0; shift ;;
    --headscan) headscan="$2"; shift 2 ;;
    --wait-idle) wait_idle="$2"; shift 2 ;;
    --layers) layers="$2"; shift 2 ;;
    --heads) heads="$2"; shift 2 ;;
    --d-model) d_model="$2"; shift 2 ;;
    --bare) bare_kind="$2"; shift 2 ;;
    --headscan-args) headscan_args="$2"; shift 2 ;;
    --formats) formats=1; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "run_overhead.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) work="$1"; shift ;;
  esac
done

if [[ ! -x /usr/bin/time ]]; then
  echo "run_overhead.sh: needs GNU time at /usr/bin/time (apt-get install time)" >&2
  exit 2
fi
python="$root/.venv/bin/python"
if [[ ! -x "$python" ]] || ! "$python" -c 'import torch' 2>/dev/null; then
  echo "run_overhead.sh: needs the venv's python with torch ($python; scripts/setup.sh creates it)" >&2
  exit 2
fi

if [[ -z "$work" ]]; then
  work="$(mktemp -d "${TMPDIR:-/tmp}/headscan-overhead.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"

if [[ "$build" == 1 ]]; then
  ninja -C "$build_dir" headscan headscan_bench_forward >&2
fi
[[ -z "$headscan" ]] && headscan="$build_dir/headscan"
bare="$build_dir/bench/headscan_bench_forward"

make_args=()
if [[ "$formats" == 1 ]]; then
  [[ "$build" == 1 ]] && ninja -C "$build_dir" headscan_python >&2
  make_args+=(--pt2)
fi
PYTHONPATH="$build_dir/python${PYTHONPATH:+:$PYTHONPATH}" \
  "$python" "$here/make_gpt2_small.py" "$work" --lines "$lines" --min-words "$min_words" --max-words "$max_words" \
  --layers "$layers" --heads "$heads" --d-model "$d_model" "${make_args[@]}"
model="$work/gpt2_small.pt"
[[ "$layers/$heads/$d_model" != 12/12/768 ]] && model="$work/gpt2_L${layers}_H${heads}_D${d_model}.pt"
case "$bare_kind" in
  cpp) bare_command=("$bare") ;;
  python) bare_command=("$python" "$here/bare_forward.py") ;;
  *) echo "run_overhead.sh: --bare takes cpp or python" >&2; exit 2 ;;
esac
corpus="$work/corpus.txt"

common=(--threads "$threads" --batch-size "$batch_size")
[[ -n "$max_length" ]] && common+=(--max-length "$max_length")

# cpu_busy and settle: waiting for an idle machine before each run.
source "$here/idle.sh"

# run NAME COMMAND...: one measured run; appends "wall cpu kib" to $work/NAME.times.
run() {
  local name="$1"; shift
  local busy
  busy="$(settle)"
  /usr/bin/time -f '%e %U %S %M' -o "$work/$name.last" "$@" >"$work/$name.out" 2>"$work/$name.err" || {
    echo "run_overhead.sh: $name failed:" >&2; cat "$work/$name.err" >&2; exit 1; }
  local wall user system kib
  read -r wall user system kib <"$work/$name.last"
  local cpu
  cpu="$(awk -v u="$user" -v s="$system" 'BEGIN { print u + s }')"
  echo "$wall $cpu $kib" >>"$work/$name.times"
  printf '  %-8s %8.2f s wall %8.2f s CPU %6.0f MiB peak RSS   (others used %d %% of the CPUs just before)\n' \
    "$name" "$wall" "$cpu" "$(awk -v k="$kib" 'BEGIN { print k / 1024 }')" "$busy"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

compilers="$(pgrep -c cc1plus || true)"
[[ "$compilers" != 0 ]] && echo "note: $compilers compiler process(es) running: timings are noisy" >&2

rm -f "$work"/bare.times "$work"/headscan.times "$work"/pt2.times
echo "runs (threads $threads, batch size $batch_size, bare: $bare_kind):"
for ((i = 1; i <= repeats; ++i)); do
  run bare "${bare_command[@]}" "$model" "$corpus" "${common[@]}"
  # shellcheck disable=SC2086  # headscan_args is a list of options
  run headscan "$headscan" "$model" "$corpus" "${common[@]}" -q --force -o "$work/report" $headscan_args
  if [[ "$formats" == 1 ]]; then
    # shellcheck disable=SC2086
    run pt2 "$headscan" "${model}2" "$corpus" "${common[@]}" -q --force -o "$work/report_pt2" $headscan_args
  fi
done
head -n 1 "$work/bare.out"

median_of() { cut -d' ' -f"$2" "$work/$1.times" | median; }
if [[ "$formats" == 1 ]]; then
  awk -v ts="$(median_of headscan 1)" -v tk="$(median_of headscan 3)" \
      -v ps="$(median_of pt2 1)" -v pc="$(median_of pt2 2)" -v pk="$(median_of pt2 3)" -v n="$repeats" 'BEGIN {
    printf "medians of %d runs:      wall        CPU   peak RSS\n", n
    printf "  headscan .pt2 %9.2f s %9.2f s %6.0f MiB\n", ps, pc, pk / 1024
    printf "exported program / TorchScript archive: wall %.3f (target <= 1.0: %s), peak RSS %.3f\n",
           ps / ts, ps / ts <= 1.0 ? "met" : "MISSED", pk / tk
  }'
fi
awk -v bs="$(median_of bare 1)" -v bc="$(median_of bare 2)" -v bk="$(median_of bare 3)" \
    -v hs="$(median_of headscan 1)" -v hc="$(median_of headscan 2)" -v hk="$(median_of headscan 3)" -v n="$repeats" 'BEGIN {
  tr = hs / bs; cr = hc / bc; mr = hk / bk
  printf "medians of %d runs:      wall        CPU   peak RSS\n", n
  printf "  bare forward  %9.2f s %9.2f s %6.0f MiB\n", bs, bc, bk / 1024
  printf "  headscan      %9.2f s %9.2f s %6.0f MiB\n", hs, hc, hk / 1024
  printf "  ratio         %9.3f   %9.3f   %6.3f\n", tr, cr, mr
  printf "time ratio %.3f: %s (target <= 1.15)\n", tr, tr <= 1.15 ? "met" : "MISSED"
  printf "peak RSS ratio %.3f: %s (target <= 1.25)\n", mr, mr <= 1.25 ? "met" : "MISSED"
  exit (tr <= 1.15 && mr <= 1.25) ? 0 : 3
}'
