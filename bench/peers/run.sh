#!/usr/bin/env bash
# headscan side by side with its peers: the whole process's wall time and peak memory of headscan,
# TransformerLens (attention patterns captured + head_detector's three scores), nnsight (attention
# saved in a trace + the same scores), the bare transformers forward and the bare C++ forward, on
# one GPT-2-shaped model (6 layers × 8 heads × 512, random weights) and 96 windows of 256 tokens of
# English (bench/peers/make_model.py), then whether the scores agree (bench/peers/agreement.py).
#
#   bench/peers/run.sh [options] [WORK_DIR]
#
#   WORK_DIR          model, corpus, reports and timings (default build/peers; the model, its two
#                     exports and the corpus are made once and reused)
#   --rounds N        rounds of alternating runs, each tool once per round (default 3); medians
#   --threads N       threads of every tool (torch.set_num_threads, OMP_NUM_THREADS; default 2)
#   --batch-size N    sequences per forward of every tool (default 8)
#   --build DIR       the build with headscan and bench/headscan_bench_forward (default build)
#   --wait-idle S     before each run, wait up to S seconds for the other processes on the machine
#                     to use under 10 % of the CPUs (default 0: do not wait)
#   --only LIST       comma-separated subset of: headscan,headscan-q,transformer-lens,nnsight,
#                     transformers,cpp (default all)
#
# Needs build/peers-venv (bench/peers/setup.sh), GNU time at /usr/bin/time, and the build's
# headscan and headscan_bench_forward (cmake --build build --target headscan headscan_bench_forward).
# Each run is its own process measured by GNU time: wall seconds, CPU seconds and maximum resident
# set size. Tools alternate within a round so that background load hits all alike; the CPU share
# other processes used just before each run is printed, as timings on a busy machine are not
# comparable to an idle one's. Prints a markdown table and writes WORK_DIR/peers.json.
#
# The runs:
#   headscan          headscan model.pt2 corpus.txt -o DIR: the default run (link-grammar parsing,
#                     probes, needle probes, HTML and plots), --max-length 256
#   headscan-q        the same with -q --no-html --no-plots --parser none
#   transformer-lens, nnsight, transformers: bench/peers/peer.py TOOL (see its --help); the
#                     first two run the probes of the last headscan report (--probe-lengths)
#   cpp               build/bench/headscan_bench_forward model.pt corpus.txt (the TorchScript trace
#                     of the same model with eager attention, scripts/export_hf.py): headscan's
#                     batches with plain forward calls
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
rounds=3
threads=2
batch_size=8
build="$root/build"
only=headscan,headscan-q,transformer-lens,nnsight,transformers,cpp
work="$root/build/peers"
wait_idle=0

usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --batch-size) batch_size="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --wait-idle) wait_idle="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) work="$1"; shift ;;
  esac
done
for value in "$rounds" "$threads" "$batch_size"; do
  [[ "$value" =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --rounds, --threads and --batch-size take whole numbers >= 1, got '$value'" >&2; exit 2; }
done
[[ "$wait_idle" =~ ^[0-9]+$ ]] || { echo "run.sh: --wait-idle takes whole seconds, got '$wait_idle'" >&2; exit 2; }
IFS=, read -r -a tools <<<"$only"
for tool in "${tools[@]}"; do
  case "$tool" in headscan|headscan-q|transformer-lens|nnsight|transformers|cpp) ;;
    *) echo "run.sh: --only: unknown tool '$tool' (headscan, headscan-q, transformer-lens, nnsight, transformers, cpp)" >&2; exit 2 ;;
  esac
done

peers_python="$root/build/peers-venv/bin/python"
base_python="$root/.venv/bin/python"
headscan="$build/headscan"
bare="$build/bench/headscan_bench_forward"
[[ -x /usr/bin/time ]] || { echo "run.sh: needs GNU time at /usr/bin/time (apt-get install time)" >&2; exit 2; }
[[ -x "$peers_python" ]] || { echo "run.sh: no $peers_python: run bench/peers/setup.sh first" >&2; exit 2; }
for binary in "$headscan" "$bare"; do
  [[ -x "$binary" ]] || { echo "run.sh: no $binary: cmake --build $build --target headscan headscan_bench_forward" >&2; exit 2; }
done

mkdir -p "$work"
if [[ ! -f "$work/windows.json" || ! -d "$work/model" ]]; then
  "$base_python" "$here/make_model.py" "$work"
fi
[[ -f "$work/model.pt2" ]] || "$headscan" export "$work/model" "$work/model.pt2"
[[ -f "$work/model.pt" ]] || "$base_python" "$root/scripts/export_hf.py" "$work/model" "$work/model.pt"
# headscan frames each corpus line as BOS + the line: the same ids as windows.json?
"$headscan" tokenize "$work/model.pt2" "$work/corpus.txt" >"$work/tokenized.jsonl"
"$base_python" - "$work" <<'EOF'
import json, sys
work = sys.argv[1]
with open(f"{work}/windows.json") as f:
    expected = json.load(f)["windows"]
with open(f"{work}/tokenized.jsonl") as f:
    got = [json.loads(line)["ids"] for line in f]
if got != expected:
    sys.exit("run.sh: headscan tokenize's windows differ from windows.json")
print(f"headscan tokenize: {len(got)} windows of {len(got[0])} tokens, the ids every peer runs")
EOF

export OMP_NUM_THREADS="$threads"
common=(--threads "$threads" --batch-size "$batch_size")
times="$work/times"
rm -rf "$times"
mkdir -p "$times"

# cpu_busy and settle: waiting for an idle machine before each run.
source "$here/../idle.sh"

# measure TOOL ROUND COMMAND...: one run; appends "wall cpu kib busy" to $times/TOOL.
measure() {
  local tool="$1" round="$2"; shift 2
  local busy wall user system kib
  busy="$(settle)"
  /usr/bin/time -f '%e %U %S %M' -o "$times/$tool.last" "$@" >"$times/$tool.$round.out" 2>"$times/$tool.$round.err" || {
    echo "run.sh: $tool failed (round $round):" >&2; tail -n 20 "$times/$tool.$round.err" >&2; exit 1; }
  read -r wall user system kib <"$times/$tool.last"
  echo "$wall $(awk -v u="$user" -v s="$system" 'BEGIN { print u + s }') $kib $busy" >>"$times/$tool"
  printf '  %-17s %8.2f s wall %8.2f s CPU %6.0f MiB peak RSS   (others used %d %% of the CPUs just before)\n' \
    "$tool" "$wall" "$(awk -v u="$user" -v s="$system" 'BEGIN { print u + s }')" "$(awk -v k="$kib" 'BEGIN { print k / 1024 }')" "$busy"
}

# --probe-lengths of the last headscan report of this run (its probes.repeat_lengths and repeats),
# so the peers run the probes headscan ran; nothing (peer.py's default: headscan's 10) before one.
# One argument a line.
last_heads=
probe_lengths() {
  [[ -n "$last_heads" ]] || return 0
  "$base_python" -c 'import json, sys
p = json.load(open(sys.argv[1])).get("probes") or {}
if p.get("repeat_lengths"):
    print("--probe-lengths", ",".join(map(str, p["repeat_lengths"])) + ":" + str(p["repeats"]), sep="\n")' "$last_heads"
}

run_tool() {
  local tool="$1" round="$2" probe_args=()
  mapfile -t probe_args < <(probe_lengths)
  case "$tool" in
    headscan) measure "$tool" "$round" "$headscan" "$work/model.pt2" "$work/corpus.txt" -o "$work/report" --force \
                "${common[@]}" --max-length 256 ;;
    headscan-q) measure "$tool" "$round" "$headscan" "$work/model.pt2" "$work/corpus.txt" -o "$work/report-q" --force \
                  "${common[@]}" --max-length 256 -q --no-html --no-plots --parser none ;;
    transformer-lens|nnsight) measure "$tool" "$round" "$peers_python" "$here/peer.py" "$tool" "$work" "${common[@]}" \
                                --out "$times/$tool.json" "${probe_args[@]}" ;;
    transformers) measure "$tool" "$round" "$peers_python" "$here/peer.py" transformers "$work" "${common[@]}" ;;
    cpp) measure "$tool" "$round" "$bare" "$work/model.pt" "$work/corpus.txt" "${common[@]}" --max-length 256 ;;
  esac
  if [[ "$tool" == headscan || "$tool" == headscan-q ]]; then
    local report="$work/report"; [[ "$tool" == headscan-q ]] && report="$work/report-q"
    cp "$report/heads.json" "$times/$tool.$round.heads.json"
    last_heads="$times/$tool.$round.heads.json"
  fi
}

compilers="$(pgrep -c cc1plus || true)"
echo "$(date -u '+%Y-%m-%d %H:%M UTC'): $rounds round(s), $threads threads, batch size $batch_size; load average $(cut -d' ' -f1-3 /proc/loadavg), $compilers compiler process(es) running"
echo "headscan: $headscan built $(date -u -r "$headscan" '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- analyzer heads 2>/dev/null || echo ' with uncommitted changes in analyzer/ or heads/')"
for ((round = 1; round <= rounds; ++round)); do
  echo "round $round:"
  for tool in "${tools[@]}"; do run_tool "$tool" "$round"; done
done

"$base_python" - "$work" "$rounds" "$threads" "$batch_size" "${tools[@]}" <<'EOF'
import json, os, statistics, sys
work, rounds, threads, batch_size, tools = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
times = os.path.join(work, "times")
names = {"headscan": "headscan, default run (parsing, probes, needles, HTML, plots)",
         "headscan-q": "headscan `-q --no-html --no-plots --parser none`",
         "transformer-lens": "TransformerLens 4.3.0: run_with_cache (patterns) + head_detector ×3",
         "nnsight": "nnsight 0.8.1: attention saved in a trace + the 3 scores",
         "transformers": "bare transformers forward (Python, SDPA)",
         "cpp": "bare C++ forward (headscan_bench_forward, TorchScript)"}
result = {"rounds": rounds, "threads": threads, "batch_size": batch_size, "tools": {}}
for tool in tools:
    runs = [line.split() for line in open(os.path.join(times, tool))]
    entry = {"wall_s": statistics.median(float(r[0]) for r in runs),
             "cpu_s": statistics.median(float(r[1]) for r in runs),
             "peak_rss_mib": statistics.median(float(r[2]) for r in runs) / 1024,
             "others_busy_percent": [int(r[3]) for r in runs], "runs": len(runs)}
    if tool.startswith("headscan"):
        phases = [json.load(open(os.path.join(times, f"{tool}.{k}.heads.json")))["run"]["phases"] for k in range(1, len(runs) + 1)]
        entry["phases_s"] = {name: statistics.median(p[name] for p in phases) for name in phases[0]}
    elif tool in ("transformer-lens", "nnsight"):
        entry["phases_s"] = json.load(open(os.path.join(times, f"{tool}.json")))["phases"]
    result["tools"][tool] = entry
bases = [b for b in ("transformers", "cpp") if b in result["tools"]]
print(f"\nmedians of {rounds} round(s), {threads} threads, batch size {batch_size}:\n")
print("| run | wall | CPU | peak RSS |" + "".join(f" wall / {b} |" for b in bases))
print("|---|---|---|---|" + "---|" * len(bases))
for tool, entry in result["tools"].items():
    ratios = "".join(f" {entry['wall_s'] / result['tools'][b]['wall_s']:.2f} |" for b in bases)
    print(f"| {names[tool]} | {entry['wall_s']:.1f} s | {entry['cpu_s']:.1f} s | {entry['peak_rss_mib']:.0f} MiB |{ratios}")
print()
for tool, entry in result["tools"].items():
    if "phases_s" in entry:
        print(f"{tool} phases: " + ", ".join(f"{k} {v:.1f} s" for k, v in entry["phases_s"].items()))
with open(os.path.join(work, "peers.json"), "w") as out:
    json.dump(result, out, indent=1)
print(f"\nwrote {os.path.join(work, 'peers.json')}")
EOF

heads="$times/headscan.$rounds.heads.json"
[[ -f "$heads" ]] || heads="$times/headscan-q.$rounds.heads.json"
peer_scores=()
for tool in transformer-lens nnsight; do [[ -f "$times/$tool.json" ]] && peer_scores+=("$times/$tool.json"); done
if [[ -f "$heads" && ${#peer_scores[@]} -gt 0 ]]; then
  echo
  "$peers_python" "$here/agreement.py" "$heads" "${peer_scores[@]}" --json "$work/agreement.json"
fi
