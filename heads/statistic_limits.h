#pragma once
// What a run could have counted bounds the statistics it saved: each query count by its tokens,
// sequences or probes, each mean (sum / count) by the range of the values it averages. A shard's
// state (analyzer/run/shards/shard_state.h) is checked with check_saved_statistics before merge
// adds anything; no LibTorch, so the shard reader's fuzz target checks the same rules.
//
// Messages name the field by its JSON path ("statistics.confidence.counts[0]") and the rule.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "heads/exact_sum.h"

namespace headscan {

// The highest normalized entropy -sum_j a_j log a_j / log n of a row of n >= 2 weights: 1 where
// the weights sum to 1, but a row that sums to s < 1 (a model with attention sinks) reaches
// s - s log s / log n, at most 2 / (e ln 2) = 1.061476 (n = 2, s = 2/e). Rounded up to 1 + 63/1024,
// which float and double both hold exactly, so that a value clamped in float stays within it.
constexpr double kMaxNormalizedEntropy = 1.0 + 63.0 / 1024.0;

// The longest window the bounds take: longer ones are taken as this long, so that sum bounds fit
// in 128 bits.
constexpr std::int64_t kMaxSavedWindow = std::int64_t{1} << 31;

// A number that bounds saved statistics, and where it comes from for messages ("the shard's
// tokens (counts.tokens)").
struct Limit {
  std::int64_t value = 0;
  std::string origin;
};

// What the run that saved statistics could have counted.
struct StatisticLimits {
  int layers = 0;
  int heads = 0;
  bool causal = true;
  Limit corpus_queries;        // corpus queries: tokens
  Limit later_corpus_queries;  // corpus queries after the first token of their sequence
  Limit probe_queries;         // queries of the probe sequences
  Limit needle_queries;        // queries of the needle probes
  Limit max_length;            // tokens of the longest window (at most kMaxSavedWindow)
  Limit parsed_sentences;      // sentences with a parse: syntactic statistics need one
};

// Checks a whole ClassifierSet::save() against `limits` before anything is added: every
// classifier's statistics present and no other name; shapes the model's; counts whole numbers, the
// same on every layer (each layer sees the same queries) and within the queries the run could
// count; each mean (sum / count) within its possible range, a sum of 0 without queries; relations
// well formed, their offsets inside a window. Throws InputError naming the field and the rule.
void check_saved_statistics(const nlohmann::json& statistics, const StatisticLimits& limits);

// The names of the statistics of ClassifierSet::save(), one per classifier, in heads.json order.
const std::vector<std::string>& saved_statistic_names();

// A mean that saved statistics imply (sum / count, as a classifier's finalize() divides), with the
// largest value it can have, exactly (the classifiers take each value within its range:
// HeadMeans::add); its smallest is 0.
struct ImpliedMean {
  std::string path;  // of its sum
  ExactSum sum;
  std::int64_t count = 0;
  double high = 0;
};
// Every mean of statistics that check_saved_statistics accepts, for properties over them
// (tests/fuzz/fuzz_shard_state.cpp). Throws as check_saved_statistics does.
std::vector<ImpliedMean> implied_means(const nlohmann::json& statistics, const StatisticLimits& limits);

}  // namespace headscan
