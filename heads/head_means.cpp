#include "heads/head_means.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "heads/saved_statistics.h"

namespace headscan {

void HeadMeans::resize(const ModelShape& shape) {
  shape_ = shape;
  sums_.assign(shape.layers, std::vector<ExactSum>(shape.heads));
  counts_.assign(shape.layers, 0);
}

void HeadMeans::add(int layer, const at::Tensor& values, const at::Tensor& counted, DeviceSums* sums, double high) {
  TORCH_CHECK(values.dim() == 3, "per-query values must be [B,H,N], got ", values.sizes());
  TORCH_CHECK(counted.dim() == 2 && counted.size(0) == values.size(0) && counted.size(1) == values.size(2),
              "query mask must be [B,N] matching values ", values.sizes(), ", got ", counted.sizes());
  TORCH_CHECK(layer >= 0 && layer < shape_.layers && values.size(1) == shape_.heads,
              "attention of layer ", layer, " with ", values.size(1), " heads does not fit the model shape (",
              shape_.layers, " layers, ", shape_.heads, " heads)");
  const at::Tensor mask = counted.unsqueeze(1);
  const at::Tensor head_sums = torch::where(mask, values.clamp(0, high), torch::zeros({}, values.options()))
                                   .sum(at::IntArrayRef{0, 2}, /*keepdim=*/false, at::kDouble);
  // [H + 1]: the heads' sums, then the number of queries counted.
  const at::Tensor pending = torch::cat({head_sums, counted.sum().to(at::kDouble).view({1})});
  add_or_receive(sums, pending, [this, layer](const double* data, std::int64_t) {
    for (int head = 0; head < shape_.heads; ++head) {
      TORCH_CHECK(sums_[layer][head].add(data[head]), "a batch sum of ", data[head],
                  " cannot be accumulated: the model's attention is not finite");
    }
    counts_[layer] += static_cast<std::int64_t>(data[shape_.heads]);
  });
}

double HeadMeans::mean(int layer, int head) const {
  if (counts_.at(layer) == 0) return std::numeric_limits<double>::quiet_NaN();
  return sums_.at(layer).at(head).value() / static_cast<double>(counts_[layer]);
}

nlohmann::json HeadMeans::save() const {
  nlohmann::json sums = nlohmann::json::array();
  for (const auto& layer : sums_) {
    nlohmann::json row = nlohmann::json::array();
    for (const ExactSum& sum : layer) row.push_back(sum.save());
    sums.push_back(std::move(row));
  }
  return {{"sums", std::move(sums)}, {"counts", counts_}};
}

void HeadMeans::merge(const nlohmann::json& saved, const std::string& path) {
  const SavedHeadMeans loaded = load_head_means(saved, shape_.layers, shape_.heads, path);
  for (int layer = 0; layer < shape_.layers; ++layer) {
    for (int head = 0; head < shape_.heads; ++head) sums_[layer][head].add(loaded.sums[layer][head]);
    counts_[layer] += loaded.counts[layer];
  }
}

void QueryMean::add(const at::Tensor& values, const at::Tensor& counted, DeviceSums* sums) {
  TORCH_CHECK(values.dim() == 2 && counted.sizes() == values.sizes(),
              "per-query values and their mask must both be [B,N], got ", values.sizes(), " and ", counted.sizes());
  const at::Tensor sum = torch::where(counted, values.clamp(0, 1), torch::zeros({}, values.options())).sum(at::kDouble);
  const at::Tensor pending = torch::stack({sum, counted.sum().to(at::kDouble)});  // [2]: sum, count
  add_or_receive(sums, pending, [this](const double* data, std::int64_t) {
    TORCH_CHECK(sum_.add(data[0]), "a batch sum of ", data[0], " cannot be accumulated: the model's attention is not finite");
    count_ += static_cast<std::int64_t>(data[1]);
  });
}

double QueryMean::mean() const {
  if (count_ == 0) return std::numeric_limits<double>::quiet_NaN();
  return sum_.value() / static_cast<double>(count_);
}

nlohmann::json QueryMean::save() const { return {{"sum", sum_.save()}, {"count", count_}}; }

void QueryMean::merge(const nlohmann::json& saved, const std::string& path) {
  const SavedQueryMean loaded = load_query_mean(saved, path);
  sum_.add(loaded.sum);
  count_ += loaded.count;
}

void put_score(nlohmann::ordered_json& scores, const char* name, double value) {
  if (std::isnan(value)) {
    scores[name] = nullptr;
  } else {
    scores[name] = std::round(value * 1e6) / 1e6;
  }
}

}  // namespace headscan
