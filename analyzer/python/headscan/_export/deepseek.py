"""DeepSeek's sparse and compressed attention under torch.export.

DeepSeek-V3.2's indexer (DeepSeek Sparse Attention) keeps, for each query, the index_topk keys of
highest index score: `index_scores.topk(min(index_topk, keys))`. Python's min on the sequence's
length is a branch torch.export fixes at the example's length (a guard `length < index_topk`), and
a symbolic k it cannot carry through the scatter that follows. While the model is exported, the
indexer's forward is `indexer_forward` below: transformers' own computation of the index scores,
then the same keys selected by headscan::index_topk (selected_keys), an operator whose kernel is the
model's topk on the same scores, and whose length torch.export does not branch on. The scatter of
the selection into the attention mask stays the model's.

DeepSeek-V4's compressed layers do not attend to tokens: they attend to entries that each
compress a window of compress_rate tokens. An attention map over compressed entries has no
token-to-token rows and columns for headscan's classifiers, so such a model is refused (`refusal`).
"""

import contextlib
import hashlib
import inspect

import torch

V4_COMPRESSED = ("compressed_sparse_attention", "heavily_compressed_attention")
INDEX_TOPK_SCHEMA = "index_topk(Tensor scores, int topk) -> Tensor"


def index_topk(scores, topk):
    """headscan::index_topk's kernel (C++: analyzer/model/exported/selection_ops.cpp): transformers'
    `scores.topk(min(topk, keys)).indices`, int64 [..., topk], the columns beyond the keys key 0."""
    keys = scores.shape[-1]
    indices = scores.topk(min(topk, keys), dim=-1).indices
    return torch.nn.functional.pad(indices, (0, topk - keys)) if keys < topk else indices


def _index_topk_fake(scores, topk):
    return scores.new_empty((*scores.shape[:-1], topk), dtype=torch.int64)


def selected_keys(index_scores, topk):
    """The indices [B, S, topk] of each query's topk keys of highest score, as transformers'
    `index_scores.topk(min(topk, keys)).indices` selects them, for any number of keys: the same topk
    on the same scores, in headscan::index_topk, whose length torch.export does not see. With fewer
    than topk keys every key is selected, and the columns beyond them are key 0 again: the mask's
    row gets a second False, and the selection, every key, is the same."""
    from .ops import define_operator

    return define_operator("index_topk", INDEX_TOPK_SCHEMA, index_topk, _index_topk_fake)(index_scores, topk)


@torch.no_grad()
def indexer_forward(self, hidden_states, q_resid, position_embeddings, attention_mask, position_ids,
                    past_key_values=None):
    """transformers' DeepseekV32Indexer.forward (5.x) with the top-k keys chosen by selected_keys."""
    from transformers.models.deepseek_v32.modeling_deepseek_v32 import apply_rotary_pos_emb

    batch_size, seq_len, _ = hidden_states.shape
    cos, sin = position_embeddings
    q = self.wq_b(q_resid)
    q = q.view(batch_size, seq_len, self.n_heads, self.head_dim)
    q_rot, q_pass = torch.split(q, [self.qk_rope_head_dim, self.head_dim - self.qk_rope_head_dim], dim=-1)
    k = self.k_norm(self.wk(hidden_states)).unsqueeze(2)
    k_rot, k_pass = torch.split(k, [self.qk_rope_head_dim, self.head_dim - self.qk_rope_head_dim], dim=-1)
    q_rot, k_rot = apply_rotary_pos_emb(q_rot, k_rot, cos, sin, unsqueeze_dim=2)
    q = torch.cat([q_rot, q_pass], dim=-1)
    k = torch.cat([k_rot, k_pass], dim=-1).squeeze(2)
    if past_key_values is not None:
        k = past_key_values.update_indexer(k, self.layer_idx)
    scores = torch.matmul(q.float(), k.transpose(-1, -2).float().unsqueeze(1)) * self.softmax_scale
    scores = torch.nn.functional.relu(scores)
    weights = self.weights_proj(hidden_states.to(self.weights_proj.weight.dtype)).float() * (self.n_heads**-0.5)
    index_scores = torch.matmul(weights.unsqueeze(-2), scores).squeeze(-2)
    if attention_mask.dtype == torch.bool:
        index_scores = index_scores.masked_fill(~attention_mask, float("-inf"))
    else:
        index_scores = index_scores + attention_mask
    return selected_keys(index_scores, self.index_topk).to(torch.int32)


# sha256 of the source of transformers' DeepseekV32Indexer.forward that indexer_forward is a copy of.
KNOWN_INDEXER = "f05b6543a2da203a52964699f7ef4cac6c1df271aea66b069aa64973f5456ee3"


def indexer_classes(model):
    """The DeepSeek-V3.2 indexer classes among the model's modules."""
    return {type(m) for m in model.modules() if type(m).__name__ == "DeepseekV32Indexer"}


@contextlib.contextmanager
def length_dynamic_indexer(model):
    """Within the block, DeepSeek-V3.2's indexers select their keys with indexer_forward (see the
    module's doc); other models are left as they are. ExportInputError where transformers' indexer
    is not the one indexer_forward copies."""
    from . import ExportInputError

    classes = indexer_classes(model)
    for cls in classes:
        digest = hashlib.sha256(inspect.getsource(cls.forward).encode()).hexdigest()
        if digest != KNOWN_INDEXER:
            raise ExportInputError(f"{cls.__module__}.{cls.__name__}.forward is not the DeepSeek-V3.2 indexer headscan "
                                   "exports (transformers 5.17's): its selection of keys cannot be made "
                                   "independent of the length; install transformers 5.17")
    originals = {cls: cls.forward for cls in classes}
    for cls in classes:
        cls.forward = indexer_forward
    try:
        yield
    finally:
        for cls, forward in originals.items():
            cls.forward = forward


def refusal(config):
    """Why headscan cannot analyse a model of this config, or None: DeepSeek-V4 with compressed
    attention layers (its sliding-window layers attend to tokens)."""
    if getattr(config, "model_type", None) != "deepseek_v4":
        return None
    compressed = [kind for kind in dict.fromkeys(getattr(config, "layer_types", None) or []) if kind in V4_COMPRESSED]
    if not compressed:
        return None
    rates = getattr(config, "compress_rates", None) or {}
    said = ", ".join(f"{kind} (one entry per {rates[kind]} tokens)" if kind in rates else kind for kind in compressed)
    return (f"DeepSeek-V4's attention layers {said} attend to compressed entries of the sequence, not to its tokens, "
            "so their maps have no token-to-token rows and columns for headscan's scores; headscan analyses "
            "attention over tokens (a DeepSeek-V4 of sliding_attention layers only is exported)")
