#include "heads/head_means.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "analyzer/errors.h"

namespace headscan {
namespace {

constexpr int kFractionBits = 40;
// Batch sums beyond this (in absolute value) do not fit the 128 bits with room for many batches.
constexpr double kLargestBatchSum = 1e24;

// Saved query counts: whole numbers up to 2^42 each, so that a million shards add up without overflow.
void check_counts(const std::vector<std::int64_t>& counts) {
  constexpr std::int64_t kLargestCount = std::int64_t{1} << 42;
  for (const std::int64_t count : counts) {
    if (count < 0 || count > kLargestCount) {
      throw InputError(fmt::format("expected saved query counts from 0 to {}, found {}", kLargestCount, count));
    }
  }
}

}  // namespace

void ExactSum::add(double value) {
  TORCH_CHECK(std::isfinite(value) && std::fabs(value) < kLargestBatchSum, "a batch sum of ", value,
              " cannot be accumulated: the model's attention is not finite");
  ExactSum batch;
  batch.units_ = static_cast<Units>(std::nearbyint(std::ldexp(value, kFractionBits)));
  add(batch);
}

double ExactSum::value() const { return std::ldexp(static_cast<double>(units_), -kFractionBits); }

nlohmann::json ExactSum::save() const {
  const auto high = static_cast<std::int64_t>(units_ >> 64);
  const auto low = static_cast<std::uint64_t>(units_ & ~std::uint64_t{0});
  return nlohmann::json::array({high, low});
}

ExactSum ExactSum::load(const nlohmann::json& saved) {
  if (!saved.is_array() || saved.size() != 2 || !saved[0].is_number_integer() || !saved[1].is_number_unsigned()) {
    throw InputError("expected a saved sum as [high, low] integers, found " + saved.dump().substr(0, 60));
  }
  ExactSum sum;
  // Shifted as unsigned: a left shift of a negative value is undefined.
  const auto high = static_cast<Unsigned>(static_cast<std::uint64_t>(saved[0].get<std::int64_t>()));
  sum.units_ = static_cast<Units>((high << 64) | static_cast<Unsigned>(saved[1].get<std::uint64_t>()));
  return sum;
}

void HeadMeans::resize(const ModelShape& shape) {
  shape_ = shape;
  sums_.assign(shape.layers, std::vector<ExactSum>(shape.heads));
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
  for (int head = 0; head < shape_.heads; ++head) sums_[layer][head].add(data[head]);
  counts_[layer] += counted.sum().item<std::int64_t>();
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

void HeadMeans::merge(const nlohmann::json& saved) {
  std::vector<std::vector<ExactSum>> sums;
  for (const auto& layer : saved.at("sums")) {
    std::vector<ExactSum> row;
    for (const auto& sum : layer) row.push_back(ExactSum::load(sum));
    sums.push_back(std::move(row));
  }
  auto counts = saved.at("counts").get<std::vector<std::int64_t>>();
  check_counts(counts);
  const bool rows_fit = std::all_of(sums.begin(), sums.end(),
                                    [&](const auto& row) { return row.size() == static_cast<size_t>(shape_.heads); });
  if (sums.size() != sums_.size() || counts.size() != counts_.size() || !rows_fit) {
    throw InputError(fmt::format("cannot merge statistics of a model with {} layers and {} heads into one "
                                 "with {} layers and {} heads; merge shards of the same model only",
                                 sums.size(), sums.empty() ? 0 : sums[0].size(), shape_.layers, shape_.heads));
  }
  for (size_t layer = 0; layer < sums.size(); ++layer) {
    for (size_t head = 0; head < sums[layer].size(); ++head) sums_[layer][head].add(sums[layer][head]);
    counts_[layer] += counts[layer];
  }
}

void QueryMean::add(const at::Tensor& values, const at::Tensor& counted) {
  TORCH_CHECK(values.dim() == 2 && counted.sizes() == values.sizes(),
              "per-query values and their mask must both be [B,N], got ", values.sizes(), " and ", counted.sizes());
  sum_.add(torch::where(counted, values, torch::zeros({}, values.options())).sum(at::kDouble).item<double>());
  count_ += counted.sum().item<std::int64_t>();
}

double QueryMean::mean() const {
  if (count_ == 0) return std::numeric_limits<double>::quiet_NaN();
  return sum_.value() / static_cast<double>(count_);
}

nlohmann::json QueryMean::save() const { return {{"sum", sum_.save()}, {"count", count_}}; }

void QueryMean::merge(const nlohmann::json& saved) {
  sum_.add(ExactSum::load(saved.at("sum")));
  const auto count = saved.at("count").get<std::int64_t>();
  check_counts({count});
  count_ += count;
}

void put_score(nlohmann::ordered_json& scores, const char* name, double value) {
  if (std::isnan(value)) {
    scores[name] = nullptr;
  } else {
    scores[name] = std::round(value * 1e6) / 1e6;
  }
}

}  // namespace headscan
