"""headscan's two operators as torch.export sees them:

    headscan::observe(Tensor probs, int layer) -> Tensor
        an attention softmax's probabilities, [B, H, T, S], of the model's layer `layer`; returns them
        (headscan's C++ kernel captures them, and scales or edits them under --ablation);
    headscan::attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask, float dropout_p,
                        bool is_causal, float? scale, bool enable_gqa, int layer) -> Tensor
        scaled_dot_product_attention with its exact semantics, computed in its math form, whose
        probabilities are observed as above;
    headscan::attention.windowed(..., int layer, int window_left, int window_right, int chunk,
                                 float? softcap, Tensor? sinks) -> Tensor
        the same with what transformers' masks and eager attentions add (key j hidden from query i
        when j < i - window_left, when j > i + window_right (each when >= 0), when j and i are in
        different chunks of `chunk` tokens counted from the sequence's first key (chunk > 0); the
        scores soft-capped, tanh(scores / softcap) * softcap, before masking; one more logit per
        head, sinks [H], in the softmax, dropped after it).

headscan's C++ core (headscan._core, or the headscan executable) defines them with their kernels.
Where it is not loaded (scripts/export_hf.py, a Python without the wheel) they are defined here, with
kernels in Python of the same math, so that an exported program runs in Python too. Their fake
implementations (shapes only, which torch.export traces with) are registered here in either case.
`define()` does it once per process, however often this module is imported and under whichever name.
"""

import math

import torch

OBSERVE = "headscan::observe"
ATTENTION = "headscan::attention"
SCHEMAS = {
    "observe": "observe(Tensor probs, int layer) -> Tensor",
    "attention": "attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask, float dropout_p, "
                 "bool is_causal, float? scale, bool enable_gqa, int layer) -> Tensor",
    "attention.windowed": "attention.windowed(Tensor query, Tensor key, Tensor value, Tensor? attn_mask, "
                          "float dropout_p, bool is_causal, float? scale, bool enable_gqa, int layer, "
                          "int window_left, int window_right, int chunk, float? softcap, Tensor? sinks) -> Tensor",
}
# The libraries registered here; torch drops a registration when its Library object is collected.
_LIBRARIES = []


def _defined(name):
    op, _, overload = name.partition(".")
    try:
        torch._C._get_schema(f"headscan::{op}", overload)
    except RuntimeError:
        return False
    return True


def _has_fake(qualified_name):
    from torch._library import simple_registry

    return simple_registry.singleton.find(qualified_name).fake_impl.kernel is not None


def hidden_keys(queries, keys, is_causal, window_left=-1, window_right=-1, chunk=0, attn_mask=None, device=None):
    """The keys headscan::attention's rule hides from each query, bool [..., T, S] (True: hidden),
    or None when it hides none: the causal rule (j > i), the windows (j < i - window_left,
    j > i + window_right, each when >= 0), the chunks (chunk > 0: j and i in different chunks,
    counted from each sequence's first key, its left padding read off a boolean attn_mask)."""
    if not is_causal and window_left < 0 and window_right < 0 and chunk <= 0:
        return None
    row = torch.arange(queries, device=device)[:, None]
    key = torch.arange(keys, device=device)[None, :]
    hidden = torch.zeros(queries, keys, dtype=torch.bool, device=device)
    if is_causal:
        hidden = hidden | (key > row)
    if window_left >= 0:
        hidden = hidden | (key < row - window_left)
    if window_right >= 0:
        hidden = hidden | (key > row + window_right)
    if chunk > 0:
        if attn_mask is not None:
            if attn_mask.dtype != torch.bool or (attn_mask.dim() >= 2 and attn_mask.size(-2) != 1):
                raise RuntimeError(f"attention chunks take the keys' padding as a boolean mask [..., 1, S], got "
                                   f"{attn_mask.dtype} {list(attn_mask.shape)}")
            padding = (attn_mask.cumsum(-1) == 0).sum(-1, keepdim=True)
            row, key = row - padding, key - padding
        hidden = hidden | (torch.div(key, chunk, rounding_mode="floor") != torch.div(row, chunk, rounding_mode="floor"))
    return hidden


def attention_math(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, window_left=-1,
                   window_right=-1, chunk=0, softcap=None, sinks=None):
    """(output, probabilities) of scaled_dot_product_attention in PyTorch's math form (its math
    backend, without dropout), with the windowed form's rule (hidden_keys, soft-capping, sinks):
    the computation headscan's C++ kernel runs."""
    if dropout_p != 0.0:
        raise RuntimeError(f"scaled_dot_product_attention with dropout (dropout_p = {dropout_p}) is random; "
                           "export the model in eval mode (model.eval())")
    keys, values = key, value
    if enable_gqa and query.dim() >= 3 and key.size(-3) != query.size(-3):
        group = query.size(-3) // key.size(-3)
        keys = keys.repeat_interleave(group, dim=-3)
        values = values.repeat_interleave(group, dim=-3)
    factor = scale if scale is not None else 1.0 / math.sqrt(query.size(-1))
    root = math.sqrt(factor)
    scores = torch.matmul(query * root, keys.transpose(-2, -1) * root)
    if softcap is not None:
        scores = torch.tanh(scores / softcap) * softcap
    hidden = hidden_keys(query.size(-2), keys.size(-2), is_causal, window_left, window_right, chunk, attn_mask,
                         query.device)
    if hidden is not None:
        scores = scores.masked_fill(hidden, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            scores = scores + attn_mask
    if sinks is not None:
        sink = sinks.to(scores.dtype).reshape(-1, 1, 1).expand(*scores.shape[:-1], 1)
        probs = torch.softmax(torch.cat([scores, sink], dim=-1), dim=-1)[..., :-1]
    else:
        probs = torch.ops.aten._safe_softmax(scores, -1)
    return torch.matmul(probs, values), probs


def _observe_fake(probs, layer):
    return torch.empty_like(probs)


def _attention_fake(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, layer):
    return query.new_empty((*query.shape[:-1], value.shape[-1]))


def _windowed_fake(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, layer, window_left,
                   window_right, chunk, softcap, sinks):
    return query.new_empty((*query.shape[:-1], value.shape[-1]))


def _observe_kernel(probs, layer):
    return probs.clone()


def _attention_kernel(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, layer):
    return attention_math(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)[0]


def _windowed_kernel(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, layer, window_left,
                     window_right, chunk, softcap, sinks):
    return attention_math(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, window_left,
                          window_right, chunk, softcap, sinks)[0]


def define():
    """Defines what is missing of the operators (C++ may have defined them) and their fake
    implementations; returns (observe, attention), the OpOverloads (attentions() gives both attention overloads)."""
    fakes = {"observe": _observe_fake, "attention": _attention_fake, "attention.windowed": _windowed_fake}
    kernels = {"observe": _observe_kernel, "attention": _attention_kernel, "attention.windowed": _windowed_kernel}
    for name, schema in SCHEMAS.items():
        if not _defined(name):
            library = torch.library.Library("headscan", "FRAGMENT")
            library.define(schema)
            library.impl(name, kernels[name], "CompositeExplicitAutograd")
            _LIBRARIES.append(library)
        # A C++ kernel registered for CompositeImplicitAutograd (TORCH_LIBRARY's def with a
        # function) stands for the fake one too; torch refuses a second.
        composite = torch._C._dispatch_has_kernel_for_dispatch_key(f"headscan::{name}", "CompositeImplicitAutograd")
        if not composite and not _has_fake(f"headscan::{name}"):
            library = torch.library.Library("headscan", "FRAGMENT")
            torch.library.register_fake(f"headscan::{name}", fakes[name], lib=library)
            _LIBRARIES.append(library)
    return torch.ops.headscan.observe.default, torch.ops.headscan.attention.default


def define_operator(name, schema, kernel, fake):
    """Defines headscan::`name` with `schema` where C++ has not, with `kernel` (Python, the same
    math as C++'s) for every backend, and gives it the fake implementation `fake` unless it has
    one; returns the OpOverload (its default)."""
    if not _defined(name):
        library = torch.library.Library("headscan", "FRAGMENT")
        library.define(schema)
        library.impl(name, kernel, "CompositeExplicitAutograd")
        _LIBRARIES.append(library)
    if not _has_fake(f"headscan::{name}"):
        library = torch.library.Library("headscan", "FRAGMENT")
        torch.library.register_fake(f"headscan::{name}", fake, lib=library)
        _LIBRARIES.append(library)
    return getattr(torch.ops.headscan, name).default


def attentions():
    """headscan::attention's OpOverloads: the plain one and the windowed one."""
    define()
    return torch.ops.headscan.attention.default, torch.ops.headscan.attention.windowed
