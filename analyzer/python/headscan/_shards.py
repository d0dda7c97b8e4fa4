"""run_shard() and merge(): ``headscan MODEL CORPUS --shard I/N -o DIR`` and ``headscan merge``, for
a job scheduler driven from Python (examples/ray_shards.py), with the command line's checks."""

from __future__ import annotations

import numbers
import os
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, Tuple, Union

from . import _core
from ._api import _PATH_ADVICE, _flags, _progress_callback, _threshold_texts, _utf8, _warn


def _shard_text(shard: Union[Tuple[int, int], str]) -> str:
    """``shard`` as ``--shard`` takes it, for the command line's parser to check: (I, N) of whole
    numbers, or the text "I/N" as given."""
    if isinstance(shard, str):
        return _utf8(shard, "shard=")
    if isinstance(shard, Sequence) and len(shard) == 2 and all(
            isinstance(part, numbers.Integral) and not isinstance(part, bool) for part in shard):
        return f"{int(shard[0])}/{int(shard[1])}"
    raise TypeError(f"shard= takes (I, N), two whole numbers (the I-th, from 0, of N shards), or the text \"I/N\"; "
                    f"not {shard!r}")


def run_shard(model: Union[str, os.PathLike], corpus: Union[str, os.PathLike], *,
              shard: Union[Tuple[int, int], str], output: Union[str, os.PathLike], force: bool = False,
              progress: Union[bool, Callable] = True, **options: Any) -> Path:
    """Analyses shard ``shard`` = (I, N) of ``corpus`` and writes its state to ``output``, as
    ``headscan MODEL CORPUS --shard I/N -o OUTPUT`` does; returns ``output``. :func:`merge` of the
    N states gives the report a single run writes, exactly.

    ``model`` and ``corpus`` are paths that every shard shares (merge checks the archive's SHA-256
    and the corpus's fingerprint). ``options`` are :func:`scan`'s (the command line's), and every
    shard of a run takes the same; ``force`` replaces an earlier state in ``output``; ``progress``
    is scan()'s. Raises InputError where the command line exits 2 and RunError where it exits 1.
    """
    model = os.fspath(model) if isinstance(model, os.PathLike) else model
    corpus = os.fspath(corpus) if isinstance(corpus, os.PathLike) else corpus
    _utf8(model, "model", _PATH_ADVICE)
    _utf8(corpus, "corpus", _PATH_ADVICE)
    if not isinstance(force, bool):
        raise TypeError(f"force= takes True or False, not {force!r}")
    flags = _flags(options, "run_shard")
    flags += ["--shard", _shard_text(shard), "-o", _utf8(os.fspath(output), "output", _PATH_ADVICE)]
    if force:
        flags.append("--force")
    with _progress_callback(progress) as callback:
        summary = _core.run_shard(model, corpus, flags, callback)
    _warn(summary["warnings"])
    return Path(output)


def merge(shards: Sequence[Union[str, os.PathLike]], output: Union[str, os.PathLike], *,
          thresholds: Optional[Union[Mapping[str, float], Sequence[str]]] = None, force: bool = False,
          html: bool = True, plots: bool = True) -> Path:
    """Merges the states of all N shards of a run into the report directory ``output``, as
    ``headscan merge SHARD... -o OUTPUT`` does (heads.json equal to the single run's, but for
    "run"); returns ``output``. ``thresholds`` is ``--threshold`` (``{"previous_token": 0.6}``),
    ``force``, ``html`` and ``plots`` are ``--force``, not ``--no-html``, not ``--no-plots``.
    Shards missing, given twice, damaged or of different runs are an InputError (nothing written).
    """
    if isinstance(shards, (str, bytes, os.PathLike)):
        raise TypeError(f"shards= takes a list of the shards' directories, not one path ({shards!r})")
    for keyword, value in (("force", force), ("html", html), ("plots", plots)):
        if not isinstance(value, bool):
            raise TypeError(f"{keyword}= takes True or False, not {value!r}")
    directories = [_utf8(os.fspath(shard), f"shard {index}", _PATH_ADVICE) for index, shard in enumerate(shards)]
    texts = [] if thresholds is None else _threshold_texts(thresholds, "thresholds")
    summary = _core.merge(directories, _utf8(os.fspath(output), "output", _PATH_ADVICE), texts, force, html, plots)
    _warn(summary["warnings"])
    return Path(output)
