#pragma once
// Attention capture (DESIGN.md, "Model contract"), shared by both formats: the observer that
// each attention's probabilities pass through inside the model (headscan::observe_softmax in a
// TorchScript graph, torchscript/graph_capture.h; headscan::observe and headscan::attention in an
// exported program), and the scope that hands them to the caller. Internal to analyzer/model.

#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "analyzer/model/model.h"

namespace headscan {

struct CaptureState;

// What the graph's observer does with one softmax output over dim `dim`: during a CaptureScope,
// hands it to the callback when it is attention over keys and returns it scaled by the scope's
// head scales; otherwise returns it unchanged. For code that computes attention itself
// (headscan::eager_attention).
at::Tensor observe_softmax(const at::Tensor& probs, std::int64_t dim);

// For the graph's guard ops: whether a CaptureScope is alive on this thread, and ending its
// forward call with `error` (rethrown by CaptureScope::rethrow_captured_error with its own type).
bool capture_running();
[[noreturn]] void fail_capture(std::exception_ptr error);

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
