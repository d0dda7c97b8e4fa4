#pragma once
// Per-head running means of a per-query quantity, the statistic behind most head scores: sums per
// (layer, head) and query counts per layer. Sums and counts, so they merge across shards.
// QueryMean is the same for a quantity that does not depend on the head.
//
// Each batch's sum (in double) is added to an ExactSum: fixed point with 40 fractional bits in
// 128 bits, whose additions are exact. So the total does not depend on the order in which batches
// or merged shards are added, and shards merge to the single run's sums bit for bit.

#include <cstdint>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "heads/classifier.h"

namespace headscan {

class ExactSum {
 public:
  void add(double value);
  // Added as unsigned: wraps instead of overflowing on sums no real run reaches (damaged input).
  void add(const ExactSum& other) {
    units_ = static_cast<Units>(static_cast<Unsigned>(units_) + static_cast<Unsigned>(other.units_));
  }
  double value() const;
  // Saved as two integers, the high and low 64 bits.
  nlohmann::json save() const;
  static ExactSum load(const nlohmann::json& saved);

 private:
  __extension__ using Units = __int128;
  __extension__ using Unsigned = unsigned __int128;
  Units units_ = 0;  // the sum in units of 2^-40
};

class HeadMeans {
 public:
  void resize(const ModelShape& shape);

  // values: [B, H, N] per-query values; counted: [B, N] bool, the queries that count.
  void add(int layer, const at::Tensor& values, const at::Tensor& counted);

  // The mean for one head; NaN when no query counted.
  double mean(int layer, int head) const;
  std::int64_t count(int layer) const { return counts_.at(layer); }

  nlohmann::json save() const;
  // Adds saved statistics of the same shape; throws InputError on a shape mismatch.
  void merge(const nlohmann::json& saved);

 private:
  ModelShape shape_;
  std::vector<std::vector<ExactSum>> sums_;  // [layer][head]
  std::vector<std::int64_t> counts_;       // [layer]
};

// A running mean of a per-query quantity that is the same for every layer and head (a chance
// level, say): one sum and one query count, added once per batch.
class QueryMean {
 public:
  // values: [B, N] per-query values; counted: [B, N] bool, the queries that count.
  void add(const at::Tensor& values, const at::Tensor& counted);
  // NaN when no query counted.
  double mean() const;

  nlohmann::json save() const;
  void merge(const nlohmann::json& saved);

 private:
  ExactSum sum_;
  std::int64_t count_ = 0;
};

// Writes a score: a finite mean as a number rounded to 6 decimals, NaN (no query counted) as null.
void put_score(nlohmann::ordered_json& scores, const char* name, double value);

}  // namespace headscan
