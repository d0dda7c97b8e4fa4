"""transformers' attention implementation "headscan": scaled_dot_product_attention's semantics,
computed by headscan::attention (ops.py) without the [B, 1, T, T] mask SDPA attention builds.

transformers' SDPA attention hands scaled_dot_product_attention an explicit boolean mask of
[B, 1, T, T] whenever the sequences may be padded (always under torch.export): O(B·T²) bytes, 268 MB
per sequence at 16k tokens, 17 GB at 128k, beside an attention headscan computes in blocks of rows;
and since the mask rules out PyTorch's grouped-query kernels, it repeats each key/value head for
its query heads first. headscan::attention applies both a causal rule (is_causal, key j hidden from
query i when j > i) and a mask, and groups query heads on their key/value head without copies
(enable_gqa), so here:

  - the mask function (AttentionMaskInterface) gives, for transformers' mask functions made of the
    rules headscan::attention.windowed applies (mask_rule: causal, bidirectional, the sliding
    windows of Mistral, Gemma 2/3/4, Cohere2, gpt-oss and OLMo 3, ModernBERT's bidirectional local
    window, Llama 4's chunks), the keys' padding as a [B, 1, 1, S] boolean mask (True: attended),
    or a [1, 1, 1, 1] True where no 2D mask was given, marked with the rule (COMPACT_RULE) the
    attention then passes to the op; any other mask function (packed sequences, blocks of
    bidirectional tokens, a model's own overlays) or offsets (a cache) get transformers' SDPA mask,
    [B, 1, T, S], unmarked;
  - the attention function (AttentionInterface) calls headscan::attention with that mask and rule
    (headscan::attention.windowed where the rule has a window or chunks, or the model's attention
    soft-caps its scores or has sinks, which SDPA has no form of), or with an unmarked mask as
    SDPA attention would (is_causal only without a mask), and the key and value heads as the model
    computed them, with enable_gqa where they are fewer than the query heads.

`headscan export` uses it where the model's output under it equals eager attention's (attention.py).
"""

import torch

NAME = "headscan"
# The attribute of a compact mask: (whether keys after the query are hidden, whether the mask holds
# the keys' padding or stands for no mask, window_left, window_right, chunk as
# headscan::attention.windowed takes them).
COMPACT_RULE = "headscan_rule"


def _parts(mask_function):
    """{name: value} of a mask function's closure (its free variables)."""
    closure = mask_function.__closure__ or ()
    return dict(zip(mask_function.__code__.co_freevars, (cell.cell_contents for cell in closure)))


def mask_rule(mask_function):
    """(is_causal, window_left, window_right, chunk) of a transformers mask function that is the
    intersection (and_masks) of rules headscan::attention.windowed applies, else None:
      causal_mask_function                          key j hidden from query i when j > i
      bidirectional_mask_function                   none hidden
      sliding_window_overlay(W)                     j <= i - W hidden: window_left W - 1
      sliding_window_bidirectional_overlay(W)       |i - j| > W hidden: both windows W
      chunked_overlay(C, left_padding)              other chunks of C tokens hidden, counted from the
                                                    sequence's first key: create_chunked_causal_mask's
                                                    left_padding is the 2D mask's leading zeros, which
                                                    the op reads off the keys' padding
    Recognised by their code (transformers' masking_utils makes each a closure)."""
    from transformers import masking_utils as mu

    codes = {"and": mu.and_masks().__code__, "sliding": mu.sliding_window_overlay(1).__code__,
             "local": mu.sliding_window_bidirectional_overlay(1).__code__,
             "chunk": mu.chunked_overlay(1, None).__code__}
    causal, window_left, window_right, chunks = False, [], [], []
    pending = [mask_function]
    while pending:
        function = pending.pop()
        if function is mu.causal_mask_function:
            causal = True
            continue
        if function is mu.bidirectional_mask_function:
            continue
        code = getattr(function, "__code__", None)
        parts = _parts(function) if code in codes.values() else {}
        if code is codes["and"]:
            pending.extend(parts["mask_functions"])
        elif code is codes["sliding"] and type(parts["sliding_window"]) is int and parts["sliding_window"] > 0:
            window_left.append(parts["sliding_window"] - 1)
        elif code is codes["local"] and type(parts["sliding_window"]) is int and parts["sliding_window"] >= 0:
            window_left.append(parts["sliding_window"])
            window_right.append(parts["sliding_window"])
        elif code is codes["chunk"] and type(parts["chunk_size"]) is int and parts["chunk_size"] > 0:
            chunks.append(parts["chunk_size"])
        else:
            return None
    if len(set(chunks)) > 1:  # chunks of two sizes: no one chunk
        return None
    return causal, min(window_left, default=-1), min(window_right, default=-1), chunks[0] if chunks else 0


def compact_mask(batch_size, q_length, kv_length, q_offset=0, kv_offset=0, mask_function=None, attention_mask=None,
                 **kwargs):
    """transformers' mask for the attention implementation "headscan" (sdpa_mask's arguments):
    the keys' padding [B, 1, 1, S] with COMPACT_RULE for a mask function of the op's rules
    (mask_rule), else sdpa_mask's [B, 1, T, S]."""
    from transformers.masking_utils import causal_mask_function, prepare_padding_mask, sdpa_mask

    mask_function = mask_function or causal_mask_function  # sdpa_mask's default
    rule = mask_rule(mask_function)
    no_offsets = isinstance(q_offset, int) and q_offset == 0 and isinstance(kv_offset, int) and kv_offset == 0
    if rule is None or not no_offsets or (rule != (False, -1, -1, 0) and q_length != kv_length):
        return sdpa_mask(batch_size=batch_size, q_length=q_length, kv_length=kv_length, q_offset=q_offset,
                         kv_offset=kv_offset, mask_function=mask_function, attention_mask=attention_mask,
                         **{**kwargs, "allow_is_causal_skip": False, "allow_is_bidirectional_skip": False})
    padding = prepare_padding_mask(attention_mask, kv_length, kv_offset)
    device = kwargs.get("device", "cpu")
    if padding is None:
        mask = torch.ones((1, 1, 1, 1), dtype=torch.bool, device=device)
    else:
        mask = padding[:, None, None, :kv_length].to(device=device, dtype=torch.bool)
    causal, window_left, window_right, chunk = rule
    setattr(mask, COMPACT_RULE, (causal, padding is not None, window_left, window_right, chunk))
    return mask


def attention_forward(module, query, key, value, attention_mask, dropout=0.0, scaling=None, is_causal=None,
                      **kwargs):
    """transformers' attention function of the implementation "headscan" (sdpa_attention_forward's
    arguments and output: [B, T, H, D], None): headscan::attention on query [B, H, T, D] and key,
    value [B, KV, S, D]."""
    from transformers.integrations.sdpa_attention import create_position_bias_mask

    from .ops import attentions

    rule = getattr(attention_mask, COMPACT_RULE, None) if attention_mask is not None else None
    windows = (-1, -1, 0)
    if rule is not None:
        is_causal, padded, *windows = rule
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
    # What SDPA has no form of (attention.py, IGNORED_BY_SDPA): Gemma 2's soft-capping, gpt-oss's sinks.
    softcap = kwargs.get("softcap")
    sinks = kwargs.get("s_aux", kwargs.get("sinks"))
    plain, windowed = attentions()
    # The layer is the program's to number (program.py sets it from the module's place in the stack).
    arguments = (query, key, value, attention_mask, float(dropout), bool(is_causal), scaling, grouped,
                 layer if isinstance(layer, int) else -1)
    if tuple(windows) == (-1, -1, 0) and softcap is None and sinks is None:
        output = plain(*arguments)
    else:
        output = windowed(*arguments, *(int(w) for w in windows), None if softcap is None else float(softcap), sinks)
    return output.transpose(1, 2).contiguous(), None


def register():
    """Registers the implementation "headscan" with transformers (once per process is enough;
    again is harmless)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface

    AttentionInterface.register(NAME, attention_forward)
    AttentionMaskInterface.register(NAME, compact_mask)
