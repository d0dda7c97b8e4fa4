#pragma once
// The classifiers' saved statistics (HeadClassifier::save, ClassifierSet::save) read back without
// LibTorch, so that one definition of each rule serves both readers: the classifiers' merge() loads
// them with the loaders here, and a shard's state (analyzer/run/shards/shard_state.h) is checked
// with them, and against what the shard could count (heads/statistic_limits.h), before merge adds
// anything.
//
// Messages name the field by its JSON path ("statistics.confidence.counts[0]") and the rule.

#include <array>
#include <cstdint>
#include <initializer_list>
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

// `saved` is an object with each of `keys` and no other; throws InputError naming `path` and the
// name it does not know.
void expect_saved_keys(const nlohmann::json& saved, std::initializer_list<const char*> keys, const std::string& path);

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

}  // namespace headscan
