#include "analyzer/model/torchscript/graph_capture.h"

#include <array>
#include <optional>
#include <string_view>

#include <fmt/format.h>
#include <torch/library.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/script.h>

#include "analyzer/errors.h"
#include "analyzer/model/capture.h"

namespace headscan {
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

at::Tensor fused_attention_guard(const at::Tensor& input, c10::string_view op) {
  if (!capture_running()) return input;
  fail_capture(std::make_exception_ptr(InputError(fmt::format(
      "the model runs {}, a fused attention op that never materializes attention probabilities, "
      "so headscan cannot see them; export the model with eager attention instead: for Hugging "
      "Face models load with attn_implementation=\"eager\" before torch.jit.trace; for "
      "torch.nn.MultiheadAttention call it with need_weights=True (or trace it with gradients "
      "enabled), which takes the path that computes softmax(QK^T) explicitly",
      std::string(op.data(), op.size())))));
}

at::Tensor check_token_ids(const at::Tensor& ids, const at::Tensor& weight) {
  if (!capture_running() || ids.numel() == 0) return ids;
  const std::int64_t rows = weight.size(0);
  const std::int64_t largest = ids.max().item<std::int64_t>();
  if (largest >= rows) {
    fail_capture(std::make_exception_ptr(InputError(fmt::format(
        "token id {} is beyond the model's embedding ({} rows, ids 0..{}): the tokenizer does not "
        "match the model; use the tokenizer the model was trained with (--tokenizer FILE)",
        largest, rows, rows - 1))));
  }
  return ids;
}

TORCH_LIBRARY_FRAGMENT(headscan, m) {
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

bool rewrite_scaled_dot_product_attention(torch::jit::Graph& graph, torch::jit::Node* node) {
  static const auto eager = c10::Symbol::fromQualString("headscan::eager_attention");
  if (node->inputs().size() != 8 || node->outputs().size() != 1) return false;
  torch::jit::Node* replacement = graph.create(eager, node->inputs(), 1);
  replacement->insertBefore(node);
  replacement->output()->setType(node->output()->type());
  replacement->output()->copyMetadata(node->output());
  node->output()->replaceAllUsesWith(replacement->output());
  node->destroy();
  return true;
}

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
    const bool nested = node->owningBlock() != graph.block();
    if (kind == sdpa && rewrite_scaled_dot_product_attention(graph, node)) {
      ++summary.rewritten_attention;
      if (nested) ++summary.nested_attention;
    } else if ((kind == softmax || kind == private_softmax) && node->inputs().size() >= 2 &&
        node->input(1)->type()->kind() == c10::TypeKind::IntType) {
      insert_softmax_observer(graph, node);
      ++summary.softmax_nodes;
      if (nested) ++summary.nested_attention;
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


}  // namespace headscan
