#pragma once
// Attention capture by graph instrumentation (DESIGN.md, "Model contract"). Internal to the
// analyzer: includes LibTorch's IR headers, so only model.cpp and tests include it.
//
// instrument_graph() rewrites an inlined forward graph:
//   * after every aten::softmax, headscan::observe_softmax(probs, dim) passes the tensor on and,
//     during a CaptureScope, hands it to the callback when it is attention over keys;
//   * every aten::scaled_dot_product_attention becomes headscan::eager_attention, its eager form
//     (scores, mask, softmax, matmul; eager_attention.h), whose probabilities are observed like a
//     softmax's;
//   * before every other fused attention op, headscan::fused_attention_guard(x, op) stops the run
//     if the op actually executes (it may sit in a branch that is never taken);
//   * before every aten::embedding indexed directly by the input ids,
//     headscan::check_token_ids(ids, weight) reports ids beyond the embedding.

#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <torch/csrc/jit/ir/ir.h>

#include "analyzer/model/model.h"

namespace headscan {

struct InstrumentationSummary {
  int softmax_nodes = 0;           // aten::softmax nodes observed
  int rewritten_attention = 0;     // aten::scaled_dot_product_attention nodes in eager form
  int embedding_guards = 0;
  std::vector<std::string> fused_ops;  // kinds of fused attention ops found (maybe never run)
};

// `graph` must already be inlined. Its input 1 is taken to be input_ids.
InstrumentationSummary instrument_graph(torch::jit::Graph& graph);

struct CaptureState;

// What the graph's observer does with one softmax output over dim `dim`: during a CaptureScope,
// hands it to the callback when it is attention over keys and returns it scaled by the scope's
// head scales; otherwise returns it unchanged. For code that computes attention itself
// (headscan::eager_attention).
at::Tensor observe_softmax(const at::Tensor& probs, std::int64_t dim);

// While alive, captured attention of the current thread goes to `on_attention`. One forward call
// per scope: layers are numbered from 0 in execution order.
class CaptureScope {
 public:
  // `scales`, when given, multiplies each head's attention probabilities in the graph
  // (model.h, HeadScales); the callback still sees them unscaled.
  // `edit`, when given, replaces each layer's probabilities after that (model.h, AttentionEdit).
  CaptureScope(std::int64_t batch, std::int64_t length, const AttentionCallback& on_attention,
               const HeadScales* scales = nullptr, const AttentionEdit* edit = nullptr);
  ~CaptureScope();
  CaptureScope(const CaptureScope&) = delete;
  CaptureScope& operator=(const CaptureScope&) = delete;

  int layers_captured() const;
  // The error an instrumentation op raised, if any: rethrown as it was, with its own type,
  // rather than as the interpreter's wrapped message.
  void rethrow_captured_error() const;

  // Hands an attention tensor found outside the graph (returned by the model) to the callback.
  // Returns false when `tensor` is not attention for this batch.
  bool offer(const at::Tensor& tensor);

 private:
  std::unique_ptr<CaptureState> state_;
  CaptureState* outer_;  // scopes nest when a callback runs a model itself
};

}  // namespace headscan
