"""headscan's KV-cache plan applied by kvpress (README, "Applying the plan with kvpress").

``press(report)`` returns a kvpress ``DuoAttentionPress`` whose attention pattern is headscan's
plan instead of one of DuoAttention's published patterns: the streaming key/value heads keep the
first ``sink_size`` and the last ``recent_size`` tokens of the prompt, the others all of it.
kvpress's own compression runs unchanged (after the prefill, each layer's streaming heads have
their middle keys masked out of every later attention, ``masked_key_indices``); only where the
pattern comes from is replaced. kvpress 0.5.5 is an optional dependency, imported on first use:
``pip install headscan[kvpress]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

import torch

from ._kv_plan import KVPlan, _whole, read_plan

KVPRESS_VERSION = "0.5.5"
_INSTALL = f"pip install headscan[kvpress] (kvpress=={KVPRESS_VERSION}, which needs transformers<5.3)"
_press_class = None


def plan(report: Any, head_compression_ratio: Optional[float] = None) -> KVPlan:
    """The plan of ``report`` as a ``KVPlan``: ``streaming_mask`` (bool [attention layers,
    key/value heads], True = streaming), ``sink_size``, ``recent_size`` and ``layers`` (the model's
    index of each row). ``head_compression_ratio`` as in :func:`press`."""
    return read_plan(report, head_compression_ratio)


def streaming_mask(report: Any, head_compression_ratio: Optional[float] = None) -> torch.Tensor:
    """bool [attention layers, key/value heads], True where the key/value head keeps only the sink
    and the recent window: the plan's own (heads.json ``kv_plan.full_attention_heads`` == 0), or
    with ``head_compression_ratio`` r the round(r · layers · key/value heads) of highest streaming
    score (a key/value head scores the least of its query heads' ``streaming``)."""
    return read_plan(report, head_compression_ratio).streaming_mask


def press(report: Any, *, head_compression_ratio: Optional[float] = None, sink_size: Optional[int] = None,
          recent_size: Optional[int] = None):
    """A kvpress press (``HeadscanPress``, a ``DuoAttentionPress``) that applies the plan of
    ``report`` (a heads.json path, a report directory holding heads.json or kv_plan/, a headscan
    ``Report``, or heads.json as a dict): its streaming key/value heads, or with
    ``head_compression_ratio`` r that share of key/value heads of highest streaming score; the
    plan's sink and recent window unless ``sink_size``/``recent_size`` are given. Use it as kvpress's
    presses: ``with press(model): model(...)``, or ``pipeline(..., press=press)``.

    Raises ImportError naming ``pip install headscan[kvpress]`` without kvpress 0.5.5, and
    ValueError on a report without a plan (a bidirectional model's) or a model the plan does not fit.
    """
    chosen = read_plan(report, head_compression_ratio)
    sink = chosen.sink_size if sink_size is None else sink_size
    recent = chosen.recent_size if recent_size is None else recent_size
    return press_from_mask(chosen.streaming_mask, sink, recent, layers=chosen.layers,
                           model_layers=chosen.model_layers, source=chosen.source)


def press_from_mask(mask: torch.Tensor, sink_size: int, recent_size: int, *, layers: Optional[Sequence[int]] = None,
                    model_layers: Optional[int] = None, source: str = "the mask"):
    """A ``HeadscanPress`` of any streaming mask (bool [attention layers, key/value heads]): what
    :func:`press` returns for a plan, for other choices of heads at the same sink and window (e.g.
    random streaming heads at the plan's compression). ``layers``: the model's layer index of each
    row (default: row i is layer i); ``model_layers``: the model's number of layers, checked when
    the press is applied (default: the rows' number without ``layers``, unchecked with them)."""
    try:
        mask = torch.as_tensor(mask)
    except (TypeError, ValueError, RuntimeError) as error:
        raise ValueError(f"{source}: the streaming mask must be bool [layers, key/value heads], found {mask!r:.200} "
                         f"({error})") from error
    if mask.dim() != 2 or mask.dtype != torch.bool or 0 in mask.shape:
        raise ValueError(f"{source}: the streaming mask must be bool [layers, key/value heads], at least one of each, "
                         f"got {mask.dtype} {list(mask.shape)}")
    for name, value, least in (("sink_size", sink_size, 0), ("recent_size", recent_size, 1)):
        if not _whole(value) or value < least:
            # recent_size 0 would make kvpress's slice [sink:-recent] empty: nothing would be masked.
            raise ValueError(f"{name} must be a whole number ≥ {least}, found {value!r}")
    if layers is None:
        layers, model_layers = tuple(range(mask.shape[0])), mask.shape[0] if model_layers is None else model_layers
    layers = tuple(layers)
    if len(layers) != mask.shape[0]:
        raise ValueError(f"{source}: {len(layers)} layer indices for a mask of {mask.shape[0]} rows")
    if not all(_whole(index) and index >= 0 for index in layers) or len(set(layers)) != len(layers):
        raise ValueError(f"{source}: layers must be the model's distinct index (a whole number ≥ 0) of each row, "
                         f"found {list(layers)!r:.200}")
    if model_layers is not None and (not _whole(model_layers) or model_layers < len(layers)):
        raise ValueError(f"{source}: model_layers must be the model's number of layers, at least the mask's "
                         f"{len(layers)} rows, found {model_layers!r:.100}")
    return _kvpress_press_class()(plan_mask=mask.clone(), plan_layers=layers, plan_sink_size=sink_size,
                                  plan_recent_size=recent_size, plan_model_layers=model_layers, plan_source=source)


def _kvpress_press_class():
    """HeadscanPress, defined on first use so that importing headscan never needs kvpress."""
    global _press_class
    if _press_class is None:
        _press_class = _define_press_class()
    return _press_class


def _define_press_class():
    try:
        import kvpress
        from kvpress import DuoAttentionPress
        from importlib.metadata import version
        found = version("kvpress")
    except ImportError as error:
        raise ImportError(f"headscan.kvpress needs kvpress: {_INSTALL}") from error
    if found != KVPRESS_VERSION:
        # The press replaces DuoAttentionPress's loading of its pattern, which is kvpress's own code.
        raise ImportError(f"headscan.kvpress is made for kvpress {KVPRESS_VERSION}, found kvpress {found} at "
                          f"{kvpress.__file__}: {_INSTALL}")

    @dataclass
    class HeadscanPress(DuoAttentionPress):
        """DuoAttentionPress with headscan's plan as its attention pattern: ``plan_mask`` (bool
        [attention layers, key/value heads], True = streaming), the model's layer index of each
        row (``plan_layers``), the sink and the recent window. ``head_compression_ratio``,
        ``sink_size``, ``recent_size`` and ``streaming_mask`` (over every decoder layer, as kvpress
        indexes it by ``layer_idx``) are set from them; kvpress's compression is unchanged."""

        plan_mask: torch.Tensor = None
        plan_layers: tuple = ()
        plan_sink_size: int = 0
        plan_recent_size: int = 1
        plan_model_layers: Optional[int] = None
        plan_source: str = "the plan"

        def __post_init__(self):
            self.sink_size, self.recent_size = self.plan_sink_size, self.plan_recent_size
            self.on_the_fly_scoring = False
            cells = self.plan_mask.numel()
            # kvpress reads a positive ratio as "some heads stream"; the share is the plan's.
            self.head_compression_ratio = self.plan_mask.sum().item() / cells if cells else 0.0

        def post_init_from_model(self, model):
            """Checks that the plan fits ``model`` and spreads it over the decoder layers that
            kvpress hooks (``model.model.layers``): rows at their layer index, any other layer full."""
            if type(model).__name__ == "Gemma3ForConditionalGeneration":
                raise ValueError("DuoAttentionPress is not supported for Gemma3ForConditionalGeneration (kvpress "
                                 f"{KVPRESS_VERSION}), and so neither is headscan's plan through it")
            decoder = model.model.language_model if hasattr(model.model, "language_model") else model.model
            layers = decoder.layers
            without = [index for index, layer in enumerate(layers) if not hasattr(layer, "self_attn")]
            if without:
                raise ValueError(
                    f"{type(model).__name__}: kvpress {KVPRESS_VERSION} hooks the self-attention of every decoder layer, "
                    f"and layers {without} have none (a hybrid's linear-attention or state-space layers), so kvpress "
                    "cannot press this model; the plan's rows are its attention layers only")
            kv_heads = model.config.get_text_config().num_key_value_heads
            if self.plan_mask.shape[1] != kv_heads:
                raise ValueError(f"{self.plan_source}: the plan has {self.plan_mask.shape[1]} key/value heads per layer, "
                                 f"{type(model).__name__} has {kv_heads}; give the report of this model")
            outside = [index for index in self.plan_layers if not 0 <= index < len(layers)]
            if outside or len(set(self.plan_layers)) != len(self.plan_layers):
                raise ValueError(f"{self.plan_source}: the plan's layers {list(self.plan_layers)} are not distinct "
                                 f"layers of {type(model).__name__}'s {len(layers)}; give the report of this model")
            if self.plan_model_layers is not None and self.plan_model_layers != len(layers):
                raise ValueError(f"{self.plan_source}: the plan's model has {self.plan_model_layers} layers, "
                                 f"{type(model).__name__} has {len(layers)}; give the report of this model")
            mask = torch.zeros(len(layers), kv_heads, dtype=torch.bool)
            mask[list(self.plan_layers)] = self.plan_mask
            self.streaming_mask = mask.to(model.device)
            self.sink_size, self.recent_size = self.plan_sink_size, self.plan_recent_size

        def load_attention_pattern(self, model):
            """(sink_size, recent_size, scores [layers, key/value heads]) as DuoAttention's files
            give them: 1 for a full head, 0 for a streaming one."""
            self.post_init_from_model(model)
            return self.sink_size, self.recent_size, (~self.streaming_mask).float().cpu().numpy()

    HeadscanPress.__module__ = __name__
    HeadscanPress.__qualname__ = "HeadscanPress"
    return HeadscanPress
