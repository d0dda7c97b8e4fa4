"""transformers' attention implementation "headscan": scaled_dot_product_attention's semantics,
computed by headscan::attention (ops.py) without the [B, 1, T, T] mask SDPA attention builds.

transformers' SDPA attention hands scaled_dot_product_attention an explicit boolean mask of
[B, 1, T, T] whenever the sequences may be padded (always under torch.export): O(B·T²) bytes, 268 MB
per sequence at 16k tokens, 17 GB at 128k, beside an attention headscan computes in blocks of rows;
and since the mask rules out PyTorch's grouped-query kernels, it repeats each key/value head for
its query heads first. headscan::attention applies both a causal rule (is_causal, key j hidden from
query i when j > i) and a mask, and groups query heads on their key/value head without copies
(enable_gqa), so here:

  - the mask function (AttentionMaskInterface) gives, for transformers' plain causal mask and its
    bidirectional one (padding only), the keys' padding as a [B, 1, 1, S] boolean mask (True:
    attended), or a [1, 1, 1, 1] True where no 2D mask was given, marked with the causal rule
    (COMPACT_RULE) the attention then passes as is_causal; any other mask function (sliding windows,
    chunked attention, packed sequences, blocks of bidirectional tokens, a model's own overlays) or
    offsets (a cache) get transformers' SDPA mask, [B, 1, T, S], unmarked;
  - the attention function (AttentionInterface) calls headscan::attention with that mask and rule,
    or with an unmarked mask as SDPA attention would (is_causal only without a mask), and the key
    and value heads as the model computed them, with enable_gqa where they are fewer than the query
    heads.

`headscan export` uses it where the model's output under it equals eager attention's (attention.py).
"""

import torch

NAME = "headscan"
# The attribute of a compact mask: (whether keys after the query are hidden, whether the mask holds
# the keys' padding or stands for no mask).
COMPACT_RULE = "headscan_rule"


def compact_mask(batch_size, q_length, kv_length, q_offset=0, kv_offset=0, mask_function=None, attention_mask=None,
                 **kwargs):
    """transformers' mask for the attention implementation "headscan" (sdpa_mask's arguments):
    the keys' padding [B, 1, 1, S] with COMPACT_RULE for a causal or bidirectional mask function,
    else sdpa_mask's [B, 1, T, S]."""
    from transformers.masking_utils import (bidirectional_mask_function, causal_mask_function, prepare_padding_mask,
                                            sdpa_mask)

    mask_function = mask_function or causal_mask_function  # sdpa_mask's default
    causal = mask_function is causal_mask_function
    plain = causal or mask_function is bidirectional_mask_function
    no_offsets = isinstance(q_offset, int) and q_offset == 0 and isinstance(kv_offset, int) and kv_offset == 0
    if not plain or not no_offsets or (causal and q_length != kv_length):
        return sdpa_mask(batch_size=batch_size, q_length=q_length, kv_length=kv_length, q_offset=q_offset,
                         kv_offset=kv_offset, mask_function=mask_function, attention_mask=attention_mask,
                         **{**kwargs, "allow_is_causal_skip": False, "allow_is_bidirectional_skip": False})
    padding = prepare_padding_mask(attention_mask, kv_length, kv_offset)
    device = kwargs.get("device", "cpu")
    if padding is None:
        mask = torch.ones((1, 1, 1, 1), dtype=torch.bool, device=device)
    else:
        mask = padding[:, None, None, :kv_length].to(device=device, dtype=torch.bool)
    setattr(mask, COMPACT_RULE, (causal, padding is not None))
    return mask


def attention_forward(module, query, key, value, attention_mask, dropout=0.0, scaling=None, is_causal=None,
                      **kwargs):
    """transformers' attention function of the implementation "headscan" (sdpa_attention_forward's
    arguments and output: [B, T, H, D], None): headscan::attention on query [B, H, T, D] and key,
    value [B, KV, S, D]."""
    from transformers.integrations.sdpa_attention import create_position_bias_mask

    from .ops import define

    attention = define()[1]
    rule = getattr(attention_mask, COMPACT_RULE, None) if attention_mask is not None else None
    if rule is not None:
        causal, padded = rule
        is_causal = causal
        attention_mask = attention_mask if padded else None
    else:  # sdpa_attention_forward's rule: causal where the module is and no mask says otherwise
        is_causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
        is_causal = bool(query.shape[2] > 1 and attention_mask is None and is_causal)
    position_bias = kwargs.get("position_bias")
    if position_bias is not None and rule is not None:  # the bias added, the causal rule kept for the op
        attention_mask = create_position_bias_mask(position_bias, attention_mask, False, query, key)
    elif position_bias is not None:
        attention_mask = create_position_bias_mask(position_bias, attention_mask, is_causal, query, key)
        is_causal = False
    grouped = key.shape[1] != query.shape[1]
    layer = getattr(module, "layer_idx", None)
    # The layer is the program's to number (program.py sets it from the module's place in the stack).
    output = attention(query, key, value, attention_mask, float(dropout), bool(is_causal), scaling, grouped,
                       layer if isinstance(layer, int) else -1)
    return output.transpose(1, 2).contiguous(), None


def register():
    """Registers the implementation "headscan" with transformers (once per process is enough;
    again is harmless)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface

    AttentionInterface.register(NAME, attention_forward)
    AttentionMaskInterface.register(NAME, compact_mask)
