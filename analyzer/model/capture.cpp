#include "analyzer/model/capture.h"

#include <algorithm>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <c10/core/GradMode.h>
#include <torch/library.h>
#include <torch/script.h>

#include "analyzer/errors.h"
#include "analyzer/model/attention_plan.h"
#include "analyzer/model/eager_attention.h"

namespace headscan {

struct CaptureState {
  std::int64_t batch = 0;
  std::int64_t length = 0;
  const AttentionCallback* on_attention = nullptr;
  const HeadScales* scales = nullptr;
  const AttentionEdit* edit = nullptr;
  std::int64_t block_rows = 0;  // requested rows of the op's blocks; 0: planned
  AttentionBlockUse block_use;
  int next_layer = 0;
  std::exception_ptr error;
};

namespace {

thread_local CaptureState* active_capture = nullptr;

// Whether probabilities of shape `sizes` ([..., rows, keys]) softmaxed over `dim` are attention of
// the scope's batch over its keys: [B, H, L, T], [B*H, L, T] (bmm style) or [B, L, T] (one head),
// with T keys and `rows` = T for a whole map.
bool is_attention(at::IntArrayRef sizes, std::int64_t dim, std::int64_t rows, const CaptureState& state) {
  const auto rank = static_cast<std::int64_t>(sizes.size());
  if (rank != 3 && rank != 4) return false;
  if (dim != -1 && dim != rank - 1) return false;
  if (sizes[rank - 1] != state.length || sizes[rank - 2] != rows) return false;
  return rank == 4 ? sizes[0] == state.batch : sizes[0] % state.batch == 0;
}

// Attention of the scope's batch (is_attention) viewed as [B, H, Q, T].
at::Tensor as_blocks(const at::Tensor& probs, const CaptureState& state) {
  return attention_heads(probs, state.batch);
}

// Attention over keys, normalized to [B, H, T, T]; nullopt for any other softmax (vocabulary,
// router, or one over another dimension).
std::optional<at::Tensor> as_attention(const at::Tensor& probs, std::int64_t dim, const CaptureState& state) {
  if (!probs.is_floating_point() || !is_attention(probs.sizes(), dim, state.length, state)) return std::nullopt;
  return as_blocks(probs, state);
}

// Hands one block of a layer's attention to the callback, detached from any autograd graph (a
// gradient pass differentiates through the probabilities, the classifiers only read them).
void deliver(CaptureState& state, int layer, const at::Tensor& attention, std::int64_t first_row) {
  if (!*state.on_attention) return;
  at::Tensor probs = attention.detach();
  if (probs.scalar_type() != at::kFloat) probs = probs.to(at::kFloat);
  (*state.on_attention)(layer, probs, first_row);
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

// One block of layer `layer`: `probs` as the model holds it, `attention` its [B, H, Q, T] view.
// Handed to the callback, then returned scaled by the layer's head scales and edited.
at::Tensor observe_block(CaptureState& state, int layer, const at::Tensor& probs, const at::Tensor& attention,
                         std::int64_t first_row) {
  try {
    deliver(state, layer, attention, first_row);
    at::Tensor result = probs;
    if (state.scales != nullptr && layer < static_cast<int>(state.scales->size()) &&
        (*state.scales)[static_cast<std::size_t>(layer)].defined()) {
      result = scale_heads(probs, state.batch, (*state.scales)[static_cast<std::size_t>(layer)]);
    }
    if (state.edit != nullptr && *state.edit) {
      const at::Tensor edited = (*state.edit)(layer, result.view(attention.sizes()), first_row);
      if (edited.defined()) result = edited.view(probs.sizes());
    }
    return result;
  } catch (...) {
    fail_inside_graph(state, std::current_exception());
  }
}

}  // namespace

at::Tensor attention_heads(const at::Tensor& probs, std::int64_t batch) {
  if (probs.dim() == 4) return probs;
  return probs.view({batch, probs.size(0) / batch, probs.size(1), probs.size(2)});
}

// (ξ_h·A)·V is ξ_h times the head's output, so ξ_h = 0 removes the head exactly and ∂L/∂ξ_h is
// its importance.
at::Tensor scale_heads(const at::Tensor& probs, std::int64_t batch, const at::Tensor& scale) {
  const at::Tensor attention = attention_heads(probs, batch);
  const auto heads = attention.size(1);
  TORCH_CHECK(scale.dim() == 2 && scale.size(0) == batch && scale.size(1) == heads,
              "head scales must be [", batch, ", ", heads, "] for this layer, got ", scale.sizes());
  const at::Tensor factors = scale.to(attention.device(), attention.scalar_type()).view({batch, heads, 1, 1});
  return (attention * factors).view(probs.sizes());
}

at::Tensor observe_softmax(const at::Tensor& probs, std::int64_t dim) {
  CaptureState* state = active_capture;
  if (state == nullptr || state->error) return probs;
  const std::optional<at::Tensor> attention = as_attention(probs, dim, *state);
  if (!attention) return probs;
  const int layer = state->next_layer++;
  return observe_block(*state, layer, probs, *attention, /*first_row=*/0);
}

AttentionBlocks::AttentionBlocks(at::IntArrayRef sizes, std::int64_t element_size, const c10::Device& device) {
  TORCH_CHECK(sizes.size() >= 2, "attention probabilities must be [..., L, S], got ", sizes);
  const std::int64_t length = sizes[sizes.size() - 2];
  const std::int64_t keys = sizes[sizes.size() - 1];
  std::int64_t rows_of_heads = 1;
  for (std::size_t d = 0; d + 2 < sizes.size(); ++d) rows_of_heads *= sizes[d];
  CaptureState* state = active_capture;
  const std::int64_t requested = state != nullptr ? state->block_rows : 0;
  const std::int64_t budget = requested > 0 ? 0 : attention_block_budget(device);
  rows_ = attention_block_rows(requested, rows_of_heads, length, keys, element_size, budget);
  if (state == nullptr || state->error || !is_attention(sizes, /*dim=*/-1, state->length, *state)) return;
  state_ = state;
  layer_ = state->next_layer++;
  const AttentionBlockUse use{rows_, length, rows_of_heads * rows_ * keys * static_cast<std::int64_t>(sizeof(float))};
  if (use.block_bytes > state->block_use.block_bytes) state->block_use = use;
}

at::Tensor AttentionBlocks::observe(const at::Tensor& block, std::int64_t first_row) {
  if (state_ == nullptr || state_->error) return block;
  return observe_block(*state_, layer_, block, as_blocks(block, *state_), first_row);
}

bool AttentionBlocks::edits() const { return state_ != nullptr && state_->edit != nullptr && *state_->edit; }

std::int64_t AttentionBlocks::batch() const { return state_ != nullptr ? state_->batch : 0; }

at::Tensor AttentionBlocks::head_scale() const {
  if (state_ == nullptr || state_->scales == nullptr || layer_ >= static_cast<int>(state_->scales->size())) {
    return at::Tensor();
  }
  return (*state_->scales)[static_cast<std::size_t>(layer_)];
}

void AttentionBlocks::deliver(const at::Tensor& block, std::int64_t first_row) {
  if (state_ == nullptr || state_->error) return;
  try {
    headscan::deliver(*state_, layer_, as_blocks(block, *state_), first_row);
  } catch (...) {
    fail_inside_graph(*state_, std::current_exception());
  }
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

// headscan::attention.windowed: headscan::attention with a sliding window, attention chunks,
// soft-capping and sinks (eager_attention.h, AttentionRule), as transformers' attention
// implementation "headscan" calls it for the models whose masks and attention have them.
at::Tensor windowed_attention(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                              const std::optional<at::Tensor>& attn_mask, double dropout_p, bool is_causal,
                              std::optional<double> scale, bool enable_gqa, std::int64_t /*layer*/,
                              std::int64_t window_left, std::int64_t window_right, std::int64_t chunk,
                              std::optional<double> softcap, const std::optional<at::Tensor>& sinks) {
  AttentionRule rule;
  rule.window_left = window_left;
  rule.window_right = window_right;
  rule.chunk = chunk;
  rule.softcap = softcap;
  if (sinks && sinks->defined()) rule.sinks = *sinks;
  return eager_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, rule);
}

TORCH_LIBRARY(headscan, m) {
  m.def(torch::schema("headscan::observe_softmax(Tensor(a) probs, int dim) -> Tensor(a)",
                      c10::AliasAnalysisKind::FROM_SCHEMA),
        observe_softmax);
  using SdpaAttention = at::Tensor (*)(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                       const std::optional<at::Tensor>&, double, bool, std::optional<double>, bool);
  m.def(torch::schema(kEagerAttentionSchema, c10::AliasAnalysisKind::FROM_SCHEMA),
        static_cast<SdpaAttention>(eager_attention));
  m.def("headscan::observe(Tensor probs, int layer) -> Tensor");
  m.def("headscan::attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask, float dropout_p, "
        "bool is_causal, float? scale, bool enable_gqa, int layer) -> Tensor");
  m.def(kWindowedAttentionSchema);
}

// The exported program's operators have explicit kernels for every backend
// (CompositeExplicitAutograd), not the implicit catch-all, so that Python can give them the fake
// implementations torch.export traces with (headscan/_export/ops.py): register_fake refuses an
// operator with a CompositeImplicitAutograd kernel.
TORCH_LIBRARY_IMPL(headscan, CompositeExplicitAutograd, m) {
  m.impl("observe", observe);
  m.impl("attention", attention);
  m.impl("attention.windowed", windowed_attention);
}

TORCH_LIBRARY_IMPL(headscan, Autograd, m) {
  m.impl("observe", torch::CppFunction::makeFromBoxedFunction<&differentiable_kernel>());
  m.impl("attention", torch::CppFunction::makeFromBoxedFunction<&differentiable_kernel>());
  m.impl("attention.windowed", torch::CppFunction::makeFromBoxedFunction<&differentiable_kernel>());
}

}  // namespace

bool capture_running() { return active_capture != nullptr; }

namespace {

// Whether a tensor among the operator's arguments (the top of `stack`) requires grad.
bool input_requires_grad(const c10::OperatorHandle& op, const torch::jit::Stack& stack) {
  const std::size_t count = op.schema().arguments().size();
  for (std::size_t i = stack.size() - std::min(count, stack.size()); i < stack.size(); ++i) {
    const c10::IValue& value = stack[i];
    if (value.isTensor() && value.toTensor().defined() && value.toTensor().requires_grad()) return true;
    if (value.isTensorList()) {
      for (const at::Tensor& tensor : value.toTensorVector()) {
        if (tensor.defined() && tensor.requires_grad()) return true;
      }
    }
  }
  return false;
}

}  // namespace

void differentiable_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack) {
  const c10::DispatchKeySet below = keys & c10::after_autograd_keyset;
  if (c10::GradMode::is_enabled() && (capture_running() || input_requires_grad(op, *stack))) {
    op.redispatchBoxed(below, stack);  // autograd stays on for the kernel's own operations
    return;
  }
  const at::AutoDispatchBelowADInplaceOrView below_autograd;
  op.redispatchBoxed(below, stack);
}

void fail_capture(std::exception_ptr error) {
  CaptureState* state = active_capture;
  TORCH_CHECK(state != nullptr, "headscan: no capture is running");
  fail_inside_graph(*state, std::move(error));
}

CaptureScope::CaptureScope(std::int64_t batch, std::int64_t length, const AttentionCallback& on_attention,
                           const HeadScales* scales, const AttentionEdit* edit, std::int64_t block_rows)
    : state_(std::make_unique<CaptureState>()), outer_(active_capture) {
  state_->batch = batch;
  state_->length = length;
  state_->on_attention = &on_attention;
  state_->scales = scales;
  state_->edit = edit;
  state_->block_rows = block_rows;
  active_capture = state_.get();
}

CaptureScope::~CaptureScope() { active_capture = outer_; }

int CaptureScope::layers_captured() const { return state_->next_layer; }

AttentionBlockUse CaptureScope::block_use() const { return state_->block_use; }

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
