"""A tiny LlamaForCausalLM (2 layers, 4 query heads, 2 key/value heads, head_dim 8) whose attention
patterns are planted, so that headscan's KV-cache plan of it is known.

Queries and keys are the projections' biases alone (zero weights): a head's scores depend only on
the distance between query and key, through RoPE. A local head's query and key lie on RoPE's
second frequency pair (0.0316 rad per token with rope_theta 10^6), so its score falls with the
distance over the first 99 tokens: most of its weight is on the last 8 keys (streaming ≈ 0.96
with --sink 2 --window 8), some on the few before. Any other head's query lies on RoPE's first
pair, where no key is: uniform attention (streaming ≈ 0.35), with a query kvpress can mask keys
from (its fake keys need every query of a group on one side of a hyperplane; a zero query is on
none). Values, outputs and MLPs are random (seeded), so every key a head keeps changes the logits.

Layer 0: query heads 0, 1 local (key/value head 0 streaming), 2, 3 uniform (key/value head 1 full).
Layer 1: query head 0 local, 1 uniform (key/value head 0 full: one full query head keeps the shared
cache), 2, 3 local (key/value head 1 streaming).
"""

import torch
import transformers

LOCAL_HEADS = {(0, 0), (0, 1), (1, 0), (1, 2), (1, 3)}  # (layer, query head)
STREAMING_KV_HEADS = [[True, False], [False, True]]  # [layer][key/value head]: both query heads local
LOCALITY = 14.0  # the local heads' query and key norm


def planted_llama(vocab_size: int) -> transformers.LlamaForCausalLM:
    config = transformers.LlamaConfig(vocab_size=vocab_size, hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                      max_position_embeddings=256, attention_bias=True, rope_theta=1e6)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa").eval()
    head_dim = config.hidden_size // config.num_attention_heads
    group = config.num_attention_heads // config.num_key_value_heads
    pair = 1  # RoPE's second frequency pair: dims 1 and 1 + head_dim / 2
    with torch.no_grad():
        for index, layer in enumerate(model.model.layers):
            attention = layer.self_attn
            for projection in (attention.q_proj, attention.k_proj):
                projection.weight.zero_()
                projection.bias.zero_()
            for head in range(config.num_attention_heads):
                if (index, head) in LOCAL_HEADS:
                    attention.q_proj.bias[head * head_dim + pair] = LOCALITY
                    attention.k_proj.bias[(head // group) * head_dim + pair] = LOCALITY
                else:  # on dims 0 and head_dim / 2, RoPE's first pair, where no key is: q · k = 0
                    attention.q_proj.bias[head * head_dim] = LOCALITY
    return model
