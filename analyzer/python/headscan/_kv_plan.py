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
        model = document.get("model")
        causal = model.get("causal") if isinstance(model, dict) else None
        why = "the model is not causal (model.causal is false), and a bidirectional model keeps no KV cache" \
            if causal is False else "a report of a causal model has one"
        raise ValueError(f"{source}: heads.json has no kv_plan, so there is no KV-cache plan to apply ({why}); give "
                         "the report of a causal model, as headscan wrote it")
    layers, model_layers = _attention_layers(document, source)
    query_heads, kv_heads = _heads_per_layer(document, source)
    full = _matrix(plan.get("full_attention_heads"), f"{source}: kv_plan.full_attention_heads")
    if len(full) != len(layers):
        raise ValueError(f"{source}: kv_plan.full_attention_heads has {len(full)} rows but model.layers lists "
                         f"{len(layers)} attention layers; give heads.json as headscan wrote it")
    if len(full[0]) != kv_heads:
        raise ValueError(f"{source}: kv_plan.full_attention_heads has rows of {len(full[0])} key/value heads but "
                         f"model.kv_heads is {kv_heads}; give heads.json as headscan wrote it")
    sink, recent = _window(plan, f"{source}: kv_plan")
    if head_compression_ratio is None:
        mask = torch.tensor(full, dtype=torch.int64).eq(0)
    else:
        mask = _most_streaming(document, layers, query_heads, kv_heads, head_compression_ratio, source)
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
    tsv = f"{source}/full_attention_heads.tsv"
    try:
        rows = [line.split("\t") for line in (directory / "full_attention_heads.tsv").read_text("utf-8").splitlines()]
        full = [[int(value) for value in row] for row in rows if row != [""]]
    except ValueError as error:
        raise ValueError(f"{tsv}: not rows of tab-separated 0 and 1 ({error})") from error
    full = _matrix(full, tsv)
    config = _read_json(directory / "config.json")
    sink, recent = _window(config, f"{source}/config.json")
    # Without "layers" the rows are every layer of the model; with it, the model's other layers are unknown.
    layers = config.get("layers", list(range(len(full))))
    if not isinstance(layers, list) or len(layers) != len(full) or not all(_whole(v) and v >= 0 for v in layers) \
            or len(set(layers)) != len(layers):
        raise ValueError(f"{source}/config.json: layers must list the model's index of each of the TSV's "
                         f"{len(full)} rows (distinct whole numbers ≥ 0), found {layers!r:.200}")
    mask = torch.tensor(full, dtype=torch.int64).eq(0)
    return KVPlan(mask, sink, recent, tuple(layers), None if "layers" in config else len(full), source)


def _matrix(rows: Any, where: str) -> list:
    """DuoAttention's full_attention_heads: a row per attention layer, a 1 (full) or 0 (streaming)
    per key/value head, at least one of each."""
    if not isinstance(rows, list) or not rows or not all(isinstance(row, list) and row for row in rows) or \
            len({len(row) for row in rows}) > 1 or \
            not all(_whole(value) and value in (0, 1) for row in rows for value in row):
        raise ValueError(f"{where}: must be rows (one per attention layer) of equal length (one per key/value head, "
                         f"at least one) of 1 (full) or 0 (streaming), found {rows!r:.200}")
    return rows


def _window(holder: dict, where: str) -> tuple:
    sink, recent = holder.get("sink_size"), holder.get("recent_size")
    if not _whole(sink) or not _whole(recent) or sink < 0 or recent < 1:
        raise ValueError(f"{where}: sink_size must be a whole number ≥ 0 and recent_size one ≥ 1, found {sink!r} "
                         f"and {recent!r}")
    return sink, recent


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _model(document: dict, source: str) -> dict:
    model = document.get("model")
    if not isinstance(model, dict):
        raise ValueError(f"{source}: model must be an object (the model's shape), found {model!r:.200}; give "
                         "heads.json as headscan wrote it")
    return model


def _attention_layers(document: dict, source: str) -> tuple:
    """(the model's index of each plan row, the model's number of layers): model.layers' entries of
    kind "attention" and their count, or rows 0 … n−1 of n layers when heads.json gives only their
    number (the model's own numbering unknown)."""
    layers = _model(document, source).get("layers")
    if _whole(layers) and layers >= 1:
        return list(range(layers)), layers
    if not isinstance(layers, list) or not all(isinstance(entry, dict) for entry in layers):
        raise ValueError(f"{source}: model.layers must be the number of attention layers (at least 1) or the list of "
                         f"the model's layers, found {layers!r:.200}; give heads.json as headscan wrote it")
    indices = [entry.get("index") for entry in layers if entry.get("kind") == "attention"]
    if not indices or not all(_whole(index) and 0 <= index < len(layers) for index in indices) or \
            len(set(indices)) != len(indices):
        raise ValueError(f"{source}: model.layers' entries of kind \"attention\" must have distinct indices from 0 "
                         f"to {len(layers) - 1} (its {len(layers)} layers), and at least one, found "
                         f"{indices!r:.200}; give heads.json as headscan wrote it")
    return indices, len(layers)


def _heads_per_layer(document: dict, source: str) -> tuple:
    """(query heads, key/value heads) per attention layer: model.heads and model.kv_heads (as many
    as the query heads when heads.json does not say, as headscan reads it)."""
    model = _model(document, source)
    query_heads = model.get("heads")
    kv_heads = model.get("kv_heads", query_heads)
    if not _whole(query_heads) or query_heads < 1:
        raise ValueError(f"{source}: model.heads must be the number of query heads per layer, a whole number ≥ 1, "
                         f"found {query_heads!r:.200}; give heads.json as headscan wrote it")
    if not _whole(kv_heads) or kv_heads < 1 or query_heads % kv_heads:
        raise ValueError(f"{source}: model.kv_heads must be a whole number ≥ 1 that divides model.heads "
                         f"({query_heads}), found {kv_heads!r:.200}; give heads.json as headscan wrote it")
    return query_heads, kv_heads


def _streaming_scores(document: dict, layers: list, query_heads: int, kv_heads: int, source: str) -> list:
    """[rows][key/value heads]: the least ``scores.streaming`` of each key/value head's query heads
    (−inf where one is not measured: null), from heads.json's ``heads`` (attention layers × model.heads
    entries, each (layer, head) once; a streaming score is null or a share, in [0, 1])."""
    heads = document.get("heads")
    if not isinstance(heads, list) or len(heads) != len(layers) * query_heads:
        found = f"{len(heads)} entries" if isinstance(heads, list) else repr(heads)[:200]
        raise ValueError(f"{source}: heads must list {len(layers)} attention layers × {query_heads} heads = "
                         f"{len(layers) * query_heads} heads (model.layers, model.heads), found {found}; give "
                         "heads.json as headscan wrote it")
    row_of = {layer: row for row, layer in enumerate(layers)}
    group = query_heads // kv_heads
    scores = [[None] * kv_heads for _ in layers]
    seen = set()
    for position, head in enumerate(heads):
        where = f"{source}: heads[{position}]"
        if not isinstance(head, dict):
            raise ValueError(f"{where} must be an object, found {head!r:.200}")
        layer, index = head.get("layer"), head.get("head")
        if not _whole(layer) or layer not in row_of or not _whole(index) or not 0 <= index < query_heads:
            raise ValueError(f"{where}: layer must be an attention layer of model.layers ({layers!r:.200}) and head "
                             f"one from 0 to {query_heads - 1}, found layer {layer!r:.100} and head {index!r:.100}")
        if (layer, index) in seen:
            raise ValueError(f"{where}: layer {layer} head {index} is listed twice; give heads.json as headscan "
                             "wrote it")
        seen.add((layer, index))
        kv_head = head.get("kv_group", index // group)
        if not _whole(kv_head) or not 0 <= kv_head < kv_heads:
            raise ValueError(f"{where}.kv_group must be a key/value head from 0 to {kv_heads - 1} (model.kv_heads), "
                             f"found {kv_head!r:.100}")
        measured = head.get("scores")
        if not isinstance(measured, dict):
            raise ValueError(f"{where}.scores must be an object, found {measured!r:.200}")
        score = measured.get("streaming")
        if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float)) or
                                  not 0 <= score <= 1):  # NaN fails both comparisons
            raise ValueError(f"{where}.scores.streaming must be null or the share of attention the sink and window "
                             f"keep, from 0 to 1, found {score!r:.100}; give heads.json as headscan wrote it")
        score = -math.inf if score is None else float(score)
        cell = scores[row_of[layer]][kv_head]
        scores[row_of[layer]][kv_head] = score if cell is None else min(cell, score)
    return scores


def _most_streaming(document: dict, layers: list, query_heads: int, kv_heads: int, ratio: Union[float, int],
                    source: str) -> torch.Tensor:
    """The round(ratio · rows · kv_heads) key/value heads of highest streaming score. A key/value
    head's score is the least of its query heads' ``streaming`` scores: its cache is shared, so it
    keeps no more of the attention than its least local query head does (the plan's own rule, full
    when any query head is full, is the same grouping). Ties go to the earlier layer, then head."""
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 <= ratio <= 1 or math.isnan(ratio):
        raise ValueError(f"head_compression_ratio must be a number from 0 to 1, found {ratio!r}")
    # A key/value head without a score (none measured) is never streaming before a measured one.
    flat = [score for row in _streaming_scores(document, layers, query_heads, kv_heads, source) for score in row]
    if all(score == -math.inf for score in flat):
        note = document["kv_plan"].get("note", "no head has a streaming score")
        raise ValueError(f"{source}: head_compression_ratio ranks key/value heads by their streaming scores, and this "
                         f"report has none ({note})")
    chosen = round(len(flat) * ratio)
    order = sorted(range(len(flat)), key=lambda index: (-flat[index], index))[:chosen]
    mask = torch.zeros(len(flat), dtype=torch.bool)
    mask[order] = True
    return mask.view(len(layers), kv_heads)
