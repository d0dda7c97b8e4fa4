"""headscan's two operators as torch.export sees them:

    headscan::observe(Tensor probs, int layer) -> Tensor
        an attention softmax's probabilities, [B, H, T, S], of the model's layer `layer`; returns them
        (headscan's C++ kernel captures them, and scales or edits them under --ablation);
    headscan::attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask, float dropout_p,
                        bool is_causal, float? scale, bool enable_gqa, int layer) -> Tensor
        scaled_dot_product_attention with its exact semantics, computed in its math form, whose
        probabilities are observed as above.

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
}
# The libraries registered here; torch drops a registration when its Library object is collected.
_LIBRARIES = []


def _defined(name):
    try:
        torch._C._get_schema(f"headscan::{name}", "")
    except RuntimeError:
        return False
    return True


def _has_fake(qualified_name):
    from torch._library import simple_registry

    return simple_registry.singleton.find(qualified_name).fake_impl.kernel is not None


def attention_math(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    """(output, probabilities) of scaled_dot_product_attention in PyTorch's math form (its math
    backend, without dropout): the computation headscan's C++ kernel runs."""
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
    if is_causal:
        visible = torch.ones(query.size(-2), keys.size(-2), dtype=torch.bool, device=query.device).tril()
        scores = scores.masked_fill(visible.logical_not(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            scores = scores + attn_mask
    probs = torch.ops.aten._safe_softmax(scores, -1)
    return torch.matmul(probs, values), probs


def _observe_fake(probs, layer):
    return torch.empty_like(probs)


def _attention_fake(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, layer):
    return query.new_empty((*query.shape[:-1], value.shape[-1]))


def _observe_kernel(probs, layer):
    return probs.clone()


def _attention_kernel(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, layer):
    return attention_math(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)[0]


def define():
    """Defines what is missing of the two operators (C++ may have defined them) and their fake
    implementations; returns (observe, attention), the OpOverloads."""
    fakes = {"observe": _observe_fake, "attention": _attention_fake}
    kernels = {"observe": _observe_kernel, "attention": _attention_kernel}
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
