"""DeepSeek under headscan export: V3.2's indexer selection (headscan::index_topk, its kernels in
Python and C++, and the indexer as export runs it) equal to transformers' at every length, ties
included; V4 with compressed attention refused, V4 of sliding layers not.

Run by pytest with the wheel installed (tests/python/run.sh: the C++ kernel of headscan's core
too), or on the source tree's exporter as `.venv/bin/python -m pytest tests/python/test_export_deepseek.py`.
"""

import sys
from pathlib import Path

import pytest
import torch

try:
    import headscan  # noqa: F401 - loads headscan's C++ core, which defines headscan::index_topk
    from headscan._export import deepseek
    CORE = True
except ImportError:  # no wheel: the exporter of the source tree
    CORE = False
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "analyzer" / "python" / "headscan"))
    from _export import deepseek

TOPK = 16


def tied_scores(keys, seed=0):
    """Index scores [2, 5, keys] as DeepSeek's indexer makes them on a tiny model: sums of relu, many
    exactly 0 (ties), and -inf where a causal mask hides keys."""
    generator = torch.Generator().manual_seed(seed)
    scores = torch.relu(torch.randn(2, 5, keys, generator=generator)) * torch.randint(0, 2, (2, 5, keys),
                                                                                       generator=generator)
    hidden = torch.rand(2, 5, keys, generator=generator) < 0.2
    return scores.masked_fill(hidden, float("-inf"))


def transformers_selection(scores, topk):
    return scores.topk(min(topk, scores.shape[-1]), dim=-1).indices


@pytest.mark.parametrize("keys", [1, 5, 15, 16, 17, 40, 300])
def test_index_topk_is_transformers_topk_at_every_width(keys):
    scores = tied_scores(keys)
    want = transformers_selection(scores, TOPK)
    kernels = [deepseek.index_topk]
    if CORE:  # the C++ kernel, which headscan's core registered when it loaded
        kernels.append(torch.ops.headscan.index_topk.default)
    for kernel in kernels:
        got = kernel(scores, TOPK)
        assert got.shape == (2, 5, TOPK) and got.dtype == torch.int64
        assert torch.equal(got[..., :min(TOPK, keys)], want), kernel
        assert not got[..., keys:].any(), "the columns beyond the keys must be key 0"


def tiny_v32():
    import transformers

    config = transformers.DeepseekV32Config(
        vocab_size=100, hidden_size=64, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=4, moe_intermediate_size=32, n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1,
        n_group=1, topk_group=1, first_k_dense_replace=1, mlp_layer_types=["dense", "sparse"], kv_lora_rank=16,
        q_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=16, head_dim=8, index_topk=TOPK,
        index_head_dim=16, index_n_heads=2, max_position_embeddings=512, initializer_range=0.25,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    torch.manual_seed(0)
    return transformers.DeepseekV32ForCausalLM(config).eval()


def test_the_exported_indexer_gives_transformers_logits_at_every_length():
    model = tiny_v32()
    torch.manual_seed(1)
    for length in (3, 15, 16, 17, 64, 65, 200):
        ids = torch.randint(3, 100, (2, length))
        mask = torch.ones_like(ids)
        mask[1, length - length // 3:] = 0  # the second row padded
        with torch.no_grad():
            want = model(input_ids=ids, attention_mask=mask).logits
            with deepseek.length_dynamic_indexer(model):
                got = model(input_ids=ids, attention_mask=mask).logits
        assert torch.equal(got, want), f"{length} tokens: {(got - want).abs().max().item()}"


def test_the_indexer_is_exported_length_dynamic():
    model = tiny_v32()

    class Logits(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, ids, mask):
            return self.model(input_ids=ids, attention_mask=mask, use_cache=False).logits

    ids = torch.randint(3, 100, (2, 10))
    length = torch.export.Dim("length", min=2, max=512)
    with torch.no_grad(), deepseek.length_dynamic_indexer(model):
        program = torch.export.export(Logits(), (ids, torch.ones_like(ids)), dynamic_shapes=({1: length}, {1: length}))
    for tokens in (5, 16, 40, 300):
        ids = torch.randint(3, 100, (2, tokens))
        with torch.no_grad():
            want = model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits
            got = program.module()(ids, torch.ones_like(ids))
        assert torch.allclose(got, want, atol=1e-5), f"{tokens} tokens: {(got - want).abs().max().item()}"


def v4_config(layer_types):
    import transformers

    return transformers.DeepseekV4Config(vocab_size=100, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                         head_dim=16, q_lora_rank=32, moe_intermediate_size=32, n_routed_experts=4,
                                         num_experts_per_tok=2, o_groups=2, o_lora_rank=16, index_n_heads=2,
                                         index_head_dim=16, index_topk=TOPK, sliding_window=TOPK,
                                         layer_types=layer_types)


def test_deepseek_v4_with_compressed_attention_is_refused_with_the_reason():
    why = deepseek.refusal(v4_config(["sliding_attention", "heavily_compressed_attention"]))
    assert why is not None and "heavily_compressed_attention (one entry per 128 tokens)" in why
    assert "not to its tokens" in why
    assert deepseek.refusal(v4_config(["sliding_attention", "sliding_attention"])) is None
    assert deepseek.refusal(tiny_v32().config) is None
