#!/usr/bin/env bash
# The wheel's tests (README, "Tests"), run by scripts/test.sh after ctest: builds the wheel
# (scripts/wheel.sh), installs it into a fresh venv with its declared dependencies (the pinned
# torch from PyPI) and the tests' own (requirements.txt), then runs
#   * pytest on tests/python (the console script, scan() on paths, live modules and strings,
#     DataFrame, errors, Ctrl-C, compare);
#   * examples/quickstart.ipynb, executed headless by nbconvert in a temporary folder;
#   * check_bundled.sh: the installed wheel in a root that has none of the libraries it bundles.
#   * tests/kvpress/run.sh: headscan.kvpress applied by kvpress 0.5.5, in a venv layered on this one.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work="$root/build/python-tests"
venv="$work/venv"
rm -rf "$work"
mkdir -p "$work"

wheel=$(bash "$root/scripts/wheel.sh")
echo "wheel: $wheel ($(du -h "$wheel" | cut -f1))"
# The interpreter of the build's venv (the wheel's Python version), in a venv of its own.
python=$("$root/.venv/bin/python" -c 'import sys; print(sys._base_executable)')
"$python" -m venv "$venv"
# By the build venv's uv (scripts/setup.sh): torch's 3 GB copied from its cache, not unpacked again.
"$root/.venv/bin/uv" pip install -q --link-mode=copy --python "$venv/bin/python" "$wheel" \
  -r "$root/tests/python/requirements.txt" -c "$root/scripts/constraints.txt"
echo "installed into $venv: $("$venv/bin/python" -m pip list --format=freeze 2>/dev/null | grep -E '^(headscan|torch)==' | tr '\n' ' ')"

cd "$work"
"$venv/bin/python" -m pytest -q -p no:cacheprovider -W ignore::DeprecationWarning "$root/tests/python"

mkdir -p "$work/notebook"
cp "$root/examples/quickstart.ipynb" "$work/notebook/"
"$venv/bin/jupyter" nbconvert --to notebook --execute "$work/notebook/quickstart.ipynb" \
  --output executed.ipynb --ExecutePreprocessor.timeout=600
[[ -f "$work/notebook/quickstart-report/heads.json" ]] || { echo "the notebook wrote no report" >&2; exit 1; }
echo "examples/quickstart.ipynb ran without error"

bash "$root/tests/python/check_bundled.sh" "$venv" "$work/bundled"

# headscan.kvpress's tests, in a venv layered on this one (kvpress 0.5.5 needs transformers < 5.3).
bash "$root/tests/kvpress/run.sh"
