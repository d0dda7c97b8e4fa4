#!/usr/bin/env bash
# Quick start: install, build, and run headscan on the bundled demo model and corpus; then analyse
# the demo's training checkpoints and compare them, to watch the induction head form.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/setup.sh"
headscan=$root/build/headscan
corpus=$root/data/demo_corpus.txt
# The demo corpus is synthetic, not English: no dependency parser. --ablation adds the causal
# evidence: the induction head's dependence on the previous-token head.
"$headscan" "$root/data/demo.pt" "$corpus" -o "$root/demo-report" --force --parser none --ablation -q
echo "report: $root/demo-report/index.html (scores and labels in heads.json beside it)"

# The checkpoints saved while the demo model trained (data/demo_checkpoints/, each with its step),
# one report each, then one comparison: the phase change in which the induction head forms.
runs=()
for checkpoint in "$root"/data/demo_checkpoints/*.pt; do
  run=$root/demo-checkpoints/$(basename "$checkpoint" .pt)
  "$headscan" "$checkpoint" "$corpus" -o "$run" --force --parser none --no-plots -q
  runs+=("$run")
done
"$headscan" compare "${runs[@]}" -o "$root/demo-compare" --force
