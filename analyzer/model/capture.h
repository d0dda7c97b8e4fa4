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
#include <c10/core/Device.h>
#include <c10/core/DispatchKeySet.h>

namespace c10 {
class OperatorHandle;
struct IValue;
}  // namespace c10

#include "analyzer/model/model.h"

namespace headscan {

struct CaptureState;

// What the graph's observer does with one softmax output over dim `dim`: during a CaptureScope,
// hands it to the callback when it is attention over keys (one block, first_row 0) and returns it
// scaled by the scope's head scales and edited; otherwise returns it unchanged.
at::Tensor observe_softmax(const at::Tensor& probs, std::int64_t dim);

// Probabilities [B, H, Q, T], [B*H, Q, T] or [B, Q, T] of a batch of `batch` sequences, viewed as
// [B, H, Q, T].
at::Tensor attention_heads(const at::Tensor& probs, std::int64_t batch);
// `probs` (as attention_heads takes them) with head h of sequence b multiplied by scale [b, h]
// (model.h, HeadScales), in the shape of `probs`.
at::Tensor scale_heads(const at::Tensor& probs, std::int64_t batch, const at::Tensor& scale);

// The capture of one call of headscan's attention op (eager_attention.h), which computes the
// probabilities [..., H, L, S] in blocks of query rows: the call is one layer (numbered when the
// object is made, as observe_softmax numbers a softmax), and each block goes to observe() in row
// order. The rows of a block are planned for the call (attention_plan.h) from the scope's
// requested rows (CaptureScope) and the device's free memory.
class AttentionBlocks {
 public:
  // `sizes`: the probabilities' shape [..., H, L, S]; `element_size`: bytes of their dtype.
  AttentionBlocks(at::IntArrayRef sizes, std::int64_t element_size, const c10::Device& device);
  std::int64_t rows() const { return rows_; }
  // Block [..., H, Q, S] of the probabilities, queries first_row .. first_row + Q − 1: during a
  // CaptureScope, and when the call is attention over the scope's keys, handed to the callback and
  // returned scaled by the head scales and edited (model.h); otherwise returned unchanged.
  at::Tensor observe(const at::Tensor& block, std::int64_t first_row);

  // For an op that differentiates the blocks itself (recomputing each in the backward): observe()
  // in parts. deliver() hands the block to the callback only; head_scale() is the layer's [B, H]
  // scale (undefined when none, or when nothing is captured from this call), applied by
  // scale_heads(block, batch(), head_scale()); edits() says whether the scope edits the blocks,
  // which only observe() does.
  void deliver(const at::Tensor& block, std::int64_t first_row);
  at::Tensor head_scale() const;
  std::int64_t batch() const;
  bool edits() const;

 private:
  CaptureState* state_ = nullptr;  // null when nothing is captured from this call
  int layer_ = -1;
  std::int64_t rows_ = 0;
};

// For the graph's guard ops: whether a CaptureScope is alive on this thread, and ending its
// forward call with `error` (rethrown by CaptureScope::rethrow_captured_error with its own type).
bool capture_running();
[[noreturn]] void fail_capture(std::exception_ptr error);

// The Autograd kernel of headscan's operators whose C++ kernels are compositions of
// differentiable ATen operations (headscan::attention's RecomputedAttention among them): with grad
// mode on, during a capture (the importance pass through an exported program,
// exported/program_interpreter.h) or when an input requires grad (a program run by torch in
// Python and differentiated there), the operator's own kernel runs with autograd on, so its
// operations record the backward, block by block; otherwise (grad mode off, as torch.export
// traces under headscan export, or no input that requires grad) it runs below autograd, so that
// torch.export keeps the operator whole. Register it for an operator with
//   TORCH_LIBRARY_IMPL(headscan, Autograd, m) {
//     m.impl("name", torch::CppFunction::makeFromBoxedFunction<&differentiable_kernel>());
//   }
void differentiable_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet keys, std::vector<c10::IValue>* stack);

// While alive, captured attention of the current thread goes to `on_attention`. One forward call
// per scope: layers are numbered from 0 in execution order.
class CaptureScope {
 public:
  // `scales`, when given, multiplies each head's attention probabilities in the graph
  // (model.h, HeadScales); the callback still sees them unscaled.
  // `edit`, when given, replaces each layer's probabilities after that (model.h, AttentionEdit).
  // `block_rows`: the rows of headscan's attention op's blocks, 0 to plan them
  // (InstrumentedModel::attention_block()).
  CaptureScope(std::int64_t batch, std::int64_t length, const AttentionCallback& on_attention,
               const HeadScales* scales = nullptr, const AttentionEdit* edit = nullptr,
               std::int64_t block_rows = 0);
  ~CaptureScope();
  CaptureScope(const CaptureScope&) = delete;
  CaptureScope& operator=(const CaptureScope&) = delete;

  int layers_captured() const;
  // The blocks of the op call with the largest block in this scope (model.h); rows 0 when none ran.
  AttentionBlockUse block_use() const;
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
