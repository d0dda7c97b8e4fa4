#include "analyzer/model/capture.h"

#include <optional>
#include <utility>

#include <fmt/format.h>
#include <torch/library.h>
#include <torch/script.h>

#include "analyzer/errors.h"
#include "analyzer/model/eager_attention.h"

namespace headscan {

struct CaptureState {
  std::int64_t batch = 0;
  std::int64_t length = 0;
  const AttentionCallback* on_attention = nullptr;
  const HeadScales* scales = nullptr;
  const AttentionEdit* edit = nullptr;
  int next_layer = 0;
  std::exception_ptr error;
};

namespace {

thread_local CaptureState* active_capture = nullptr;

// Attention over keys, normalized to [B, H, T, T]; nullopt for any other softmax (vocabulary,
// router, or one over another dimension).
std::optional<at::Tensor> as_attention(const at::Tensor& probs, std::int64_t dim, const CaptureState& state) {
  const auto rank = probs.dim();
  if (rank != 3 && rank != 4) return std::nullopt;
  if (dim != -1 && dim != rank - 1) return std::nullopt;
  if (!probs.is_floating_point()) return std::nullopt;
  const auto sizes = probs.sizes();
  if (sizes[rank - 1] != state.length || sizes[rank - 2] != state.length) return std::nullopt;
  if (rank == 4) {
    if (sizes[0] != state.batch) return std::nullopt;
    return probs;
  }
  // [B*H, T, T] (bmm style) or [B, T, T] (one head).
  if (sizes[0] % state.batch != 0) return std::nullopt;
  return probs.view({state.batch, sizes[0] / state.batch, state.length, state.length});
}

// Hands one layer's attention to the callback, detached from any autograd graph (a gradient pass
// differentiates through the probabilities, the classifiers only read them).
void deliver(CaptureState& state, int layer, const at::Tensor& attention, std::int64_t first_row) {
  if (!*state.on_attention) return;
  at::Tensor probs = attention.detach();
  if (probs.scalar_type() != at::kFloat) probs = probs.to(at::kFloat);
  (*state.on_attention)(layer, probs, first_row);
}

// The layer's probabilities with each head multiplied by its scale: (ξ_h·A)·V is then ξ_h times
// the head's output, so ξ_h = 0 removes the head exactly and ∂L/∂ξ_h is its importance.
at::Tensor scale_heads(const at::Tensor& probs, const at::Tensor& attention, const at::Tensor& scale) {
  const auto batch = attention.size(0);
  const auto heads = attention.size(1);
  TORCH_CHECK(scale.dim() == 2 && scale.size(0) == batch && scale.size(1) == heads,
              "head scales must be [", batch, ", ", heads, "] for this layer, got ", scale.sizes());
  const at::Tensor factors = scale.to(attention.device(), attention.scalar_type()).view({batch, heads, 1, 1});
  return (attention * factors).view(probs.sizes());
}

// Stores the error so the caller gets it back with its own type, then unwinds the interpreter.
[[noreturn]] void fail_inside_graph(CaptureState& state, std::exception_ptr error) {
  state.error = error;
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    TORCH_CHECK(false, "headscan: ", e.what());
  }
  TORCH_CHECK(false, "headscan: capture failed");
}

}  // namespace

at::Tensor observe_softmax(const at::Tensor& probs, std::int64_t dim) {
  CaptureState* state = active_capture;
  if (state == nullptr || state->error) return probs;
  const std::optional<at::Tensor> attention = as_attention(probs, dim, *state);
  if (!attention) return probs;
  const int layer = state->next_layer++;
  try {
    deliver(*state, layer, *attention, /*first_row=*/0);
    at::Tensor result = probs;
    if (state->scales != nullptr && layer < static_cast<int>(state->scales->size()) &&
        (*state->scales)[static_cast<std::size_t>(layer)].defined()) {
      result = scale_heads(probs, *attention, (*state->scales)[static_cast<std::size_t>(layer)]);
    }
    if (state->edit != nullptr && *state->edit) {
      const at::Tensor edited = (*state->edit)(layer, result.view(attention->sizes()), /*first_row=*/0);
      if (edited.defined()) result = edited.view(probs.sizes());
    }
    return result;
  } catch (...) {
    fail_inside_graph(*state, std::current_exception());
  }
  return probs;
}

namespace {

// headscan::observe, the observer an exported program calls on each attention's probabilities
// (`headscan export` places it): observe_softmax over the last dimension. `layer` is the model's
// index of the layer, which the program carries for its readers; capture numbers maps in the order
// they run, as for TorchScript.
at::Tensor observe(const at::Tensor& probs, std::int64_t /*layer*/) { return observe_softmax(probs, -1); }

// headscan::attention, aten::scaled_dot_product_attention in its eager form with the probabilities
// observed (eager_attention.h), as an exported program calls it.
at::Tensor attention(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                     const std::optional<at::Tensor>& attn_mask, double dropout_p, bool is_causal,
                     std::optional<double> scale, bool enable_gqa, std::int64_t /*layer*/) {
  return eager_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa);
}

TORCH_LIBRARY(headscan, m) {
  m.def(torch::schema("headscan::observe_softmax(Tensor(a) probs, int dim) -> Tensor(a)",
                      c10::AliasAnalysisKind::FROM_SCHEMA),
        observe_softmax);
  m.def(torch::schema(kEagerAttentionSchema, c10::AliasAnalysisKind::FROM_SCHEMA), eager_attention);
  m.def("headscan::observe(Tensor probs, int layer) -> Tensor");
  m.def("headscan::attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask, float dropout_p, "
        "bool is_causal, float? scale, bool enable_gqa, int layer) -> Tensor");
}

// The exported program's operators have explicit kernels for every backend
// (CompositeExplicitAutograd), not the implicit catch-all, so that Python can give them the fake
// implementations torch.export traces with (headscan/_export/ops.py): register_fake refuses an
// operator with a CompositeImplicitAutograd kernel.
TORCH_LIBRARY_IMPL(headscan, CompositeExplicitAutograd, m) {
  m.impl("observe", observe);
  m.impl("attention", attention);
}

}  // namespace

bool capture_running() { return active_capture != nullptr; }

void fail_capture(std::exception_ptr error) {
  CaptureState* state = active_capture;
  TORCH_CHECK(state != nullptr, "headscan: no capture is running");
  fail_inside_graph(*state, std::move(error));
}

CaptureScope::CaptureScope(std::int64_t batch, std::int64_t length, const AttentionCallback& on_attention,
                           const HeadScales* scales, const AttentionEdit* edit)
    : state_(std::make_unique<CaptureState>()), outer_(active_capture) {
  state_->batch = batch;
  state_->length = length;
  state_->on_attention = &on_attention;
  state_->scales = scales;
  state_->edit = edit;
  active_capture = state_.get();
}

CaptureScope::~CaptureScope() { active_capture = outer_; }

int CaptureScope::layers_captured() const { return state_->next_layer; }

void CaptureScope::rethrow_captured_error() const {
  if (state_->error) std::rethrow_exception(state_->error);
}

bool CaptureScope::offer(const at::Tensor& tensor) {
  auto attention = as_attention(tensor, /*dim=*/-1, *state_);
  if (!attention || attention->dim() != 4 || tensor.dim() != 4) return false;
  deliver(*state_, state_->next_layer++, *attention, /*first_row=*/0);
  return true;
}

}  // namespace headscan
