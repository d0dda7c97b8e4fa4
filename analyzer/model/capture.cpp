#include "analyzer/model/capture.h"

#include <array>
#include <optional>
#include <string_view>

#include <fmt/format.h>
#include <torch/library.h>
#include <torch/csrc/jit/ir/constants.h>
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

// Ops that compute attention without materializing its probabilities.
// aten::scaled_dot_product_attention is not among them: it is rewritten into its eager form
// (eager_attention.h). These return more than the output, or fuse the projections too.
constexpr std::array<std::string_view, 6> kFusedAttentionOps = {
    "aten::_scaled_dot_product_attention",
    "aten::_scaled_dot_product_flash_attention",
    "aten::_scaled_dot_product_efficient_attention",
    "aten::_fused_sdp_choice",
    "aten::_native_multi_head_attention",
    "aten::_transformer_encoder_layer_fwd",
};

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
void deliver(CaptureState& state, int layer, const at::Tensor& attention) {
  if (!*state.on_attention) return;
  at::Tensor probs = attention.detach();
  if (probs.scalar_type() != at::kFloat) probs = probs.to(at::kFloat);
  (*state.on_attention)(layer, probs);
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
    deliver(*state, layer, *attention);
    at::Tensor result = probs;
    if (state->scales != nullptr && layer < static_cast<int>(state->scales->size()) &&
        (*state->scales)[static_cast<std::size_t>(layer)].defined()) {
      result = scale_heads(probs, *attention, (*state->scales)[static_cast<std::size_t>(layer)]);
    }
    if (state->edit != nullptr && *state->edit) {
      const at::Tensor edited = (*state->edit)(layer, result.view(attention->sizes()));
      if (edited.defined()) result = edited.view(probs.sizes());
    }
    return result;
  } catch (...) {
    fail_inside_graph(*state, std::current_exception());
  }
  return probs;
}

namespace {

at::Tensor fused_attention_guard(const at::Tensor& input, c10::string_view op) {
  CaptureState* state = active_capture;
  if (state == nullptr) return input;
  fail_inside_graph(*state, std::make_exception_ptr(InputError(fmt::format(
      "the model runs {}, a fused attention op that never materializes attention probabilities, "
      "so headscan cannot see them; export the model with eager attention instead: for Hugging "
      "Face models load with attn_implementation=\"eager\" before torch.jit.trace; for "
      "torch.nn.MultiheadAttention call it with need_weights=True (or trace it with gradients "
      "enabled), which takes the path that computes softmax(QK^T) explicitly",
      std::string(op.data(), op.size())))));
}

at::Tensor check_token_ids(const at::Tensor& ids, const at::Tensor& weight) {
  CaptureState* state = active_capture;
  if (state == nullptr || ids.numel() == 0) return ids;
  const std::int64_t rows = weight.size(0);
  const std::int64_t largest = ids.max().item<std::int64_t>();
  if (largest >= rows) {
    fail_inside_graph(*state, std::make_exception_ptr(InputError(fmt::format(
        "token id {} is beyond the model's embedding ({} rows, ids 0..{}): the tokenizer does not "
        "match the model; use the tokenizer the model was trained with (--tokenizer FILE)",
        largest, rows, rows - 1))));
  }
  return ids;
}

TORCH_LIBRARY(headscan, m) {
  m.def(torch::schema("headscan::observe_softmax(Tensor(a) probs, int dim) -> Tensor(a)",
                      c10::AliasAnalysisKind::FROM_SCHEMA),
        observe_softmax);
  m.def(torch::schema("headscan::fused_attention_guard(Tensor(a) input, str op) -> Tensor(a)",
                      c10::AliasAnalysisKind::FROM_SCHEMA),
        fused_attention_guard);
  m.def(torch::schema("headscan::check_token_ids(Tensor(a) ids, Tensor weight) -> Tensor(a)",
                      c10::AliasAnalysisKind::FROM_SCHEMA),
        check_token_ids);
}

void collect_nodes(torch::jit::Block* block, std::vector<torch::jit::Node*>& nodes) {
  for (torch::jit::Node* node : block->nodes()) {
    nodes.push_back(node);
    for (torch::jit::Block* inner : node->blocks()) collect_nodes(inner, nodes);
  }
}

bool is_fused_attention(const torch::jit::Node* node) {
  const std::string_view kind = node->kind().toQualString();
  for (std::string_view fused : kFusedAttentionOps) {
    if (kind == fused) return true;
  }
  return false;
}

std::optional<std::int64_t> constant_int(torch::jit::Value* value) {
  const std::optional<c10::IValue> constant = torch::jit::toIValue(value);
  if (!constant || !constant->isInt()) return std::nullopt;
  return constant->toInt();
}

// Attention with a sink (gpt-oss; Xiao et al. 2023's learned sink): the softmax runs over the
// T keys and one sink logit appended last, and the model keeps probs[..., :-1], whose rows sum
// to less than 1. That slice is the attention: the node that takes it when the softmax's output
// has exactly this one use, aten::slice(probs, dim, 0, -1, 1) over the softmax's dimension (a
// trace writes the last dimension as 3, a script as -1; the observer checks at run time that it
// is the last); null otherwise.
torch::jit::Node* sink_slice(torch::jit::Node* softmax) {
  static const auto slice = c10::Symbol::fromQualString("aten::slice");
  torch::jit::Value* probs = softmax->output();
  if (probs->uses().size() != 1) return nullptr;
  torch::jit::Node* user = probs->uses().front().user;
  if (user->kind() != slice || user->inputs().size() != 5 || user->input(0) != probs) return nullptr;
  const auto softmax_dim = constant_int(softmax->input(1));
  const auto dim = constant_int(user->input(1));
  const auto start = constant_int(user->input(2));
  const auto end = constant_int(user->input(3));
  const auto step = constant_int(user->input(4));
  if (!softmax_dim || !dim || (*dim != *softmax_dim && *dim != -1 && *softmax_dim != -1)) return nullptr;
  if (!start || *start != 0 || !end || *end != -1 || !step || *step != 1) return nullptr;
  return user;
}

// The observer goes after the softmax, or after its sink slice; it sees the attention over the T
// keys either way.
void insert_softmax_observer(torch::jit::Graph& graph, torch::jit::Node* softmax) {
  static const auto observe = c10::Symbol::fromQualString("headscan::observe_softmax");
  torch::jit::Node* producer = softmax;
  torch::jit::Value* dim = softmax->input(1);
  if (torch::jit::Node* slice = sink_slice(softmax)) {
    producer = slice;
    dim = slice->input(1);
  }
  torch::jit::Value* probs = producer->output();
  torch::jit::Node* observer = graph.create(observe, {probs, dim}, 1);
  observer->insertAfter(producer);
  observer->output()->setType(probs->type());
  probs->replaceAllUsesAfterNodeWith(observer, observer->output());
}

void insert_guard_before(torch::jit::Graph& graph, torch::jit::Node* node, size_t input,
                         torch::jit::Node* guard) {
  guard->insertBefore(node);
  guard->output()->setType(node->input(input)->type());
  node->replaceInput(input, guard->output());
}

}  // namespace

InstrumentationSummary instrument_graph(torch::jit::Graph& graph) {
  static const auto fused_guard = c10::Symbol::fromQualString("headscan::fused_attention_guard");
  static const auto id_check = c10::Symbol::fromQualString("headscan::check_token_ids");
  static const auto softmax = c10::Symbol::fromQualString("aten::softmax");
  static const auto private_softmax = c10::Symbol::fromQualString("aten::_softmax");
  static const auto embedding = c10::Symbol::fromQualString("aten::embedding");
  static const auto sdpa = c10::Symbol::fromQualString("aten::scaled_dot_product_attention");

  std::vector<torch::jit::Node*> nodes;
  collect_nodes(graph.block(), nodes);
  torch::jit::Value* input_ids = graph.inputs().size() > 1 ? graph.inputs()[1] : nullptr;

  InstrumentationSummary summary;
  for (torch::jit::Node* node : nodes) {
    const auto kind = node->kind();
    if (kind == sdpa && rewrite_scaled_dot_product_attention(graph, node)) {
      ++summary.rewritten_attention;
    } else if ((kind == softmax || kind == private_softmax) && node->inputs().size() >= 2 &&
        node->input(1)->type()->kind() == c10::TypeKind::IntType) {
      insert_softmax_observer(graph, node);
      ++summary.softmax_nodes;
    } else if (is_fused_attention(node) || kind == sdpa) {  // an SDPA overload it cannot rewrite stops the run too
      torch::jit::WithInsertPoint point(node);
      torch::jit::Value* name = graph.insertConstant(std::string(kind.toQualString()));
      insert_guard_before(graph, node, 0, graph.create(fused_guard, {node->input(0), name}, 1));
      summary.fused_ops.emplace_back(kind.toQualString());
    } else if (kind == embedding && input_ids != nullptr && node->inputs().size() >= 2 &&
               node->input(1) == input_ids) {
      insert_guard_before(graph, node, 1, graph.create(id_check, {input_ids, node->input(0)}, 1));
      ++summary.embedding_guards;
    }
  }
  return summary;
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
  deliver(*state_, state_->next_layer++, *attention);
  return true;
}

}  // namespace headscan
