"""export(): a live torch.nn.Module (a transformers model as loaded, eager or SDPA attention)
exported with torch.export to a .pt2 archive, on disk or in memory; scan() runs the C++ core on
that archive for any nn.Module that is not a ScriptModule."""

from __future__ import annotations

import json
import numbers
import os
import warnings
from pathlib import Path
from typing import Any, Mapping, Optional, Union

from ._core import InputError, RunError
from ._export import ExportError, ExportInputError
from ._export.exporter import export_model, extra_files
from ._export.headscan_json import MAX_LENGTH
from ._export.metadata import DEFAULT_MAX_LENGTH_CAP, choose_bos, default_name, model_positions, unpadded_tokenizer
from ._export.model import refuse_family
from ._export.output import Output
from ._export.attention_program import package_programs
from ._export.pt2 import package_to_memory

# The longest sequence an export allows when max_length is not given: the model's positions, at most
# this for a module with eager attention (whose [B, H, T, T] probabilities it materialises per
# layer: the command line's --max-length-cap) or whose config names no positions. A module with SDPA
# attention (headscan computes it in row blocks) takes its positions.
DEFAULT_MAX_LENGTH = DEFAULT_MAX_LENGTH_CAP


class ExportedArchive(os.PathLike):
    """A .pt2 archive held in memory (an anonymous file): ``path`` opens it while the object lives;
    ``scan()`` takes it as a model, and ``save(path)`` writes it to a file."""

    def __init__(self, descriptor: int, path: str, metadata: dict, layers: Optional[list]):
        self._descriptor = descriptor
        self.path = path
        self.metadata = metadata  # headscan.json
        self.layers = layers  # the model's layers (headscan.json "layers"), or None

    def __fspath__(self) -> str:
        if self._descriptor is None:
            raise ValueError("the exported archive is closed")
        return self.path

    def save(self, path: Union[str, os.PathLike]) -> Path:
        with open(self.__fspath__(), "rb") as source, open(path, "wb") as target:
            while chunk := source.read(1 << 20):
                target.write(chunk)
        return Path(path)

    def close(self) -> None:
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None

    def __enter__(self) -> "ExportedArchive":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._descriptor is None else self.path
        return f"<headscan.ExportedArchive {self.metadata.get('name', '')!r} ({state})>"


def _tokenizer_text(tokenizer: Any) -> Optional[str]:
    """tokenizer.json's text of a path, a tokenizers.Tokenizer or a fast transformers tokenizer."""
    if tokenizer is None:
        return None
    if isinstance(tokenizer, (str, os.PathLike)):
        try:
            return Path(tokenizer).read_text(encoding="utf-8")
        except OSError as error:
            raise InputError(f"tokenizer={os.fspath(tokenizer)!r}: {error.strerror}") from None
    backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
    if not hasattr(backend, "to_str"):
        raise TypeError(f"tokenizer= takes a path, a tokenizers.Tokenizer or a fast transformers tokenizer, "
                        f"not {type(tokenizer).__name__}")
    return backend.to_str()


def _max_length(module: Any, max_length: Optional[int]) -> int:
    if max_length is not None:
        if isinstance(max_length, str) and max_length.isdigit():
            max_length = int(max_length)
        if (isinstance(max_length, bool) or not isinstance(max_length, numbers.Integral)
                or not 2 <= max_length <= MAX_LENGTH):
            raise InputError(f"max_length={max_length!r}: give a whole number of tokens from 2 to {MAX_LENGTH} "
                             "(the longest sequence headscan runs)")
        return int(max_length)
    config = getattr(module, "config", None)
    positions = model_positions(config) if config is not None and hasattr(config, "model_type") else None
    if not positions:
        return DEFAULT_MAX_LENGTH
    sdpa = getattr(config, "_attn_implementation", None) == "sdpa"
    # A model of more positions than headscan runs (Llama 4 Scout's 10,485,760) is exported for MAX_LENGTH.
    return min(positions[0], MAX_LENGTH) if sdpa else min(positions[0], DEFAULT_MAX_LENGTH)


def _name(module: Any, config: Any) -> str:
    """headscan.json's name of a live module: its hub name, or the folder it was loaded from named as
    headscan export names it, else its class's name."""
    stored = getattr(config, "_name_or_path", None) if config is not None else None
    if isinstance(stored, str) and stored:
        return default_name(stored)[0] if os.path.isdir(stored) else stored
    return type(module).__name__


def takes_mask(module: Any) -> bool:
    """Whether the module's forward takes an attention mask (by name, or as a second argument)."""
    import inspect

    parameters = inspect.signature(module.forward).parameters
    if "attention_mask" in parameters:
        return True
    positional = [p for p in parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return "input_ids" not in parameters and len(positional) >= 2


def _export(module: Any, tokenizer: Any, metadata: Optional[Mapping[str, Any]], max_length: Optional[int]):
    """(Exported, tokenizer.json's text or None); the exporter's errors as headscan's."""
    import torch

    if not isinstance(module, torch.nn.Module) or isinstance(module, torch.jit.ScriptModule):
        raise InputError(f"export() takes a torch.nn.Module (a transformers model as loaded), not "
                         f"{type(module).__name__}")
    fields = dict(metadata or {})
    text = _tokenizer_text(tokenizer)
    parsed = unpadded_tokenizer(text) if text is not None else None
    config = getattr(module, "config", None)
    config = config if hasattr(config, "to_dict") else None
    if config is not None:
        try:
            refuse_family(config, ExportInputError)
        except ExportInputError as error:
            raise InputError(str(error)) from None
    length = _max_length(module, fields.pop("max_length", max_length))
    try:
        if "bos_token" in fields:
            bos_token = fields.pop("bos_token")
        elif parsed is not None and config is not None:
            bos_token = choose_bos(None, parsed, os.devnull, config)[0]
        else:
            bos_token = None
    except ExportError as error:  # the template puts several tokens before the text
        raise InputError(f"{error} (here: metadata={{\"bos_token\": TOKEN or None}})") from None
    try:
        fields.setdefault("name", _name(module, config))
        causal = fields.pop("causal", None)
        was_training = module.training
        module.eval()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\..*")
                exported = export_model(module, parsed, max_length=length, bos_token=bos_token, causal=causal,
                                        causal_source="metadata", takes_mask=takes_mask(module), config=config,
                                        metadata=fields)
        finally:
            module.train(was_training)
    except ExportInputError as error:
        raise InputError(str(error)) from None
    except ExportError as error:
        raise RunError(str(error)) from None
    return exported, text


def _export_path(source, out, tokenizer, metadata, max_length):
    """``headscan export SOURCE OUT`` (a model directory or a GGUF file) with export()'s arguments as
    its options; InputError and RunError as export() raises them."""
    from ._export import command

    if out is None:
        raise InputError(f"{source}: a model directory or GGUF file is exported to a file: give out= (a .pt2)")
    argv = [source, os.fspath(out), "--force"]  # --force: an earlier archive of an export only
    if tokenizer is not None:
        if not isinstance(tokenizer, (str, os.PathLike)):
            raise InputError(f"{source}: with a model directory or GGUF file, tokenizer= is the path of a "
                             "tokenizer.json")
        argv += ["--tokenizer", os.fspath(tokenizer)]
    if max_length is not None:
        argv += ["--max-length", str(max_length)]
    fields = dict(metadata or {})
    for key, option in (("name", "--name"), ("bos_token", "--bos")):
        if key in fields:
            argv += [option, str(fields.pop(key))]
    if fields:
        raise InputError(f"{source}: with a model directory or GGUF file, metadata= takes name and bos_token "
                         f"only, not {', '.join(sorted(map(str, fields)))}")
    try:
        args = command.parse_args(argv)
    except SystemExit:  # argparse said why on stderr
        raise InputError(f"{source}: headscan export refused these options: {' '.join(argv[2:])}") from None
    try:
        command.export(args)
    except ExportInputError as error:
        raise InputError(f"{getattr(error, 'path', None) or source}: {error}") from None
    except ExportError as error:
        raise RunError(f"{getattr(error, 'path', None) or source}: {error}") from None
    return Path(out)


def export(module: Any, out: Union[str, os.PathLike, None] = None, *, tokenizer: Any = None,
           metadata: Optional[Mapping[str, Any]] = None,
           max_length: Optional[int] = None) -> Union[Path, ExportedArchive]:
    """Exports ``module`` (a torch.nn.Module: a transformers model as loaded, eager or SDPA
    attention) with torch.export to the .pt2 archive headscan analyses, as ``headscan export`` does
    from a model directory (``module`` may be one too, or a GGUF file: a path, exported by
    ``headscan export`` itself, with ``tokenizer`` a tokenizer.json's path, ``metadata`` its name
    and bos_token, and ``out`` required): forward(input_ids, attention_mask) -> logits, batch and length dynamic
    up to ``max_length`` (default: the model's positions; at most 1024 for a module with eager
    attention, which materialises its T x T probabilities), headscan's observer on every attention,
    checked against the module at lengths across its blocks before it is written.

    ``tokenizer``: a path of a tokenizer.json, a tokenizers.Tokenizer or a fast transformers
    tokenizer, embedded as the archive's tokenizer.json. ``metadata``: fields of headscan.json
    (``name``, ``bos_token``, ``causal``, …) over those chosen. ``out``: the path to write (a .pt2),
    or None for an :class:`ExportedArchive` in memory, which ``scan()`` takes. An existing file at
    ``out`` is replaced only when it is an earlier archive of an export; a directory or any other
    file there is refused (InputError) before the module is exported.

    Raises InputError for a module that cannot be exported (with the reason) and RunError where a
    check fails.
    """
    if isinstance(module, (str, os.PathLike)):
        return _export_path(os.fspath(module), out, tokenizer, metadata, max_length)
    if out is None:
        exported, text = _export(module, tokenizer, metadata, max_length)
        descriptor, path = package_to_memory(exported.program, extra_files(exported, text))
        return ExportedArchive(descriptor, path, exported.metadata, exported.layers)
    out = os.fspath(out)
    if not out.endswith(".pt2"):
        raise InputError(f"{out}: the archive's name must end in .pt2 (an exported program)")
    # OUT is checked and staged before the export (output.py): an earlier archive of an export is
    # replaced, a directory or any other file refused.
    try:
        with Output(out, force=True) as output:
            exported, text = _export(module, tokenizer, metadata, max_length)
            files = extra_files(exported, text)
            output.write(lambda temporary: package_programs(temporary, exported.program, files))
    except ExportInputError as error:
        raise InputError(f"{out}: {error}") from None
    except ExportError as error:
        raise RunError(f"{out}: {error}") from None
    return Path(out)


def archive_for_scan(module: Any, tokenizer: Any, metadata: Optional[Mapping[str, Any]],
                     max_length: Optional[int]) -> ExportedArchive:
    """scan()'s archive of a live nn.Module: exported in memory, with ``metadata`` in headscan.json."""
    if metadata:
        json.dumps(dict(metadata))  # what headscan.json cannot hold is refused here, as for a ScriptModule
    return export(module, None, tokenizer=tokenizer, metadata=metadata, max_length=max_length)
