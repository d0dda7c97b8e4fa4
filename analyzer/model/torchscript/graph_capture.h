#pragma once
// Attention capture in a TorchScript graph (DESIGN.md, "Model contract"). Internal to the
// TorchScript loader: includes LibTorch's IR headers.
//
// instrument_graph() rewrites an inlined forward graph:
//   * after every aten::softmax, headscan::observe_softmax(probs, dim) passes the tensor on and,
//     during a CaptureScope, hands it to the callback when it is attention over keys (capture.h);
//   * every aten::scaled_dot_product_attention becomes headscan::eager_attention, its eager form
//     (scores, mask, softmax, matmul; eager_attention.h), whose probabilities are observed like a
//     softmax's;
//   * before every other fused attention op, headscan::fused_attention_guard(x, op) stops the run
//     if the op actually executes (it may sit in a branch that is never taken);
//   * before every aten::embedding indexed directly by the input ids,
//     headscan::check_token_ids(ids, weight) reports ids beyond the embedding.

#include <string>
#include <vector>

#include <torch/csrc/jit/ir/ir.h>

namespace headscan {

struct InstrumentationSummary {
  int softmax_nodes = 0;           // aten::softmax nodes observed
  int rewritten_attention = 0;     // aten::scaled_dot_product_attention nodes in eager form
  int nested_attention = 0;        // of those two kinds, the nodes inside a loop or a branch
  int embedding_guards = 0;
  std::vector<std::string> fused_ops;  // kinds of fused attention ops found (maybe never run)
};

// `graph` must already be inlined. Its input 1 is taken to be input_ids.
InstrumentationSummary instrument_graph(torch::jit::Graph& graph);

// Replaces `node` (an aten::scaled_dot_product_attention of an inlined graph) with a
// headscan::eager_attention node on the same inputs. Returns false, leaving the graph as it is,
// when the node's inputs are not the op's (an overload headscan does not know).
bool rewrite_scaled_dot_product_attention(torch::jit::Graph& graph, torch::jit::Node* node);

}  // namespace headscan
