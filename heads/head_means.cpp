#include "heads/head_means.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "analyzer/errors.h"

namespace headscan {

void HeadMeans::resize(const ModelShape& shape) {
  shape_ = shape;
  sums_.assign(shape.layers, std::vector<double>(shape.heads, 0.0));
  counts_.assign(shape.layers, 0);
}

void HeadMeans::add(int layer, const at::Tensor& values, const at::Tensor& counted) {
  TORCH_CHECK(values.dim() == 3, "per-query values must be [B,H,N], got ", values.sizes());
  TORCH_CHECK(counted.dim() == 2 && counted.size(0) == values.size(0) && counted.size(1) == values.size(2),
              "query mask must be [B,N] matching values ", values.sizes(), ", got ", counted.sizes());
  TORCH_CHECK(layer >= 0 && layer < shape_.layers && values.size(1) == shape_.heads,
              "attention of layer ", layer, " with ", values.size(1), " heads does not fit the model shape (",
              shape_.layers, " layers, ", shape_.heads, " heads)");
  const at::Tensor mask = counted.unsqueeze(1);
  const at::Tensor sums = torch::where(mask, values, torch::zeros({}, values.options()))
                              .sum(at::IntArrayRef{0, 2}, /*keepdim=*/false, at::kDouble)
                              .contiguous();
  const double* data = sums.data_ptr<double>();
  for (int head = 0; head < shape_.heads; ++head) sums_[layer][head] += data[head];
  counts_[layer] += counted.sum().item<std::int64_t>();
}

double HeadMeans::mean(int layer, int head) const {
  if (counts_.at(layer) == 0) return std::numeric_limits<double>::quiet_NaN();
  return sums_.at(layer).at(head) / static_cast<double>(counts_[layer]);
}

nlohmann::json HeadMeans::save() const { return {{"sums", sums_}, {"counts", counts_}}; }

void HeadMeans::merge(const nlohmann::json& saved) {
  auto sums = saved.at("sums").get<std::vector<std::vector<double>>>();
  auto counts = saved.at("counts").get<std::vector<std::int64_t>>();
  const bool rows_fit = std::all_of(sums.begin(), sums.end(),
                                    [&](const auto& row) { return row.size() == static_cast<size_t>(shape_.heads); });
  if (sums.size() != sums_.size() || counts.size() != counts_.size() || !rows_fit) {
    throw InputError(fmt::format("cannot merge statistics of a model with {} layers and {} heads into one "
                                 "with {} layers and {} heads; merge shards of the same model only",
                                 sums.size(), sums.empty() ? 0 : sums[0].size(), shape_.layers, shape_.heads));
  }
  for (size_t layer = 0; layer < sums.size(); ++layer) {
    for (size_t head = 0; head < sums[layer].size(); ++head) sums_[layer][head] += sums[layer][head];
    counts_[layer] += counts[layer];
  }
}

void QueryMean::add(const at::Tensor& values, const at::Tensor& counted) {
  TORCH_CHECK(values.dim() == 2 && counted.sizes() == values.sizes(),
              "per-query values and their mask must both be [B,N], got ", values.sizes(), " and ", counted.sizes());
  sum_ += torch::where(counted, values, torch::zeros({}, values.options())).sum(at::kDouble).item<double>();
  count_ += counted.sum().item<std::int64_t>();
}

double QueryMean::mean() const {
  if (count_ == 0) return std::numeric_limits<double>::quiet_NaN();
  return sum_ / static_cast<double>(count_);
}

nlohmann::json QueryMean::save() const { return {{"sum", sum_}, {"count", count_}}; }

void QueryMean::merge(const nlohmann::json& saved) {
  sum_ += saved.at("sum").get<double>();
  count_ += saved.at("count").get<std::int64_t>();
}

void put_score(nlohmann::ordered_json& scores, const char* name, double value) {
  if (std::isnan(value)) {
    scores[name] = nullptr;
  } else {
    scores[name] = std::round(value * 1e6) / 1e6;
  }
}

}  // namespace headscan
