#pragma once
// aten::scaled_dot_product_attention in its eager form. A fused attention call never materializes
// its probabilities, so headscan runs this instead (headscan::eager_attention in a TorchScript
// graph, torchscript/graph_capture.h; headscan::attention in an exported program), which computes
// the same thing step by step (PyTorch's reference implementation, the "math" backend), in blocks
// of Q query rows (attention_plan.h), for rows i = first_row .. first_row + Q − 1:
//   scores = (q_i·√s) (k·√s)ᵀ,  s = scale or 1/√E                      [..., H, Q, S]
//   scores = scores masked by is_causal (−inf where key j > i, top-left aligned) and by the block's
//            rows of attn_mask (bool: −inf where false; float: added)
//   A      = softmax(scores) over the keys, rows with no visible key all 0 (at::_safe_softmax)
//   out_i  = A v, written into the output's rows
// With enable_gqa the G query heads of a key/value head are stacked along the rows of one matmul
// ([..., Hk, G·Q, E] · [..., Hk, E, S]), so k and v are never repeated per query head. A is
// observed block by block (capture.h, AttentionBlocks): handed to the classifiers with its first
// row, scaled by the causal passes' head scales and edited. One call is one layer, so only one
// block [..., H, Q, S] of probabilities is alive at a time; with Q = L it is the unblocked
// computation. A gradient through several blocks (the importance pass's head scales) is taken
// block by block: the backward recomputes each block's probabilities from q, k, v rather than
// keeping them all. Shapes as the op's: q [..., H, L, E], k [..., Hk, S, E], v [..., Hk, S, Ev].

#include <optional>

#include <ATen/core/Tensor.h>

namespace headscan {

// The schema of aten::scaled_dot_product_attention (torch 2.5 on; older archives are read with
// its defaults filled in), with the keyword-only arguments as plain ones.
inline constexpr const char* kEagerAttentionSchema =
    "headscan::eager_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask, float dropout_p, "
    "bool is_causal, float? scale, bool enable_gqa) -> Tensor";

// PyTorch's math backend, without dropout (dropout_p other than 0 is InputError), in blocks of
// query rows; equal to the unblocked computation up to the rounding of matmul's sums.
at::Tensor eager_attention(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                           const std::optional<at::Tensor>& attn_mask, double dropout_p, bool is_causal,
                           std::optional<double> scale, bool enable_gqa);

}  // namespace headscan
