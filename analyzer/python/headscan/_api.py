"""scan() and compare(): keyword options turned into the command line's flags, and the results."""

from __future__ import annotations

import base64
import contextlib
import csv
import html
import io
import json
import numbers
import os
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

from . import _core
from ._core import InputError

# Options of the command line that are not scan()'s: where and what to write is Report.save()'s,
# progress is scan(progress=…)'s, and a shard's state is not a report (run_shard(shard=, output=)
# writes one). run_shard() takes the same options.
_NOT_SCAN_OPTIONS = {"output", "force", "no-html", "no-plots", "quiet", "shard"}
# Keyword names that differ from their flag: thresholds={"name": value} is --threshold NAME=VALUE.
_RENAMED = {"thresholds": "threshold"}


def _number_text(number: Any) -> str:
    """A number as the command line reads it: ints as ints, floats exactly (numpy's too)."""
    if isinstance(number, bool) or not isinstance(number, numbers.Real):
        raise TypeError(f"expected a number, not {number!r}")
    if isinstance(number, numbers.Integral):
        return str(int(number))
    return repr(float(number))


def _utf8(text: Any, where: str, what_to_do: str = 'decode the text with errors="replace", or leave the character '
          'out') -> Any:
    """``text`` (when a str) as given, or InputError saying where it holds what UTF-8 cannot encode:
    the core reads UTF-8, and the corpus's strings are refused the same way."""
    if isinstance(text, str):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            raise InputError(f"{where} holds U+{ord(text[error.start]):04X} at index {error.start}, a lone surrogate, "
                             f"which UTF-8 cannot encode (what errors=\"surrogateescape\" leaves of undecodable "
                             f"bytes); {what_to_do}") from None
    return text


_PATH_ADVICE = "give a path that is valid UTF-8 (rename the file or folder)"
_MODEL_ADVICE = ("give the path of an archive (an exported program .pt2, from headscan export or headscan.export, or "
                 "a TorchScript .pt), a torch.nn.Module (a transformers model as loaded: scan() exports it in memory) "
                 "or a torch.jit.ScriptModule (what torch.jit.trace or torch.jit.script returns)")


def _check_metadata(value: Any, where: str) -> None:
    """Every string of ``metadata`` (keys too) encodable as UTF-8."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            _utf8(key, f"a key of {where}")
            _check_metadata(item, f"{where}[{key!r}]")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check_metadata(item, f"{where}[{index}]")
    else:
        _utf8(value, where)


def _threshold_texts(value: Any, keyword: str) -> list:
    """``--threshold``'s texts NAME=VALUE of ``thresholds={"name": value}`` or ``["name=value", …]``."""
    if isinstance(value, Mapping):
        for key in value:
            _utf8(key, f"a key of {keyword}=")
        texts = [f"{key}={_number_text(number)}" for key, number in value.items()]
    else:
        texts = [value] if isinstance(value, str) else list(value)
    for text in texts:
        if not isinstance(text, str) or "=" not in text:
            raise TypeError(f"{keyword}= takes a dict of name: value, or strings NAME=VALUE; not {text!r}")
        _utf8(text, f"{keyword}=")
    return texts


def _flags(options: Mapping[str, Any], function: str = "scan") -> list:
    known = {name: (takes_value, repeatable) for name, takes_value, repeatable in _core.analysis_flags()}
    flags = []
    for keyword, value in options.items():
        name = _RENAMED.get(keyword, keyword).replace("_", "-")
        if name not in known or name in _NOT_SCAN_OPTIONS:
            allowed = sorted(n.replace("-", "_") for n in known if n not in _NOT_SCAN_OPTIONS and n != "threshold")
            raise TypeError(f"{function}() got an unexpected keyword argument {keyword!r}; the options are "
                            f"{', '.join(allowed + ['thresholds'])}")
        takes_value, repeatable = known[name]
        if value is None or (value is False and not takes_value):
            continue
        if not takes_value:
            if value is not True:
                raise TypeError(f"{keyword}= takes True or False, not {value!r}")
            flags.append("--" + name)
            continue
        if repeatable:  # thresholds={"name": value}, or ["name=value", …]
            for text in _threshold_texts(value, keyword):
                flags += ["--" + name, text]
            continue
        if isinstance(value, bool):
            raise TypeError(f"{keyword}= takes a value, not {value!r}")
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        elif isinstance(value, numbers.Real):
            value = _number_text(value)
        elif isinstance(value, (list, tuple)):  # needle_lengths=[4096, 16384] is --needle-lengths 4096,16384
            value = ",".join(_number_text(item) if isinstance(item, numbers.Real) and not isinstance(item, bool)
                             else str(item) for item in value)
        elif isinstance(value, Mapping):  # probes={"induction": 5, "needles": "none"}: --probes induction=5,needles=none
            value = ",".join(f"{key}={_number_text(item) if isinstance(item, numbers.Real) else item}"
                             for key, item in value.items())
        elif not isinstance(value, str):
            value = str(value).removeprefix("torch.")  # dtype=torch.bfloat16
        flags += ["--" + name, _utf8(str(value), f"{keyword}=")]
    return flags


class _TqdmProgress:
    """Each phase's progress as a tqdm bar, made at its first update and closed at its last: the
    corpus pass (unit "bytes" or "sequences"), then the induction probes ("probe tokens") and the
    needle probes ("needle tokens")."""

    def __init__(self, tqdm: Callable):
        self._tqdm = tqdm
        self._bar = None
        self._started = time.time()

    def __call__(self, done: int, total: int, tokens: int, unit: str, final: bool) -> None:
        if self._bar is None:
            phases = {"bytes": ("headscan", "B"), "sequences": ("headscan", " sequences"),
                      "probe tokens": ("induction probes", " tokens"), "needle tokens": ("needle probes", " tokens")}
            desc, bar_unit = phases.get(unit, ("headscan", f" {unit}"))
            self._bar = self._tqdm(total=total or None, unit=bar_unit, unit_scale=unit == "bytes", desc=desc)
            if unit in ("bytes", "sequences"):
                self._bar.start_t = self._started  # the corpus pass's rate and ETA count from the scan's start
        self._bar.n = done
        self._bar.set_postfix(tokens=tokens, refresh=False)
        if final:
            self.close()
        else:
            self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


@contextlib.contextmanager
def _progress_callback(progress: Union[bool, Callable]):
    """``progress=`` as the core calls it: the callable given, a tqdm bar for True, or None; a bar is
    closed when the run ends, also when it raised (no bar is left open)."""
    callback = progress if callable(progress) else (_tqdm_progress() if progress else None)
    try:
        yield callback
    finally:
        if isinstance(callback, _TqdmProgress):
            callback.close()


def _tqdm_progress() -> Optional[_TqdmProgress]:
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return _TqdmProgress(tqdm)


def _warn(messages: Sequence[str]) -> None:
    from . import HeadscanWarning

    for message in messages:  # control characters escaped, as the command line prints them
        warnings.warn(_core.terminal_text(message), HeadscanWarning, stacklevel=3)


def _read_csv(text: str):
    """A CSV of the core: a pandas DataFrame as pandas.read_csv reads the file, else a list of dicts
    (numbers as numbers, empty fields as None)."""
    try:
        import pandas
    except ImportError:
        def value(field: str):
            if field == "":
                return None
            for kind in (int, float):
                try:
                    return kind(field)
                except ValueError:
                    pass
            return field
        return [{key: value(field) for key, field in row.items()} for row in csv.DictReader(io.StringIO(text))]
    return pandas.read_csv(io.StringIO(text))


class Report:
    """The result of scan(): heads.json (``json``), heads.csv (``heads``) and ``save()``."""

    def __init__(self, result: "_core.ScanResult"):
        self._result = result
        self._saved: list = []  # the directories save() wrote: compare() knows this run by them too
        self.json: dict = json.loads(result.heads_json())
        summary = result.summary()
        self.warnings: list = summary["warnings"]
        self.findings: list = summary["findings"]

    @property
    def heads(self):
        """One row per head with exactly heads.csv's columns: a pandas DataFrame (a list of dicts
        without pandas)."""
        return _read_csv(self._result.heads_csv())

    def save(self, directory: Union[str, os.PathLike], *, force: bool = False, html: bool = True,
             plots: bool = True) -> Path:
        """Writes the report directory as the command line does: heads.json, heads.csv, idf.txt,
        kv_plan/, the HTML pages and the PNG plots. ``force`` replaces an earlier report there."""
        summary = self._result.save(_utf8(os.fspath(directory), "directory", _PATH_ADVICE), force, html, plots)
        self._saved.append(Path(directory))
        # The heads.json written, whose "run" holds the report phase too.
        self.json = json.loads((Path(directory) / "heads.json").read_text(encoding="utf-8"))
        _warn(summary["warnings"][len(self.warnings):])
        return Path(directory)

    def _repr_html_(self) -> str:
        png = base64.b64encode(self._result.head_map_png()).decode("ascii")
        model = self.json["model"]
        corpus = self.json["corpus"]
        counts = {}
        for head in self.json["heads"]:
            counts[head["primary"]] = counts.get(head["primary"], 0) + 1
        labels = ", ".join(f"{count} {label}" for label, count in sorted(counts.items(), key=lambda x: -x[1]))
        return (f"<div><p><b>headscan</b>: {html.escape(str(model.get('name') or model['path']))}, "
                f"{_attention_layers(model)} layers × {model['heads']} heads, {corpus['sequences']} sequences "
                f"({corpus['tokens']} tokens). Primary labels: {html.escape(labels)}</p>"
                f"<img alt='heads by primary label' src='data:image/png;base64,{png}'></div>")

    def __repr__(self) -> str:
        model = self.json["model"]
        return f"<headscan.Report {model['path']}: {_attention_layers(model)} layers x {model['heads']} heads>"


def _attention_layers(model: dict) -> int:
    """The layers with attention maps of heads.json's "model": "layers" is their number, or the
    list of every layer of the model (with its kind) when the model's numbering is known."""
    layers = model["layers"]
    return sum(layer["kind"] == "attention" for layer in layers) if isinstance(layers, list) else layers


def _module(model: Any) -> bool:
    """A torch.nn.Module, a ScriptModule included; torch is imported already."""
    import sys

    torch = sys.modules.get("torch")
    return torch is not None and isinstance(model, torch.nn.Module)


def _live_module(model: Any) -> bool:
    """A torch.nn.Module that is not a ScriptModule (scan() exports it)."""
    import torch

    return _module(model) and not isinstance(model, torch.jit.ScriptModule)


def scan(model: Any, corpus: Union[str, os.PathLike, Iterable[str]], *, progress: Union[bool, Callable] = True,
         metadata: Optional[Mapping[str, Any]] = None, **options: Any) -> Report:
    """Analyses ``model`` over ``corpus`` and returns the :class:`Report`.

    ``model``: the path of an archive (TorchScript .pt or exported program .pt2), a live
    ``torch.jit.ScriptModule`` (what ``torch.jit.trace`` returns; ``metadata`` is then its
    headscan.json, e.g. ``{"causal": True}``, and ``tokenizer`` may be a ``tokenizers.Tokenizer``
    or a fast transformers tokenizer), or any other ``torch.nn.Module`` (a transformers model as
    loaded, eager or SDPA attention), exported in memory first as :func:`export` does (with
    ``metadata`` over the fields it chooses, and ``max_length`` the export's too), its archive
    analysed as the command line analyses a .pt2. ``corpus``: a path (text, .jsonl, .conllu, compressed) or an iterable of
    strings, one document each, pulled only as far as the analysis reads (``max_sequences``).
    ``options``: the command line's, by name (``max_length``,
    ``batch_size``, ``ablation``, ``thresholds={"previous_token": 0.6}``, ``device``, ``dtype``,
    ``examples``, ``tokenizer``, ``parser``, …) with its defaults. ``progress``: a tqdm bar when
    tqdm is installed, False for none, or a function of (done, total, tokens, unit, final); total is
    0 when unknown (an iterable's sequences without ``max_sequences``).

    Raises InputError where the command line exits 2 and RunError where it exits 1, with its
    messages; KeyboardInterrupt (Ctrl-C) stops the run.
    """
    if isinstance(model, os.PathLike):
        model = os.fspath(model)
    if not isinstance(model, str) and not _module(model):
        raise InputError(f"model is a {type(model).__name__}: {_MODEL_ADVICE}")
    if isinstance(corpus, os.PathLike):
        corpus = os.fspath(corpus)
    _utf8(model, "model", _PATH_ADVICE)
    _utf8(corpus, "corpus", _PATH_ADVICE)
    if metadata:
        _check_metadata(dict(metadata), "metadata")
    if _live_module(model):
        from ._live_export import archive_for_scan

        _flags({key: value for key, value in options.items() if key != "tokenizer"})  # refused before the export
        with archive_for_scan(model, options.get("tokenizer"), metadata, options.get("max_length")) as archive:
            options = {key: value for key, value in options.items()
                       if key != "tokenizer" or isinstance(value, (str, os.PathLike))}
            # heads.json names the module as it names a ScriptModule, not by the archive's
            # /proc/self/fd path.
            return _run(archive.path, corpus, progress, None, options, model_name=f"<{type(model).__name__}>")
    return _run(model, corpus, progress, metadata, options)


def _run(model: Any, corpus: Any, progress: Union[bool, Callable], metadata: Optional[Mapping[str, Any]],
         options: dict, model_name: str = "") -> Report:
    """scan() of a path or a ScriptModule; `model_name` names the archive at the path in the run's
    output (heads.json's model.path, messages) instead of its path."""
    tokenizer_json = ""
    tokenizer = options.get("tokenizer")
    if tokenizer is not None and not isinstance(tokenizer, (str, os.PathLike)):
        # A tokenizers.Tokenizer, or a transformers fast tokenizer: its tokenizer.json goes into the
        # live module's archive.
        backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
        if not hasattr(backend, "to_str"):
            raise TypeError(f"tokenizer= takes a path, a tokenizers.Tokenizer or a fast transformers tokenizer, "
                            f"not {type(tokenizer).__name__}")
        tokenizer_json = backend.to_str()
        options = {key: value for key, value in options.items() if key != "tokenizer"}
    with _progress_callback(progress) as callback:
        result = _core.scan(model, corpus, _flags(options), callback,
                            json.dumps(dict(metadata)) if metadata else "", tokenizer_json, model_name)
    report = Report(result)
    _warn(report.warnings)
    return report


class Comparison:
    """The result of compare(): compare.json (``json``), compare.csv (``table``) and ``save()``."""

    def __init__(self, result: "_core.CompareResult"):
        self._result = result
        self.json: dict = json.loads(result.compare_json())
        self.summary: dict = result.summary()

    @property
    def table(self):
        """compare.csv: a pandas DataFrame (a list of dicts without pandas)."""
        return _read_csv(self._result.compare_csv())

    def save(self, directory: Union[str, os.PathLike], *, force: bool = False, html: bool = True,
             plots: bool = True) -> Path:
        """Writes compare.json, compare.csv and the comparison's report as ``headscan compare`` does."""
        summary = self._result.save(_utf8(os.fspath(directory), "directory", _PATH_ADVICE), force, html, plots)
        _warn(summary["warnings"][len(self.summary["warnings"]):])
        return Path(directory)

    def _repr_html_(self) -> str:
        summary = self.summary
        return (f"<div><p><b>headscan compare</b>: {summary['runs']} runs of {summary['layers']} layers × "
                f"{summary['heads']} heads: {html.escape(', '.join(summary['order']))}; "
                f"{summary['changed_heads']} heads changed their primary label; best induction score above 0.5 "
                f"from {html.escape(summary['induction_formed'] or 'no run')}.</p></div>")


def compare(runs: Sequence[Union[Report, str, os.PathLike]], *, scores: Optional[Sequence[str]] = None,
            steps: Optional[Sequence[int]] = None) -> Comparison:
    """Puts reports side by side as ``headscan compare`` does: each run a :class:`Report` or the path
    of a report directory (or its heads.json). ``scores`` and ``steps`` are ``--scores`` and
    ``--steps`` (a list, or the command line's text "0,500,1000"), with its checks and messages."""
    inputs = []
    for index, run in enumerate(runs):
        if isinstance(run, Report):
            model = run.json["model"]
            name = str(model.get("name") or Path(str(model["path"])).stem or f"run {index}")
            inputs.append((name, run._result.heads_json()))
        else:
            inputs.append((_utf8(os.fspath(run), f"run {index}", _PATH_ADVICE), None))
    _refuse_runs_given_twice(runs, [given for given, _ in inputs])
    for score in scores or []:
        _utf8(score, "scores=")
    result = _core.compare(inputs, list(scores or []), None if steps is None else _steps_text(steps))
    comparison = Comparison(result)
    _warn(comparison.summary["warnings"])
    return comparison


def _steps_text(steps: Union[str, Sequence[int]]) -> str:
    """``steps`` as ``--steps`` takes them, for the command line's parser to check: whole numbers
    as written, anything else as its text (which the parser refuses, quoting it)."""
    if isinstance(steps, str):
        return _utf8(steps, "steps=")
    texts = []
    for step in steps:
        integral = isinstance(step, numbers.Integral) and not isinstance(step, bool)
        texts.append(str(int(step)) if integral else _utf8(str(step), "steps="))
    return ",".join(texts)


def _refuse_runs_given_twice(runs: Sequence[Any], given: Sequence[str]) -> None:
    """A run given twice is refused as ``headscan compare`` refuses a directory given twice (the
    core compares directories with each other): the same Report, or a Report and a directory it was
    saved to."""
    def directory(path: str) -> Path:
        path = Path(path)
        return path.parent if path.name == "heads.json" and path.is_file() else path

    def same_directory(a: Path, b: Path) -> bool:
        try:
            return os.path.samefile(a, b)
        except OSError:
            return False

    for i, run in enumerate(runs):
        for j in range(i):
            earlier = runs[j]
            if isinstance(run, Report) and isinstance(earlier, Report):
                twice = run is earlier or run._result is earlier._result
            elif isinstance(run, Report) or isinstance(earlier, Report):
                report, path = (run, given[j]) if isinstance(run, Report) else (earlier, given[i])
                twice = any(same_directory(saved, directory(path)) for saved in report._saved)
            else:
                twice = False  # two paths: the core's check
            if twice:
                raise InputError(f"{given[i]}: this run is given twice (also as {given[j]})")
