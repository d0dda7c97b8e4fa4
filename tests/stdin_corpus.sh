#!/bin/sh
# A corpus piped on standard input ("-", plain or gzip-compressed) gives the heads, counts and
# document frequencies of the same file; headscan idf reads "-" too; no temporary file is left.
#   tests/stdin_corpus.sh WORK_DIR HEADSCAN FIXTURE_DIR PYTHON
set -eu
work=$1 headscan=$2 fixtures=$3 python=$4
rm -rf "$work" && mkdir -p "$work/tmp"
export TMPDIR="$work/tmp"
options="--parser none --no-html --no-plots -q"
# shellcheck disable=SC2086
"$headscan" "$fixtures/rare_word.pt" "$fixtures/rare_word_corpus.txt" -o "$work/file" $options
# shellcheck disable=SC2086
"$headscan" "$fixtures/rare_word.pt" - -o "$work/stdin" $options < "$fixtures/rare_word_corpus.txt"
# shellcheck disable=SC2086
gzip -c "$fixtures/rare_word_corpus.txt" | "$headscan" "$fixtures/rare_word.pt" - -o "$work/stdin-gz" $options
"$headscan" idf "$fixtures/rare_word.pt" - -o "$work/idf.txt" -q < "$fixtures/rare_word_corpus.txt"
cmp "$work/file/idf.txt" "$work/idf.txt"
for run in stdin stdin-gz; do
  cmp "$work/file/idf.txt" "$work/$run/idf.txt"
  "$python" - "$work/file/heads.json" "$work/$run/heads.json" <<'PY'
import json, sys
a, b = (json.load(open(path)) for path in sys.argv[1:3])
assert a["heads"] == b["heads"], "heads differ"
for key in ("lines", "documents", "sequences", "tokens"):
    assert a["corpus"][key] == b["corpus"][key], key
assert b["corpus"]["path"] == "-", b["corpus"]["path"]
PY
done
leftover=$(ls -A "$work/tmp")
[ -z "$leftover" ] || { echo "left in TMPDIR: $leftover"; exit 1; }
echo "stdin corpus: same heads, counts and idf as the file"
