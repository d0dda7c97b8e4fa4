#!/usr/bin/env bash
# Quick start: install, build, and run headscan on the bundled demo model and corpus.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/setup.sh"
"$root/build/headscan" "$root/data/demo.pt" "$root/data/demo_corpus.txt" -o "$root/demo-report" --force
echo "report: $root/demo-report/index.html (scores and labels in heads.json beside it)"
