#!/bin/sh
# heads.csv of a report read back with Python's csv module equals its heads.json: on CoNLL-U trees
# (syntactic relations), with --ablation (the causal scores), and from headscan merge.
#   tests/heads_csv.sh WORK_DIR HEADSCAN FIXTURE_DIR
set -eu
work=$1 headscan=$2 fixtures=$3
here=$(dirname "$0")
rm -rf "$work" && mkdir -p "$work"
"$headscan" "$fixtures/syntax.pt" "$fixtures/syntax_gold.conllu" -o "$work/syntax" --no-html --no-plots -q
"$headscan" "$fixtures/ablation_lm.pt" "$fixtures/ablation_corpus.txt" -o "$work/ablation" --ablation \
  --parser none --no-html --no-plots -q
for index in 0 1; do
  "$headscan" "$fixtures/random_gpt2.pt" "$fixtures/shard_corpus.txt" --shard "$index/2" -o "$work/shard$index" \
    --parser none -q
done
"$headscan" merge "$work/shard0" "$work/shard1" -o "$work/merged" --no-html --no-plots -q
python3 "$here/fixtures/check_heads_csv.py" "$work/syntax" "$work/ablation" "$work/merged"
# The syntactic columns are filled where the trees give relations.
grep -q ',nsubj,\|,obj,\|,amod,\|,det,' "$work/syntax/heads.csv"
