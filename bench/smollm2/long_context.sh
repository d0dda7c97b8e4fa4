#!/usr/bin/env bash
# SmolLM2-135M at --max-length 4096: headscan's default run over windows of 4,096 tokens (the
# corpus of bench/smollm2/corpus.py joined into two lines, 11,540 tokens) with the long-context
# needle grid --max-length asks for, against transformers' bare SDPA forward of the same windows
# (bench/smollm2/bare_sdpa.py). Prints each run, then the medians: wall, peak RSS, and the tokens
# per second of headscan's corpus pass and needle probes (from its progress lines) and of the bare
# forward.
#
#   bash bench/smollm2/long_context.sh [WORK_DIR]   (after bench/smollm2/run.sh; REPEATS=3, THREADS=2)
#
# Reuses run.sh's venv, conversion and export in WORK_DIR (default build-bench/smollm2); waits for
# an idle machine before each run (bench/idle.sh), the two sides alternating.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=${1:-$root/build-bench/smollm2}
repeats=${REPEATS:-3}
threads=${THREADS:-2}
length=${LENGTH:-4096}
wait_idle=${WAIT_IDLE:-120}
source "$root/bench/idle.sh"
headscan="$root/build/headscan"
python="$work/venv/bin/python"
for needed in "$headscan" "$python" "$work/smollm2.pt2" "$work/model/config.json"; do
  [[ -e "$needed" ]] || { echo "long_context.sh: no $needed; run bench/smollm2/run.sh first" >&2; exit 2; }
done
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 OMP_NUM_THREADS="$threads"
long="$work/long"
rm -rf "$long"
mkdir -p "$long"
"$python" "$root/bench/smollm2/corpus.py" "$long/documents.txt"
# Two lines of the 48 documents each: windows of $length tokens.
for _ in 1 2; do tr '\n' ' ' <"$long/documents.txt"; echo; done >"$long/corpus.txt"

# rate FILE PHASE: the tokens per second of a headscan progress line "100% of PHASE: ...".
rate() { grep -o "100% of $2: [0-9]* tokens, [0-9]* tokens/s" "$1" | tail -1 | awk '{ print $(NF-1) }'; }
for round in $(seq 1 "$repeats"); do
  busy=$(settle)
  /usr/bin/time -f '%e %M' -o "$long/headscan.last" "$headscan" "$work/smollm2.pt2" "$long/corpus.txt" \
    --max-length "$length" --threads "$threads" -o "$long/report" --force >"$long/headscan.out" 2>"$long/headscan.err" || {
    echo "long_context.sh: headscan failed:" >&2; tail -n 20 "$long/headscan.err" >&2; exit 1; }
  read -r wall kib <"$long/headscan.last"
  corpus=$(rate "$long/headscan.err" corpus)
  needles=$(rate "$long/headscan.err" "needle probes")
  echo "$wall $kib $corpus $needles" >>"$long/headscan.times"
  printf '  headscan  %7.1f s %6.0f MiB   corpus pass %s tokens/s, needle probes %s tokens/s (busy %d %%)\n' \
    "$wall" "$(awk -v k="$kib" 'BEGIN { print k / 1024 }')" "$corpus" "$needles" "$busy"
  busy=$(settle)
  /usr/bin/time -f '%e %M' -o "$long/bare.last" "$python" "$root/bench/smollm2/bare_sdpa.py" "$work/model" \
    "$long/corpus.txt" --threads "$threads" --max-length "$length" >"$long/bare.out" 2>"$long/bare.err" || {
    echo "long_context.sh: bare_sdpa.py failed:" >&2; tail -n 20 "$long/bare.err" >&2; exit 1; }
  read -r wall kib <"$long/bare.last"
  tokens=$(grep -o '[0-9]* tokens' "$long/bare.out" | head -1 | cut -d' ' -f1)
  seconds=$(grep -o 'forward [0-9.]* s' "$long/bare.out" | head -1 | cut -d' ' -f2)
  bare_rate=$(awk -v t="$tokens" -v s="$seconds" 'BEGIN { printf "%.0f", t / s }')
  echo "$wall $kib $bare_rate" >>"$long/bare.times"
  printf '  bare      %7.1f s %6.0f MiB   forward %s tokens/s (busy %d %%)\n' \
    "$wall" "$(awk -v k="$kib" 'BEGIN { print k / 1024 }')" "$bare_rate" "$busy"
done
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
column() { awk -v c="$2" '{ print $c }' "$1" | median; }
echo "medians of $repeats ($threads threads, --max-length $length):"
echo "  headscan default run: $(column "$long/headscan.times" 1) s, $(( $(column "$long/headscan.times" 2 | cut -d. -f1) / 1024 )) MiB;" \
     "corpus pass $(column "$long/headscan.times" 3) tokens/s, needle probes $(column "$long/headscan.times" 4) tokens/s"
echo "  bare SDPA forward:    $(column "$long/bare.times" 1) s, $(( $(column "$long/bare.times" 2 | cut -d. -f1) / 1024 )) MiB;" \
     "$(column "$long/bare.times" 3) tokens/s"
