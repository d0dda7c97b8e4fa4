#include "heads/row_summary.h"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>
#include <vector>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "heads/classifier.h"
#include "heads/row_block.h"

// Compiled for several instruction sets, picked at load time (GCC/Clang function multiversioning).
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define HEADSCAN_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef HEADSCAN_VECTOR_CLONES
#define HEADSCAN_VECTOR_CLONES
#endif

namespace headscan {
namespace {

inline float bits_to_float(std::int32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

inline std::int32_t float_to_bits(float value) {
  std::int32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// Natural logarithm of a positive normal float, branch-free so that loops over it vectorize:
// Cephes logf (S. L. Moshier), within 2 ulp.
inline float log_positive(float x) {
  const std::int32_t bits = float_to_bits(x);
  float exponent = static_cast<float>(((bits >> 23) & 0xff) - 126);
  float mantissa = bits_to_float((bits & 0x007fffff) | 0x3f000000);  // [0.5, 1)
  // Below sqrt(1/2) the mantissa doubles and the exponent drops by one (arithmetic rather than a
  // branch, so that the loop vectorizes).
  const float small = mantissa < 0.707106781186547524f ? 1.0f : 0.0f;
  exponent -= small;
  mantissa = mantissa + small * mantissa - 1.0f;
  const float z = mantissa * mantissa;
  float y = 7.0376836292e-2f;
  y = y * mantissa - 1.1514610310e-1f;
  y = y * mantissa + 1.1676998740e-1f;
  y = y * mantissa - 1.2420140846e-1f;
  y = y * mantissa + 1.4249322787e-1f;
  y = y * mantissa - 1.6668057665e-1f;
  y = y * mantissa + 2.0000714765e-1f;
  y = y * mantissa - 2.4999993993e-1f;
  y = y * mantissa + 3.3333331174e-1f;
  y = y * mantissa * z;
  y += -2.12194440e-4f * exponent;
  y += -0.5f * z;
  return mantissa + y + 0.693359375f * exponent;
}

struct RowOutputs {
  float* entropy;
  float* max;
  std::int64_t* argmax;
  float* distance;
};

// Rows [first, last) of `data` ([rows, length] row-major, maps of `block_rows` rows each from query
// `first_row`); row r is query first_row + r % block_rows.
HEADSCAN_VECTOR_CLONES
void summarize_range(const float* data, std::int64_t block_rows, std::int64_t length, std::int64_t first_row,
                     std::int64_t first, std::int64_t last, bool causal, RowOutputs out) {
  for (std::int64_t row = first; row < last; ++row) {
    const float* weights = data + row * length;
    const std::int64_t query = first_row + row % block_rows;
    const int keys = static_cast<int>(causal ? query + 1 : length);  // int: converts to float in SIMD
    const float position = static_cast<float>(query);
    float largest = -std::numeric_limits<float>::infinity();
    float entropy = 0.0f;
    float distance = 0.0f;
#pragma omp simd reduction(max : largest) reduction(+ : entropy, distance)
    for (int key = 0; key < keys; ++key) {
      const float weight = weights[key];
      largest = weight > largest ? weight : largest;
      // 0 log 0 = 0: below FLT_MIN the weight times log(FLT_MIN) is under 1e-36.
      entropy -= weight * log_positive(weight > FLT_MIN ? weight : FLT_MIN);
      distance += weight * std::fabs(position - static_cast<float>(key));
    }
    int best = 0;
    while (best < keys && weights[best] != largest) ++best;
    out.entropy[row] = entropy;
    out.max[row] = largest;
    out.argmax[row] = best < keys ? best : 0;
    out.distance[row] = distance;
  }
}

}  // namespace

RowSummary summarize_rows_by_tensor_ops(const at::Tensor& attention, bool causal, std::int64_t first_row) {
  const RowBlock block = row_block(attention, first_row);
  // A causal query i = first_row + q does not see keys j > i: their weights are set to 0, which no
  // statistic counts (0 log 0 = 0, 0 |i - j| = 0), and which the largest weight and its first key
  // never come from: attention is not negative, and key 0 <= i holds 0 too when every visible
  // weight is 0.
  const at::Tensor weights = causal ? attention.to(torch::kFloat).tril(/*diagonal=*/first_row) : attention.to(torch::kFloat);
  const at::Tensor query = torch::arange(block.first, block.end(), weights.options());
  const at::Tensor key = torch::arange(block.length, weights.options());
  const at::Tensor distances = (query.unsqueeze(1) - key.unsqueeze(0)).abs();  // [Q, T]: |i - j|
  RowSummary summary;
  summary.entropy = at::special_entr(weights).sum(-1);  // entr(x) = -x log x, entr(0) = 0
  std::tie(summary.max, summary.argmax) = weights.max(/*dim=*/-1);  // the first key of the largest weight
  summary.distance = (weights * distances).sum(-1);
  return summary;
}

RowSummary summarize_rows_in_chunks(const at::Tensor& attention, bool causal, std::int64_t chunk_elements,
                                    std::int64_t first_row) {
  const RowBlock block = row_block(attention, first_row);
  const std::int64_t maps = attention.size(0) * attention.size(1);
  const std::int64_t per_chunk =
      std::max<std::int64_t>(1, chunk_elements / std::max<std::int64_t>(1, block.rows * block.length));
  if (per_chunk >= maps) return summarize_rows_by_tensor_ops(attention, causal, first_row);
  const at::Tensor flat = attention.reshape({1, maps, block.rows, block.length});
  std::vector<at::Tensor> entropy, max, argmax, distance;
  for (std::int64_t first = 0; first < maps; first += per_chunk) {
    RowSummary part =
        summarize_rows_by_tensor_ops(flat.narrow(1, first, std::min(per_chunk, maps - first)), causal, first_row);
    entropy.push_back(std::move(part.entropy));
    max.push_back(std::move(part.max));
    argmax.push_back(std::move(part.argmax));
    distance.push_back(std::move(part.distance));
  }
  const auto shape = attention.sizes().slice(0, 3);
  return RowSummary{torch::cat(entropy, 1).view(shape), torch::cat(max, 1).view(shape),
                    torch::cat(argmax, 1).view(shape), torch::cat(distance, 1).view(shape)};
}

RowSummary summarize_rows(const at::Tensor& attention, bool causal, std::int64_t first_row) {
  if (!attention.device().is_cpu()) return summarize_rows_in_chunks(attention, causal, kSummaryChunkElements, first_row);
  const RowBlock block = row_block(attention, first_row);
  const at::Tensor weights = attention.to(torch::kFloat).contiguous();
  const std::int64_t length = weights.size(3);
  const std::int64_t rows = weights.numel() / std::max<std::int64_t>(1, length);
  const auto shape = weights.sizes().slice(0, 3);
  RowSummary summary;
  summary.entropy = torch::empty(shape, weights.options());
  summary.max = torch::empty(shape, weights.options());
  summary.argmax = torch::empty(shape, weights.options().dtype(torch::kInt64));
  summary.distance = torch::empty(shape, weights.options());
  const RowOutputs out{summary.entropy.data_ptr<float>(), summary.max.data_ptr<float>(),
                       summary.argmax.data_ptr<std::int64_t>(), summary.distance.data_ptr<float>()};
  const float* data = weights.data_ptr<float>();
  const std::int64_t grain = std::max<std::int64_t>(1, 32768 / std::max<std::int64_t>(1, length));
  at::parallel_for(0, rows, grain, [&](std::int64_t first, std::int64_t last) {
    summarize_range(data, block.rows, length, first_row, first, last, causal, out);
  });
  return summary;
}

void RowSummaryCache::settle(int layer, const at::Tensor& attention, std::int64_t first_row) {
  // A block's memory may be the previous block's, freed and handed out again: the first row tells them apart.
  if (layer == layer_ && attention.data_ptr() == data_ && first_row == first_row_) return;
  layer_ = layer;
  data_ = attention.data_ptr();
  first_row_ = first_row;
  has_summary_ = false;
  summary_ = RowSummary();
  shared_.clear();
}

const RowSummary& RowSummaryCache::get(int layer, const at::Tensor& attention, bool causal, std::int64_t first_row) {
  settle(layer, attention, first_row);
  if (!has_summary_) {
    summary_ = summarize_rows(attention, causal, first_row);
    has_summary_ = true;
  }
  return summary_;
}

const at::Tensor& RowSummaryCache::shared(int layer, const at::Tensor& attention, std::int64_t first_row,
                                          const std::string& name, const std::function<at::Tensor()>& compute) {
  settle(layer, attention, first_row);
  auto found = shared_.find(name);
  if (found == shared_.end()) found = shared_.emplace(name, compute()).first;
  return found->second;
}

const RowSummary& row_summary(int layer, const at::Tensor& attention, const BatchContext& context,
                              RowSummary& local) {
  if (context.rows != nullptr) return context.rows->get(layer, attention, context.causal, context.first_row);
  local = summarize_rows(attention, context.causal, context.first_row);
  return local;
}

}  // namespace headscan
