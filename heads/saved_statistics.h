#pragma once
// The classifiers' saved statistics (HeadClassifier::save, ClassifierSet::save), read and checked
// without LibTorch, so that one definition of each rule serves both readers: the classifiers'
// merge() loads them with the loaders here, and a shard's state (analyzer/run/shard_state.h) is
// checked as a whole with check_saved_statistics before merge adds anything.
//
// Messages name the field by its JSON path ("statistics.confidence.counts[0]") and the rule.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "heads/exact_sum.h"
#include "heads/relation_accuracy.h"

namespace headscan {

// The largest count saved statistics hold, so that a million shards add up without overflow.
constexpr std::int64_t kMaxSavedCount = std::int64_t{1} << 42;

// The JSON path of a classifier's statistics in ClassifierSet::save(), for messages.
std::string saved_statistics_path(const std::string& classifier);

// `saved[key]`; throws InputError naming `path` when `saved` is not an object that has it.
const nlohmann::json& saved_field(const nlohmann::json& saved, const char* key, const std::string& path);

// A saved count: a JSON whole number (1.5 and 2.0 are not) from 0 to kMaxSavedCount.
std::int64_t load_count(const nlohmann::json& saved, const std::string& path);

// HeadMeans::save(): {"sums": [layer][head] sums (ExactSum), "counts": [layer] queries}. A layer
// that counted no query has sums of 0.
struct SavedHeadMeans {
  std::vector<std::vector<ExactSum>> sums;  // [layer][head]
  std::vector<std::int64_t> counts;         // [layer]
};
SavedHeadMeans load_head_means(const nlohmann::json& saved, int layers, int heads, const std::string& path);

// QueryMean::save(): {"sum": ExactSum, "count": queries}. No query, no sum.
struct SavedQueryMean {
  ExactSum sum;
  std::int64_t count = 0;
};
SavedQueryMean load_query_mean(const nlohmann::json& saved, const std::string& path);

// RelationAccuracy::save(): {"layers", "heads", "relations": {relation: {"d2h" and/or "h2d":
// {"support", "offsets": [[offset, arcs], ...], "correct": [layer * heads + head]}}}}. Offsets are
// distinct, in increasing order, each of at least one arc; their arcs add up to the support; no
// head predicts more arcs than there are.
struct SavedDirection {
  std::int64_t support = 0;
  std::map<int, std::int64_t> offsets;  // target − query → arcs
  std::vector<std::int64_t> correct;    // [layer * heads + head]
};
using SavedRelations = std::map<std::string, std::array<std::optional<SavedDirection>, 2>>;  // by ArcDirection
SavedRelations load_relations(const nlohmann::json& saved, int layers, int heads, const std::string& path);

// A relation's name as the corpus readers give it (CoNLL-U's DEPREL without its subtype, or the
// link-grammar parser's): 1 to 64 bytes, no control characters, no ':', not "_".
bool is_relation_name(const std::string& name);

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
  Limit max_length;            // tokens of the longest window
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

// A mean's largest value is exact for sums of exact shares; float attention (bf16 rounds each
// weight to 2^-9) reaches it only within its rounding, so a mean may exceed it by this fraction.
constexpr double kMeanRoundingAllowance = 1.0 / 64;

// A mean that saved statistics imply (sum / count, as a classifier's finalize() divides), with the
// largest value it can have; its smallest is 0.
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
