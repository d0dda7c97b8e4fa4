#include "analyzer/model/model_shape.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include "analyzer/errors.h"
#include "analyzer/model/model.h"

namespace headscan {

namespace {

constexpr double kCausalTolerance = 1e-6;  // weight above the diagonal still counted as none
// Layers, heads and causality show on a short prefix as well as on a whole window, at a fraction
// of the cost of one more forward pass over up to max_length tokens.
constexpr std::size_t kShapeProbeTokens = 32;

}  // namespace

ModelShape detect_model_shape(InstrumentedModel& model, const std::vector<std::int64_t>& first_ids) {
  std::vector<std::int64_t> ids = first_ids;
  if (ids.size() > kShapeProbeTokens) ids.resize(kShapeProbeTokens);
  // Causality needs two positions; a model with a min_length takes no fewer.
  const auto shortest = static_cast<std::size_t>(std::max<std::int64_t>(2, model.metadata().min_length.value_or(2)));
  while (ids.size() < shortest) ids.push_back(ids.back());
  const at::Tensor input = torch::tensor(ids, torch::kInt64).unsqueeze(0);
  const at::Tensor mask = torch::ones_like(input);
  ModelShape shape;
  bool causal = true;
  const ForwardOutput output = model.forward(input, &mask, [&](int layer, const at::Tensor& attention,
                                                               std::int64_t first_row) {
    if (layer == 0 && first_row == 0) shape.heads = static_cast<int>(attention.size(1));
    if (attention.size(1) != shape.heads) {
      throw InputError(fmt::format("attention layer {} has {} heads, layer 0 has {}; headscan needs the same "
                                   "number of (query) heads in every layer",
                                   layer, attention.size(1), shape.heads));
    }
    shape.layers = layer + 1;
    require_finite_attention(layer, attention, nullptr, first_row);
    // Rows first_row + q: keys above the diagonal are j > first_row + q.
    if (attention.triu(/*diagonal=*/first_row + 1).abs().max().item<double>() > kCausalTolerance) causal = false;
  });
  if (shape.layers == 0) {
    throw InputError(fmt::format(
        "found no attention: the forward graph has {} softmax op(s), none of which produced "
        "probabilities over keys ([batch, heads, T, T], [batch*heads, T, T] or [batch, T, T]), and the "
        "output holds no attention tensors; export the model with eager attention "
        "(softmax(QK^T/sqrt(d)) computed explicitly)",
        model.softmax_count()));
  }
  shape.causal = model.metadata().causal.value_or(causal);
  if (output.logits) shape.logits_width = output.logits->size(2);
  shape.declared_logits = model.metadata().logits;
  return shape;
}

at::Tensor nonfinite_attention(const at::Tensor& attention, const at::Tensor* valid, std::int64_t first_row) {
  // A row's sum is finite exactly when all of its weights are: one pass, no tensor of the
  // attention's size.
  const at::Tensor broken_rows = attention.sum(-1).isfinite().logical_not().any(1);  // [B, Q]
  if (valid == nullptr) return broken_rows.any();
  return broken_rows.logical_and(valid->narrow(/*dim=*/1, first_row, attention.size(2))).any();
}

void report_nonfinite_attention(int layer) {
  throw InputError(fmt::format("attention layer {} holds NaN or infinite weights, which softmax never gives: the "
                               "model's weights or its computation are broken (NaN or infinite parameters, or an "
                               "overflow); check the model in PyTorch, e.g. that no parameter is NaN, and export it "
                               "again",
                               layer));
}

void require_finite_attention(int layer, const at::Tensor& attention, const at::Tensor* valid, std::int64_t first_row) {
  if (nonfinite_attention(attention, valid, first_row).item<bool>()) report_nonfinite_attention(layer);
}

}  // namespace headscan
