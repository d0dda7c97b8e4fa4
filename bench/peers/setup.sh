#!/usr/bin/env bash
# The peers' venv: build/peers-venv with transformer-lens 4.3.0 and nnsight 0.8.1, every package
# pinned in bench/peers/requirements.txt. It is layered on the project's .venv (a .pth file adds
# .venv's site-packages after its own), so torch 2.11 and transformers 5.17 are not installed twice:
# what .venv already holds at the pinned version pip leaves alone, the rest goes into the new venv.
#
#   bench/peers/setup.sh [--resolve]
#
#   --resolve   install transformer-lens==4.3.0 and nnsight==0.8.1 with whatever pip resolves, then
#               write the resolved set (pip freeze of the layered venv) to requirements.txt
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
base="$root/.venv"
venv="$root/build/peers-venv"
resolve=0
case "${1:-}" in
  --resolve) resolve=1 ;;
  "") ;;
  *) echo "setup.sh: unknown option $1 (--resolve or nothing)" >&2; exit 2 ;;
esac

if [[ ! -x "$base/bin/python" ]]; then
  echo "setup.sh: needs the project's venv $base (scripts/setup.sh creates it)" >&2
  exit 2
fi
base_site="$("$base/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
base_python="$("$base/bin/python" -c 'import sys; print(sys._base_executable)')"

if [[ ! -x "$venv/bin/python" ]]; then
  "$base_python" -m venv "$venv"
fi
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
# A .pth line is appended to sys.path after the venv's own site-packages: the venv's packages win.
echo "$base_site" > "$site/headscan_base_venv.pth"

pip=("$venv/bin/python" -m pip --disable-pip-version-check)
if [[ "$resolve" == 1 ]]; then
  "${pip[@]}" install transformer-lens==4.3.0 nnsight==0.8.1
  {
    echo "# The peers' venv (bench/peers/setup.sh): pip freeze of build/peers-venv layered on .venv."
    "${pip[@]}" freeze --all | grep -v -e '^pip==' -e '^setuptools==' -e '^headscan'
  } > "$here/requirements.txt"
  echo "wrote $here/requirements.txt"
else
  "${pip[@]}" install -r "$here/requirements.txt"
fi
"$venv/bin/python" -c 'from importlib.metadata import version
import torch, transformers, transformer_lens, nnsight
print(", ".join(f"{name} {version(name)}" for name in ("torch", "transformers", "transformer-lens", "nnsight")))'
