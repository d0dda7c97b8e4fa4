#pragma once
// Per-head running means of a per-query quantity, the statistic behind most head scores: sums per
// (layer, head) and query counts per layer. Sums and counts, so they merge across shards.
// QueryMean is the same for a quantity that does not depend on the head.
//
// Each batch's sum (in double) is added to an ExactSum (heads/exact_sum.h), so shards merge to the
// single run's sums bit for bit. Saved statistics are read by heads/saved_statistics.h. The sums
// are reduced on the values' device and reach the host through a DeviceSums (heads/device_sums.h)
// with the rest of the batch's, or at once without one.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "heads/classifier.h"
#include "heads/device_sums.h"
#include "heads/exact_sum.h"

namespace headscan {

class HeadMeans {
 public:
  void resize(const ModelShape& shape);

  // values: [B, H, N] per-query values; counted: [B, N] bool, the queries that count, on the same
  // device. The batch's sums reach this object when `sums` is flushed (at once when null).
  // Each value is taken within [0, high], the range of what it measures (1 for shares of attention
  // or of queries): float weights that round to a sum a little over 1 count as 1, so that no mean
  // leaves its range and a shard whose means do is refused (heads/statistic_limits.h).
  void add(int layer, const at::Tensor& values, const at::Tensor& counted, DeviceSums* sums = nullptr,
           double high = 1.0);

  // The mean for one head; NaN when no query counted.
  double mean(int layer, int head) const;
  std::int64_t count(int layer) const { return counts_.at(layer); }

  nlohmann::json save() const;
  // Adds saved statistics of the same shape (load_head_means); throws InputError naming the field
  // under `path`, the JSON path of `saved`, when they are not.
  void merge(const nlohmann::json& saved, const std::string& path);

 private:
  ModelShape shape_;
  std::vector<std::vector<ExactSum>> sums_;  // [layer][head]
  std::vector<std::int64_t> counts_;       // [layer]
};

// A running mean of a per-query quantity that is the same for every layer and head (a chance
// level, say): one sum and one query count, added once per batch.
class QueryMean {
 public:
  // values: [B, N] per-query values, shares taken within [0, 1] as HeadMeans::add takes them;
  // counted: [B, N] bool, the queries that count.
  void add(const at::Tensor& values, const at::Tensor& counted, DeviceSums* sums = nullptr);
  // NaN when no query counted.
  double mean() const;

  nlohmann::json save() const;
  // Adds a saved mean (load_query_mean); throws InputError naming the field under `path`.
  void merge(const nlohmann::json& saved, const std::string& path);

 private:
  ExactSum sum_;
  std::int64_t count_ = 0;
};

// Writes a score: a finite mean as a number rounded to 6 decimals, NaN (no query counted) as null.
void put_score(nlohmann::ordered_json& scores, const char* name, double value);

}  // namespace headscan
