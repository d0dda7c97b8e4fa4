#!/usr/bin/env bash
# Tokenizer throughput on one core (target: >= 1 M tokens/s for byte-level BPE). Trains a GPT-2
# style byte-level BPE tokenizer.json on a text (bench/make_bpe_tokenizer.py) unless one is given,
# then times Tokenizer::encode over the text's lines (headscan_bench_tokenizer).
#
#   bench/run_tokenizer_speed.sh [options] [TEXT]
#
#   TEXT               a few MB of text, one document per line (default: the concatenated vim
#                      help files, /usr/share/vim/vim*/doc/*.txt, about 9 MB of English)
#   --tokenizer FILE   time this tokenizer.json or .model instead of training one (e.g. GPT-2's)
#   --merges N         merges of the trained tokenizer (default 20000)
#   --repeats N        fresh tokenizers timed; the median is reported (default 3)
#   --build DIR        build directory (default build)
#   --no-build         do not run ninja first
#
# Reported: tokens per second of wall clock and per CPU second of the timing thread (the latter
# is what one core gives even when other processes share the machine), for the first pass over
# the text (empty word cache) and a second pass.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
tokenizer=
merges=20000
repeats=3
build="$root/build"
do_build=1
text=

while (($#)); do
  case "$1" in
    --tokenizer) tokenizer="$2"; shift 2 ;;
    --merges) merges="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --no-build) do_build=0; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    -*) echo "run_tokenizer_speed.sh: unknown option $1" >&2; exit 2 ;;
    *) text="$1"; shift ;;
  esac
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if [[ -z "$text" ]]; then
  shopt -s nullglob
  help_files=(/usr/share/vim/vim*/doc/*.txt)
  if ((${#help_files[@]} == 0)); then
    echo "run_tokenizer_speed.sh: no TEXT given and no vim help files found; give a text file" >&2
    exit 2
  fi
  cat "${help_files[@]}" > "$work/text.txt"
  text="$work/text.txt"
fi

if ((do_build)); then
  ninja -C "$build" headscan_bench_tokenizer >&2
fi
if [[ -z "$tokenizer" ]]; then
  tokenizer="$work/tokenizer.json"
  python3 "$here/make_bpe_tokenizer.py" "$text" "$tokenizer" --merges "$merges" >&2
fi
"$build/bench/headscan_bench_tokenizer" --tokenizer "$tokenizer" --repeats "$repeats" "$text"
