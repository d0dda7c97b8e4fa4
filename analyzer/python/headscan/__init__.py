"""headscan: label the attention heads of a transformer by what they do.

The analysis runs in headscan's C++ core (the same library the ``headscan`` command calls), on the
LibTorch of the installed ``torch``. ``scan`` takes an archive (TorchScript .pt or exported
program .pt2), a live ``torch.jit.ScriptModule`` or any ``torch.nn.Module`` (exported in memory
first), and a corpus (a path or an iterable of strings) and returns a :class:`Report`;
``export`` writes a module's .pt2 archive; ``compare`` puts reports side by side; ``run_shard``
writes one shard's state of a run split across processes and ``merge`` adds the states up into
the run's report. Keyword options
are the command line's (``max_length=128`` is ``--max-length 128``), with its defaults and its
messages.
"""

import os as _os
import sys as _sys

# `python -m headscan …` puts the working directory first on sys.path, ahead of the standard library
# and torch: a model directory's argparse.py or torch.py would be imported in their place. It is
# dropped here, before anything else is imported (os and sys already are: no `from __future__`
# either); Python's runpy has looked up a few modules of its own there already (contextlib,
# functools, types, …), which `python -P -m` (3.11+) or the `headscan` command avoid.
if _sys.argv[:1] == ["-m"] and _sys.path[:1] == [_os.getcwd()] and not getattr(_sys.flags, "safe_path", False):
    del _sys.path[0]

import torch  # noqa: F401  (loads LibTorch and torch's type casters before the core)

from . import _core
from ._api import Comparison, Report, compare, scan
from ._core import InputError, RunError
from ._live_export import ExportedArchive, export  # after _core: its operators are headscan's C++ ones
from ._shards import merge, run_shard

__version__ = _core.__version__


class HeadscanWarning(UserWarning):
    """A warning of the analysis (the command line prints these as ``headscan: warning: …``)."""


__all__ = ["scan", "compare", "export", "run_shard", "merge", "Report", "Comparison", "ExportedArchive", "InputError",
           "RunError", "HeadscanWarning", "__version__"]
