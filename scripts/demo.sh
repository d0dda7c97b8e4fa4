#!/usr/bin/env bash
# Quick start: install, build, and run headscan on the bundled demo model and corpus.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/setup.sh"
# The demo corpus is synthetic, not English: no dependency parser. --ablation adds the causal
# evidence: the induction head's dependence on the previous-token head.
"$root/build/headscan" "$root/data/demo.pt" "$root/data/demo_corpus.txt" -o "$root/demo-report" --force \
  --parser none --ablation
echo "report: $root/demo-report/index.html (scores and labels in heads.json beside it)"
