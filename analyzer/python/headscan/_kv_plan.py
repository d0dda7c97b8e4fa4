"""headscan's KV-cache plan read from a report (README, "Sink rate and KV-cache plan"): which
key/value heads keep a StreamingLLM cache (the sink and the recent window) and which the whole
context, per attention layer, as heads.json's ``kv_plan`` and the report directory's ``kv_plan/``
(DuoAttention's ``full_attention_heads.tsv`` and ``config.json``) give it."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

import torch


@dataclass(frozen=True)
class KVPlan:
    """``streaming_mask``: bool [attention layers, key/value heads], True where the key/value head
    keeps only the first ``sink_size`` and the last ``recent_size`` tokens; ``layers``: the model's
    layer index of each row (the attention layers, in the model's order); ``model_layers``: how many
    layers the model has, attention or not (None when the report does not say: kv_plan/ of a
    hybrid); ``source``: where it was read, for messages."""

    streaming_mask: torch.Tensor
    sink_size: int
    recent_size: int
    layers: tuple
    model_layers: Optional[int]
    source: str


def read_plan(report: Any, head_compression_ratio: Optional[float] = None) -> KVPlan:
    """The plan of ``report`` (a heads.json path, a report directory, a headscan ``Report`` or the
    heads.json document as a dict): its own streaming heads, or with ``head_compression_ratio`` r
    the round(r · layers · key/value heads) key/value heads of highest streaming score."""
    document, directory, source = _load(report)
    if document is None:
        if head_compression_ratio is not None:
            raise ValueError(f"{source}: head_compression_ratio ranks heads by their streaming scores, which are in "
                             "heads.json, and this report directory holds only kv_plan/; give the directory with "
                             "heads.json")
        return _plan_of_files(directory, source)
    plan = document.get("kv_plan")
    if not isinstance(plan, dict):
        causal = document.get("model", {}).get("causal")
        why = "the model is not causal (model.causal is false), and a bidirectional model keeps no KV cache" \
            if causal is False else "a report of a causal model has one"
        raise ValueError(f"{source}: heads.json has no kv_plan, so there is no KV-cache plan to apply ({why}); give "
                         "the report of a causal model, as headscan wrote it")
    layers, model_layers = _attention_layers(document, source)
    full = _matrix(plan.get("full_attention_heads"), f"{source}: kv_plan.full_attention_heads")
    if len(full) != len(layers):
        raise ValueError(f"{source}: kv_plan.full_attention_heads has {len(full)} rows but model.layers lists "
                         f"{len(layers)} attention layers; give heads.json as headscan wrote it")
    sink, recent = _window(plan, f"{source}: kv_plan")
    if head_compression_ratio is None:
        mask = torch.tensor(full, dtype=torch.int64).eq(0) if full else torch.zeros(0, 0, dtype=torch.bool)
    else:
        mask = _most_streaming(document, layers, len(full[0]) if full else 0, head_compression_ratio, source)
    return KVPlan(mask, sink, recent, tuple(layers), model_layers, source)


def _load(report: Any):
    """(heads.json document or None, report directory or None, a name for messages)."""
    if isinstance(report, dict):
        return report, None, "heads.json"
    document = getattr(report, "json", None)
    if isinstance(document, dict):
        return document, None, f"the {type(report).__name__}'s heads.json"
    if not isinstance(report, (str, os.PathLike)):
        raise TypeError(f"report must be a heads.json path, a report directory, a headscan Report or heads.json as a "
                        f"dict, not {type(report).__name__}")
    path = Path(report)
    if path.is_dir():
        if (path / "heads.json").is_file():
            return _read_json(path / "heads.json"), path, str(path / "heads.json")
        if (path / "kv_plan" / "full_attention_heads.tsv").is_file():
            return None, path / "kv_plan", str(path / "kv_plan")
        if (path / "full_attention_heads.tsv").is_file():
            return None, path, str(path)
        raise ValueError(f"{path}: holds neither heads.json nor kv_plan/full_attention_heads.tsv; give a headscan "
                         "report directory or its heads.json")
    if not path.is_file():
        raise ValueError(f"{path}: no such file or directory; give a headscan report directory or its heads.json")
    return _read_json(path), path.parent, str(path)


def _read_json(path: Path) -> dict:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: cannot be read as JSON ({error}); give heads.json as headscan wrote it") from error
    if not isinstance(document, dict):
        raise ValueError(f"{path}: is not a JSON object; give heads.json as headscan wrote it")
    return document


def _plan_of_files(directory: Path, source: str) -> KVPlan:
    """DuoAttention's two files: full_attention_heads.tsv (1 = full) and config.json."""
    try:
        rows = [line.split("\t") for line in (directory / "full_attention_heads.tsv").read_text().splitlines()]
        full = [[int(value) for value in row] for row in rows if row != [""]]
    except ValueError as error:
        raise ValueError(f"{source}/full_attention_heads.tsv: not rows of tab-separated 0 and 1 ({error})") from error
    full = _matrix(full, f"{source}/full_attention_heads.tsv")
    config = _read_json(directory / "config.json")
    sink, recent = _window(config, f"{source}/config.json")
    # Without "layers" the rows are every layer of the model; with it, the model's other layers are unknown.
    layers = config.get("layers", list(range(len(full))))
    if not isinstance(layers, list) or len(layers) != len(full) or not all(_whole(v) for v in layers):
        raise ValueError(f"{source}/config.json: layers must list the model's index of each of the TSV's "
                         f"{len(full)} rows, found {layers!r}")
    mask = torch.tensor(full, dtype=torch.int64).eq(0) if full else torch.zeros(0, 0, dtype=torch.bool)
    return KVPlan(mask, sink, recent, tuple(layers), None if "layers" in config else len(full), source)


def _matrix(rows: Any, where: str) -> list:
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows) or \
            len({len(row) for row in rows}) > 1 or not all(value in (0, 1) for row in rows for value in row):
        raise ValueError(f"{where}: must be rows of equal length of 1 (full) or 0 (streaming), found {rows!r:.200}")
    return rows


def _window(holder: dict, where: str) -> tuple:
    sink, recent = holder.get("sink_size"), holder.get("recent_size")
    if not _whole(sink) or not _whole(recent) or sink < 0 or recent < 1:
        raise ValueError(f"{where}: sink_size must be a whole number ≥ 0 and recent_size one ≥ 1, found {sink!r} "
                         f"and {recent!r}")
    return sink, recent


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _attention_layers(document: dict, source: str) -> tuple:
    """(the model's index of each plan row, the model's number of layers): model.layers' entries of
    kind "attention" and their count, or rows 0 … n−1 of n layers when heads.json gives only their
    number (the model's own numbering unknown)."""
    layers = document.get("model", {}).get("layers")
    if _whole(layers):
        return list(range(layers)), layers
    if not isinstance(layers, list) or not all(isinstance(entry, dict) for entry in layers):
        raise ValueError(f"{source}: model.layers must be the number of attention layers or the list of the model's "
                         f"layers, found {layers!r:.200}; give heads.json as headscan wrote it")
    return [entry.get("index") for entry in layers if entry.get("kind") == "attention"], len(layers)


def _most_streaming(document: dict, layers: list, kv_heads: int, ratio: Union[float, int], source: str) -> torch.Tensor:
    """The round(ratio · rows · kv_heads) key/value heads of highest streaming score. A key/value
    head's score is the least of its query heads' ``streaming`` scores: its cache is shared, so it
    keeps no more of the attention than its least local query head does (the plan's own rule, full
    when any query head is full, is the same grouping). Ties go to the earlier layer, then head."""
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 <= ratio <= 1 or math.isnan(ratio):
        raise ValueError(f"head_compression_ratio must be a number from 0 to 1, found {ratio!r}")
    row_of = {layer: row for row, layer in enumerate(layers)}
    query_heads = document.get("model", {}).get("heads")
    group = max(1, query_heads // kv_heads) if _whole(query_heads) and kv_heads > 0 else 1
    # A head without a score (none measured) is never streaming before a measured one.
    scores = [[None] * kv_heads for _ in layers]
    for head in document.get("heads", []):
        row = row_of.get(head.get("layer"))
        kv_head = head.get("kv_group", head.get("head", 0) // group)
        if row is None or not _whole(kv_head) or not 0 <= kv_head < kv_heads:
            continue
        score = head.get("scores", {}).get("streaming")
        score = -math.inf if score is None else float(score)
        cell = scores[row][kv_head]
        scores[row][kv_head] = score if cell is None else min(cell, score)
    flat = [-math.inf if score is None else score for row in scores for score in row]
    if all(score == -math.inf for score in flat):
        note = document.get("kv_plan", {}).get("note", "no head has a streaming score")
        raise ValueError(f"{source}: head_compression_ratio ranks key/value heads by their streaming scores, and this "
                         f"report has none ({note})")
    chosen = round(len(flat) * ratio)
    order = sorted(range(len(flat)), key=lambda index: (-flat[index], index))[:chosen]
    mask = torch.zeros(len(flat), dtype=torch.bool)
    mask[order] = True
    return mask.view(len(layers), kv_heads)
