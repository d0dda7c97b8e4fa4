#!/usr/bin/env bash
# headscan.kvpress's tests (README, "Tests"), run at the end of tests/python/run.sh: kvpress 0.5.5
# needs transformers < 5.3, so they run in a venv of their own, build/kvpress-tests/venv, layered on
# the wheel's tests venv (build/python-tests/venv, which tests/python/run.sh made): a .pth puts that
# venv's site-packages after this one's, so the wheel, torch and the tests' tools are not installed
# twice, and what requirements.txt pins differently (transformers, tokenizers, pandas) shadows them.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
base="$root/build/python-tests/venv"
work="$root/build/kvpress-tests"
venv="$work/venv"
[[ -x "$base/bin/python" ]] || { echo "tests/kvpress/run.sh: no $base; run tests/python/run.sh first" >&2; exit 2; }
rm -rf "$work"
mkdir -p "$work"

site() { "$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
"$("$base/bin/python" -c 'import sys; print(sys._base_executable)')" -m venv "$venv"
site "$base/bin/python" > "$(site "$venv/bin/python")/headscan-tests-venv.pth"
# requirements.txt pins everything kvpress needs but what the layered venv holds (torch, headscan):
# uv installs exactly those pins (--no-deps; it does not see the layered packages as installed, as
# pip does), in seconds where pip took a minute.
"$root/.venv/bin/uv" pip install -q --link-mode=copy --no-deps --python "$venv/bin/python" \
  -r "$root/tests/kvpress/requirements.txt"
# The layering held: torch and the wheel from the wheel venv, transformers and kvpress from this one.
"$venv/bin/python" - "$venv" <<'PY'
import sys
from importlib.metadata import version
import headscan, kvpress, torch, transformers
venv = sys.argv[1] + "/"
for module, here in ((torch, False), (headscan, False), (transformers, True), (kvpress, True)):
    if module.__file__.startswith(venv) != here:
        sys.exit(f"{module.__name__} is at {module.__file__}, {'not ' if here else ''}in {venv}")
print(f"kvpress venv: kvpress {version('kvpress')}, transformers {transformers.__version__}; torch {torch.__version__} "
      f"at {torch.__file__}, headscan at {headscan.__file__}")
PY

cd "$work"
"$venv/bin/python" -m pytest -q -p no:cacheprovider -W ignore::DeprecationWarning "$root/tests/kvpress"
