#pragma once
// aten::scaled_dot_product_attention in its eager form. A fused attention call never materializes
// its probabilities, so headscan replaces it in the graph with headscan::eager_attention, which
// computes the same thing step by step (PyTorch's reference implementation, the "math" backend):
//   scores = (q·√s) (k·√s)ᵀ,  s = scale or 1/√E
//   scores = scores masked by is_causal (−inf above the diagonal) and by attn_mask (bool: −inf
//            where false; float: added)
//   A      = softmax(scores) over the keys, rows with no visible key all 0 (at::_safe_softmax)
//   out    = A v
// with k and v repeated per group of query heads when enable_gqa. A is observed as any softmax is
// (capture.h, observe_softmax): handed to the classifiers and scaled by the causal passes' head
// scales. Shapes as the op's: q [..., H, L, E], k [..., Hk, S, E], v [..., Hk, S, Ev].
// Internal to analyzer/model: includes LibTorch's IR headers.

#include <torch/csrc/jit/ir/ir.h>

namespace headscan {

// Replaces `node` (an aten::scaled_dot_product_attention of an inlined graph) with a
// headscan::eager_attention node on the same inputs. Returns false, leaving the graph as it is,
// when the node's inputs are not the op's (an overload headscan does not know).
bool rewrite_scaled_dot_product_attention(torch::jit::Graph& graph, torch::jit::Node* node);

}  // namespace headscan
