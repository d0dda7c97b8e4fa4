#!/usr/bin/env bash
# Runs headscan on every fixture model that analyses (tests/fixtures/*.py builds them) over fixed
# corpora and keeps each heads.json, so that two builds can be compared head by head:
#   bench/behaviour_snapshot.sh BUILD_DIR FIXTURE_DIR OUT_DIR [REAL_MODEL.pt REAL_CORPUS]
#   ../shared/tools/heads_diff.py OUT_A/<case>.json OUT_B/<case>.json --ignore run
# A restructuring must leave every case the same. With a real model and corpus (e.g.
# ../shared/data/stories260K), that run is kept too, as real.json.
set -euo pipefail
build=$1
fixtures=$2
out=$3
real_model=${4:-}
real_corpus=${5:-}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A word corpus the fixture tokenizers know (w3..w63), lines of varying length.
python3 - "$work/words.txt" <<'PY'
import random, sys
rng = random.Random(7)
with open(sys.argv[1], "w") as f:
    for n in range(40):
        f.write(" ".join(f"w{rng.randint(3, 63)}" for _ in range(rng.randint(3, 90))) + "\n")
PY

run() {  # case model corpus [options...]
  local name=$1 model=$2 corpus=$3
  shift 3
  "$build/headscan" "$model" "$corpus" -o "$work/$name" --force -q --threads 2 "$@"
  cp "$work/$name/heads.json" "$out/$name.json"
}

for model in gpt2 gpt2_traced gpt2_causal_meta llama bert bmm extra_softmax hf_returns; do
  run "$model" "$fixtures/$model.pt" "$work/words.txt" --parser none --no-html --no-plots
done
run gpt2_max16 "$fixtures/gpt2.pt" "$work/words.txt" --parser none --no-html --no-plots --max-length 16 --batch-size 3
for model in induction_circuit induction_short bidirectional_circuit rare_word; do
  run "$model" "$fixtures/$model.pt" "$fixtures/rare_word_corpus.txt" --parser none --no-html --no-plots
done
run syntax_gold "$fixtures/syntax.pt" "$fixtures/syntax_gold.conllu" --no-html --no-plots
run syntax_text "$fixtures/syntax.pt" "$fixtures/syntax_text.txt" --no-html --no-plots
run random_gpt2 "$fixtures/random_gpt2.pt" "$fixtures/random_corpus.txt" --parser none --no-html --no-plots
run random_bert "$fixtures/random_bert.pt" "$fixtures/random_corpus.txt" --parser none --no-html --no-plots
run ablation_lm "$fixtures/ablation_lm.pt" "$fixtures/ablation_corpus.txt" --parser none --no-html --no-plots --ablation
run ablation_mlm "$fixtures/ablation_mlm.pt" "$fixtures/ablation_corpus.txt" --parser none --no-html --no-plots --ablation
if [[ -n "$real_model" ]]; then
  run real "$real_model" "$real_corpus" --parser none --no-html --no-plots --max-sequences 64
fi
run demo "$root/data/demo.pt" "$root/data/demo_corpus.txt" --parser none --no-html --no-plots
run demo_reports "$root/data/demo.pt" "$root/data/demo_corpus.txt"
ls "$out"
