// positional: for d in {-2, -1, +1, +2}, mean A[i, i+d] over queries where key i+d exists, and the
// share of those queries whose argmax is i+d. The head's offset is the d of largest mean weight
// (ties: smaller |d|, then negative). Label "positional" when that weight > 0.8 (Voita et al.
// 2019, "positional heads").
#include <array>
#include <cmath>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "heads/head_means.h"
#include "heads/registry.h"
#include "heads/row_block.h"
#include "heads/row_summary.h"
#include "heads/saved_statistics.h"

namespace headscan {
namespace {

constexpr std::array<int, 4> kOffsets = {-1, 1, -2, 2};  // tie order: smaller |d|, then negative

class PositionalClassifier : public HeadClassifier {
 public:
  HeadType type() const override {
    return {{{"positional", "mean weight at the best offset d ∈ {−2,−1,+1,+2}"}},
            "positional",
            {{"positional", 0.8}},
            "Voita et al. 2019",
            "#88CCEE",
            "pos",
            /*primary_rank=*/9};
  }

  void begin(const ModelShape& shape) override {
    for (auto& means : weights_) means.resize(shape);
    for (auto& means : argmax_hits_) means.resize(shape);
  }

  void observe(int layer, const at::Tensor& attention, const BatchContext& context) override {
    const RowBlock block = row_block(attention, context);
    RowSummary local;
    const at::Tensor& argmax = row_summary(layer, attention, context, local).argmax;  // [B, H, Q]
    for (size_t k = 0; k < kOffsets.size(); ++k) {
      const int d = kOffsets[k];
      // The block's queries i in [from, to) have a key i + d inside the sequence (a suffix token counts
      // as a key).
      const OffsetWeights at_offset = weights_at_offset(attention, block, d);
      if (at_offset.empty()) continue;
      const std::int64_t from = at_offset.from;
      const std::int64_t to = at_offset.to;
      const at::Tensor counted = positions(context.queries, from, to) & positions(context.valid, from + d, to + d);
      weights_[k].add(layer, at_offset.weights, counted, context.sums);
      const at::Tensor targets = torch::arange(from + d, to + d, argmax.options());
      const at::Tensor hits = positions(argmax, from - block.first, to - block.first) == targets;
      argmax_hits_[k].add(layer, hits.to(at::kFloat), counted, context.sums);
    }
  }

  nlohmann::json save() const override {
    nlohmann::json saved = nlohmann::json::object();
    for (size_t k = 0; k < kOffsets.size(); ++k) {
      saved[std::to_string(kOffsets[k])] = {{"weight", weights_[k].save()}, {"argmax", argmax_hits_[k].save()}};
    }
    return saved;
  }

  void merge(const nlohmann::json& saved) override {
    const std::string path = saved_statistics_path(name());
    for (size_t k = 0; k < kOffsets.size(); ++k) {
      const std::string key = std::to_string(kOffsets[k]);
      const nlohmann::json& offset = saved_field(saved, key.c_str(), path);
      weights_[k].merge(saved_field(offset, "weight", path + "." + key), path + "." + key + ".weight");
      argmax_hits_[k].merge(saved_field(offset, "argmax", path + "." + key), path + "." + key + ".argmax");
    }
  }

  void finalize(int layer, int head, const Thresholds& thresholds, HeadVerdict& verdict) const override {
    // Weights are compared as reported (6 decimals), so that float noise between near-zero
    // weights does not pick the offset over the tie order.
    auto reported = [&](size_t k) { return std::round(weights_[k].mean(layer, head) * 1e6); };
    int best = -1;
    for (size_t k = 0; k < kOffsets.size(); ++k) {
      if (std::isnan(weights_[k].mean(layer, head))) continue;
      if (best < 0 || reported(k) > reported(best)) best = static_cast<int>(k);
    }
    if (best < 0) {
      verdict.scores["positional"] = nullptr;
      return;
    }
    nlohmann::ordered_json positional = {{"offset", kOffsets[best]}};
    put_score(positional, "weight", weights_[best].mean(layer, head));
    put_score(positional, "argmax_rate", argmax_hits_[best].mean(layer, head));
    if (weights_[best].mean(layer, head) > thresholds.at("positional")) verdict.labels.emplace_back("positional");
    verdict.scores["positional"] = std::move(positional);
  }

 private:
  std::array<HeadMeans, kOffsets.size()> weights_;
  std::array<HeadMeans, kOffsets.size()> argmax_hits_;
};

}  // namespace

std::unique_ptr<HeadClassifier> make_positional_classifier() {
  return std::make_unique<PositionalClassifier>();
}

}  // namespace headscan
