#pragma once
// aten::scaled_dot_product_attention in its eager form. A fused attention call never materializes
// its probabilities, so headscan runs this instead (headscan::eager_attention in a TorchScript
// graph, torchscript/graph_capture.h; headscan::attention in an exported program), which computes
// the same thing step by step (PyTorch's reference implementation, the "math" backend):
//   scores = (q·√s) (k·√s)ᵀ,  s = scale or 1/√E
//   scores = scores masked by is_causal (−inf above the diagonal) and by attn_mask (bool: −inf
//            where false; float: added)
//   A      = softmax(scores) over the keys, rows with no visible key all 0 (at::_safe_softmax)
//   out    = A v
// with k and v repeated per group of query heads when enable_gqa. A is observed as any softmax is
// (capture.h, observe_softmax): handed to the classifiers and scaled by the causal passes' head
// scales. Shapes as the op's: q [..., H, L, E], k [..., Hk, S, E], v [..., Hk, S, Ev].

#include <optional>

#include <ATen/core/Tensor.h>

namespace headscan {

// The schema of aten::scaled_dot_product_attention (torch 2.5 on; older archives are read with
// its defaults filled in), with the keyword-only arguments as plain ones.
inline constexpr const char* kEagerAttentionSchema =
    "headscan::eager_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask, float dropout_p, "
    "bool is_causal, float? scale, bool enable_gqa) -> Tensor";

// PyTorch's math backend, without dropout (dropout_p other than 0 is InputError).
at::Tensor eager_attention(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                           const std::optional<at::Tensor>& attn_mask, double dropout_p, bool is_causal,
                           std::optional<double> scale, bool enable_gqa);

}  // namespace headscan
