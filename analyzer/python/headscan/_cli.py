"""The console script ``headscan``: the command line the wheel carries (headscan/bin/headscan), run
in this process's place with the same arguments, so that its exit codes and output are the CLI's.
``headscan export`` is this package's exporter (headscan._export), run in Python: it needs torch.export
and transformers."""

import importlib.util
import os
import sys
from pathlib import Path


def main() -> None:
    if sys.argv[1:2] == ["export"]:
        from ._export.command import main as export

        sys.exit(export(sys.argv[2:]))
    executable = Path(__file__).resolve().parent / "bin" / "headscan"
    # The binary finds LibTorch in the torch beside it in site-packages (its RPATH); torch
    # installed elsewhere on sys.path (a venv with --system-site-packages, a user site) is found
    # here, without importing it.
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.submodule_search_locations:
        torch_lib = os.path.join(next(iter(spec.submodule_search_locations)), "lib")
        paths = [torch_lib] + [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p]
        os.environ["LD_LIBRARY_PATH"] = os.pathsep.join(paths)
    # `headscan export` of the binary runs `python -m headscan export` with this Python
    # (analyzer/cli/export_command.h), not the one the wheel was built with.
    os.environ.setdefault("HEADSCAN_PYTHON", sys.executable)
    os.execv(executable, [str(executable), *sys.argv[1:]])


if __name__ == "__main__":
    main()
