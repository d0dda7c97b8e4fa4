#!/usr/bin/env python3
"""What an exported program's observers receive (check_export_pt2.py --observers), without headscan.

    observe_pt2.py MODEL.pt2 RECORDS.json     (RECORDS.json: {"records": [tokenize records], "specials": [ids], "causal": bool})

Defines headscan's operators here, in Python (this process loads no headscan): headscan::observe
records the probabilities it is given, headscan::attention computes scaled_dot_product_attention's
math form and records its probabilities, and a hybrid's sequence mixers (headscan::gated_delta_rule,
ssd_scan, selective_scan) call transformers' torch references. torch runs the archive's program on each record alone;
the scores of hf_references.py are computed from the recorded probabilities, keyed by the layer
each observer carries, and printed as heads.json's {"heads": [{layer, head, scores}]}.
"""

import json
import math
import sys

import torch

sys.dont_write_bytecode = True

from hf_references import SCORES, ReferenceScores  # noqa: E402 (tests/hf/)

RECORDED = []  # (layer, probabilities) in the order the observers run

LIBRARY = torch.library.Library("headscan", "DEF")
LIBRARY.define("observe(Tensor probs, int layer) -> Tensor")
LIBRARY.define("attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask, float dropout_p, "
               "bool is_causal, float? scale, bool enable_gqa, int layer) -> Tensor")
LIBRARY.define("attention.windowed(Tensor query, Tensor key, Tensor value, Tensor? attn_mask, float dropout_p, "
               "bool is_causal, float? scale, bool enable_gqa, int layer, int window_left, int window_right, "
               "int chunk, float? softcap, Tensor? sinks) -> Tensor")


@torch.library.impl(LIBRARY, "observe", "CompositeExplicitAutograd")
def observe(probs, layer):
    RECORDED.append((layer, probs.detach().clone()))
    return probs.clone()


@torch.library.impl(LIBRARY, "attention", "CompositeExplicitAutograd")
def attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, layer):
    return windowed(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, layer, -1, -1, 0, None, None)


@torch.library.impl(LIBRARY, "attention.windowed", "CompositeExplicitAutograd")
def windowed(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, layer, window_left, window_right,
             chunk, softcap, sinks):
    """transformers' masks written out: key j seen by query i when j <= i (causal), j >= i - window_left,
    j <= i + window_right, j in i's chunk counted from the first real key; scores soft-capped before
    masking; each head's sink one more logit of the softmax."""
    if enable_gqa and key.shape[-3] != query.shape[-3]:
        repeat = query.shape[-3] // key.shape[-3]
        key, value = key.repeat_interleave(repeat, -3), value.repeat_interleave(repeat, -3)
    scores = query @ key.transpose(-2, -1) * (scale if scale is not None else 1 / math.sqrt(query.shape[-1]))
    if softcap is not None:
        scores = torch.tanh(scores / softcap) * softcap
    length, keys = scores.shape[-2:]
    i, j = torch.arange(length)[:, None], torch.arange(keys)[None, :]
    seen = torch.ones(length, keys, dtype=torch.bool)
    if is_causal:
        seen &= j <= i
    if window_left >= 0:
        seen &= j >= i - window_left
    if window_right >= 0:
        seen &= j <= i + window_right
    if chunk > 0:
        first = (attn_mask.cumsum(-1) == 0).sum(-1, keepdim=True) if attn_mask is not None else 0
        seen = seen & ((j - first) // chunk == (i - first) // chunk)
    scores = scores.masked_fill(~seen, float("-inf"))
    if attn_mask is not None:
        scores = scores.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else scores + attn_mask
    if sinks is not None:
        sink = sinks.reshape(-1, 1, 1).expand(*scores.shape[:-1], 1)
        probs = torch.cat([scores, sink], -1).softmax(-1)[..., :-1]
    else:
        probs = scores.softmax(-1)
    return observe(probs, layer) @ value


# A hybrid's sequence mixers (headscan/_export/mixer_ops.py): transformers' torch references.
LIBRARY.define("gated_delta_rule(Tensor query, Tensor key, Tensor value, Tensor g, Tensor beta, int chunk_size, "
               "bool use_qk_l2norm) -> Tensor")
LIBRARY.define("ssd_scan(Tensor hidden_states, Tensor dt, Tensor A, Tensor B, Tensor C, int chunk_size, Tensor? D, "
               "Tensor? dt_bias, bool dt_softplus, float dt_min, float dt_max) -> Tensor")
LIBRARY.define("selective_scan(Tensor hidden_states, Tensor dt, Tensor A, Tensor B, Tensor C, Tensor? D, Tensor? z, "
               "Tensor? delta_bias, bool delta_softplus) -> Tensor")


def reference(module, name):
    import importlib
    import inspect

    return inspect.unwrap(getattr(importlib.import_module(f"transformers.models.{module}.modeling_{module}"), name))


@torch.library.impl(LIBRARY, "gated_delta_rule", "CompositeExplicitAutograd")
def gated_delta_rule(query, key, value, g, beta, chunk_size, use_qk_l2norm):
    return reference("qwen3_next", "torch_chunk_gated_delta_rule")(
        query, key, value, g=g, beta=beta, chunk_size=chunk_size, use_qk_l2norm_in_kernel=use_qk_l2norm)[0].contiguous()


@torch.library.impl(LIBRARY, "ssd_scan", "CompositeExplicitAutograd")
def ssd_scan(hidden_states, dt, A, B, C, chunk_size, D, dt_bias, dt_softplus, dt_min, dt_max):
    return reference("mamba2", "mamba2_chunk_scan")(hidden_states, dt, A, B, C, chunk_size, D=D, dt_bias=dt_bias,
                                                    dt_softplus=dt_softplus, dt_limit=(dt_min, dt_max)).contiguous()


@torch.library.impl(LIBRARY, "selective_scan", "CompositeExplicitAutograd")
def selective_scan(hidden_states, dt, A, B, C, D, z, delta_bias, delta_softplus):
    return reference("mamba", "mamba_selective_scan")(hidden_states, dt, A, B, C, D=D, z=z, delta_bias=delta_bias,
                                                      delta_softplus=delta_softplus).contiguous()


@torch.library.register_fake("headscan::observe")
def _(probs, layer):
    return torch.empty_like(probs)


@torch.library.register_fake("headscan::attention")
def _(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, layer):
    return query.new_empty(query.shape[:-1] + (value.shape[-1],))


@torch.library.register_fake("headscan::attention.windowed")
def _(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, layer, window_left, window_right, chunk,
      softcap, sinks):
    return query.new_empty(query.shape[:-1] + (value.shape[-1],))


def main(archive, records_path):
    from torch.export.pt2_archive._package import load_pt2

    with open(records_path, encoding="utf-8") as f:
        given = json.load(f)
    exported = load_pt2(archive).exported_programs["model"]
    program = exported.module()
    # A program that takes logits_rows (headscan export's RowsWrapper) is given every row.
    takes_rows = tuple(exported.graph_signature.user_inputs)[-1:] == ("logits_rows",)
    reference = ReferenceScores()
    layers = None
    for record in given["records"]:
        ids = torch.tensor([record["ids"]], dtype=torch.long)
        RECORDED.clear()
        with torch.no_grad():
            program(ids, torch.ones_like(ids), *([torch.arange(ids.shape[1])] if takes_rows else []))
        order = [layer for layer, _ in RECORDED]
        assert layers in (None, order), f"observers ran for layers {order}, before for {layers}"
        layers = order
        assert len(set(order)) == len(order), f"a layer observed twice: {order}"
        reference.add_sequence([probs for _, probs in RECORDED], record, set(given["specials"]), given["causal"], order)
    heads = RECORDED[0][1].shape[1]
    print(json.dumps({"heads": [{"layer": layer, "head": head,
                                 "scores": {s: reference.mean(s, layer, head) for s in SCORES}}
                                for layer in layers for head in range(heads)]}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
