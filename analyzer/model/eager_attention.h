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
//
// The windowed form (headscan::attention.windowed, AttentionRule) adds what transformers' mask
// functions and eager attentions compute beyond SDPA, per block: a block of rows computes scores
// only over the keys its rows can see (a range [first, end) of the S keys) and its probabilities
// are 0 on the others:
//   window_left ≥ 0   key j hidden from query i when j < i − window_left
//                     (sliding_window_causal_mask_function(W): window_left = W − 1)
//   window_right ≥ 0  key j hidden from query i when j > i + window_right
//                     (sliding_window_bidirectional_mask_function(W): both windows W)
//   chunk > 0         key j hidden from query i when (j − p) div chunk ≠ (i − p) div chunk, p the
//                     sequence's left padding (its leading false keys in a boolean attn_mask,
//                     0 without one), as chunked_causal_mask_function(chunk, left_padding)
//   softcap           scores = tanh(scores / softcap) · softcap after scaling, before masking
//                     (Gemma 2's eager attention)
//   sinks [H]         one more logit per head in the softmax, dropped after it (gpt-oss's eager
//                     attention): A = softmax([scores, sink_h])[..., :S]

#include <cstdint>
#include <optional>

#include <ATen/core/Tensor.h>

namespace headscan {

// The schema of aten::scaled_dot_product_attention (torch 2.5 on; older archives are read with
// its defaults filled in), with the keyword-only arguments as plain ones.
inline constexpr const char* kEagerAttentionSchema =
    "headscan::eager_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask, float dropout_p, "
    "bool is_causal, float? scale, bool enable_gqa) -> Tensor";

// The windowed form's rules beyond SDPA's (above); the defaults are SDPA's attention.
struct AttentionRule {
  std::int64_t window_left = -1;   // < 0: no bound
  std::int64_t window_right = -1;  // < 0: no bound
  std::int64_t chunk = 0;          // ≤ 0: no chunks
  std::optional<double> softcap;
  at::Tensor sinks;                // undefined, or [H]
};

// The exported programs' windowed form (capture.cpp; headscan/_export/ops.py): headscan::attention's
// arguments, then the rule's.
inline constexpr const char* kWindowedAttentionSchema =
    "headscan::attention.windowed(Tensor query, Tensor key, Tensor value, Tensor? attn_mask, float dropout_p, "
    "bool is_causal, float? scale, bool enable_gqa, int layer, int window_left, int window_right, int chunk, "
    "float? softcap, Tensor? sinks) -> Tensor";

// PyTorch's math backend, without dropout (dropout_p other than 0 is InputError), in blocks of
// query rows; equal to the unblocked computation up to the rounding of matmul's sums.
at::Tensor eager_attention(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                           const std::optional<at::Tensor>& attn_mask, double dropout_p, bool is_causal,
                           std::optional<double> scale, bool enable_gqa);
// The same with `rule` applied (window_left, window_right, chunk, softcap, sinks as above).
at::Tensor eager_attention(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                           const std::optional<at::Tensor>& attn_mask, double dropout_p, bool is_causal,
                           std::optional<double> scale, bool enable_gqa, const AttentionRule& rule);

}  // namespace headscan
