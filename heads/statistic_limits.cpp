#include "heads/statistic_limits.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/errors.h"
#include "analyzer/json_limits.h"
#include "heads/saved_statistics.h"

namespace headscan {
namespace {

using Json = nlohmann::json;

// How a classifier saves its statistics (its save()).
enum class Layout {
  means,       // HeadMeans
  positional,  // per offset d ("-1", "1", "-2", "2"): {"weight": HeadMeans, "argmax": HeadMeans}
  baselined,   // {"means": HeadMeans, "baseline": QueryMean}: rare_word, separator, punctuation
  relations,   // RelationAccuracy
};
// The queries a statistic counts.
enum class Queries {
  corpus,        // the corpus's queries: at most its tokens
  later_corpus,  // the corpus's queries i ≥ 1 (with a key at i - 1, i + 1, ...): not a sequence's first token
  probe,         // the probe sequences' queries
  needle,        // the needle probes' queries
};
// The values a statistic averages.
enum class Values {
  share,     // from 0 to 1: attention weights and their sums over keys, shares of queries and keys
  entropy,   // from 0 to kMaxNormalizedEntropy: entropies normalized by the log of the keys' number
  distance,  // from 0 to max_length - 1: distances between a query and its keys, in tokens
};

struct StatisticSchema {
  const char* name;
  Layout layout;
  Queries queries;
  Values values;
};

// Every classifier's statistics, in heads.json order (heads/registry.cpp), with what its
// definition (heads/<name>.cpp) counts and averages. tests/test_merge_validation.cpp checks
// that this is what the classifiers save.
constexpr StatisticSchema kStatistics[] = {
    {"previous_token", Layout::means, Queries::later_corpus, Values::share},
    {"positional", Layout::positional, Queries::later_corpus, Values::share},
    {"first_token", Layout::means, Queries::later_corpus, Values::share},
    {"entropy", Layout::means, Queries::corpus, Values::entropy},
    {"confidence", Layout::means, Queries::corpus, Values::share},
    {"mean_distance", Layout::means, Queries::corpus, Values::distance},
    {"self", Layout::means, Queries::corpus, Values::share},
    {"induction", Layout::means, Queries::probe, Values::share},
    {"duplicate_token", Layout::means, Queries::probe, Values::share},
    {"induction_text", Layout::means, Queries::corpus, Values::share},
    {"rare_word", Layout::baselined, Queries::corpus, Values::share},
    {"syntactic", Layout::relations, Queries::corpus, Values::share},
    {"separator", Layout::baselined, Queries::later_corpus, Values::share},
    {"punctuation", Layout::baselined, Queries::later_corpus, Values::share},
    {"streaming", Layout::means, Queries::later_corpus, Values::share},
    {"streaming_duo", Layout::means, Queries::later_corpus, Values::share},
    {"retrieval", Layout::means, Queries::needle, Values::share},
};
constexpr const char* kPositionalOffsets[] = {"-1", "1", "-2", "2"};  // heads/positional.cpp

[[noreturn]] void fail(const std::string& message) { throw InputError(message); }

std::string quoted_key(const std::string& key) { return quote_json(Json(key)); }

// The sum's value in messages: exact to about 15 digits.
std::string sum_text(const ExactSum& sum) { return fmt::format("{}", sum.value()); }

std::string list_names() {
  std::vector<const char*> names;
  for (const StatisticSchema& statistic : kStatistics) names.push_back(statistic.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

// A loaded HeadMeans or QueryMean with what bounds it.
struct MeanGroup {
  std::string path;
  const StatisticSchema* statistic = nullptr;
  std::optional<SavedHeadMeans> head_means;
  std::optional<SavedQueryMean> query_mean;

  // Every layer's count is the same: read the first.
  std::int64_t count() const {
    if (query_mean) return query_mean->count;
    return head_means->counts.empty() ? 0 : head_means->counts.front();
  }
  std::string count_path() const { return query_mean ? path + ".count" : path + ".counts[0]"; }
};

const Limit& query_limit(Queries queries, const StatisticLimits& limits) {
  switch (queries) {
    case Queries::corpus: return limits.corpus_queries;
    case Queries::later_corpus: return limits.later_corpus_queries;
    case Queries::probe: return limits.probe_queries;
    case Queries::needle: return limits.needle_queries;
  }
  return limits.corpus_queries;
}

double highest_value(Values values, const StatisticLimits& limits) {
  const std::int64_t max_length = std::clamp<std::int64_t>(limits.max_length.value, 1, kMaxSavedWindow);
  switch (values) {
    case Values::share: return 1.0;
    case Values::entropy: return kMaxNormalizedEntropy;
    case Values::distance: break;
  }
  return static_cast<double>(max_length - 1);
}

std::string highest_text(const StatisticSchema& statistic, const StatisticLimits& limits) {
  if (statistic.values == Values::share) {
    return fmt::format("1 ({} averages attention weights or shares, from 0 to 1)", statistic.name);
  }
  if (statistic.values == Values::entropy) {
    return fmt::format("{} ({} averages normalized entropies, at most 2 / (e ln 2) where rows sum to less "
                       "than 1)", kMaxNormalizedEntropy, statistic.name);
  }
  return fmt::format("{} ({} - 1: {} averages distances in tokens within a window)",
                     highest_value(statistic.values, limits), limits.max_length.origin, statistic.name);
}

// Two counts of the same queries are equal.
void expect_same_queries(const MeanGroup& group, const MeanGroup& other, const char* why) {
  if (group.count() != other.count()) {
    fail(fmt::format("{} is {} but {} is {}: {}", group.count_path(), group.count(), other.count_path(),
                     other.count(), why));
  }
}

// The sums of `group` and its count's bound. A sum lies in [0, count · high], exactly: every value
// was taken within [0, high] (HeadMeans::add), and neither summing them in double nor rounding a
// batch's sum to 2^-40 takes a sum past a bound that is a whole number (rounding to nearest is
// monotone, and whole numbers are exact). No allowance: a merged mean never passes its range.
void check_means(const MeanGroup& group, const StatisticLimits& limits) {
  const StatisticSchema& statistic = *group.statistic;
  if (group.head_means) {
    const auto& counts = group.head_means->counts;
    for (std::size_t layer = 1; layer < counts.size(); ++layer) {
      if (counts[layer] != counts[0]) {
        fail(fmt::format("{}.counts[{}] is {} but {}.counts[0] is {}: every layer sees the same queries", group.path,
                         layer, counts[layer], group.path, counts[0]));
      }
    }
  }
  const Limit& limit = query_limit(statistic.queries, limits);
  const std::int64_t count = group.count();
  if (count > limit.value) {
    fail(fmt::format("{} is {}, more queries than {} can count in this run: at most {}, {}", group.count_path(), count,
                     statistic.name, limit.value, limit.origin));
  }
  const double high = highest_value(statistic.values, limits);
  const auto unit_bound = static_cast<ExactSum::Units>(std::ldexp(high, ExactSum::kFractionBits));
  const ExactSum::Units bound = static_cast<ExactSum::Units>(count) * unit_bound;
  auto check = [&](const ExactSum& sum, const std::string& sum_path, const std::string& count_path) {
    if (sum.units() < 0) {
      fail(fmt::format("{} is {}, below 0: {} averages values of 0 or more", sum_path, sum_text(sum), statistic.name));
    }
    if (sum.units() > bound) {
      fail(fmt::format("{} is {} over {} queries ({}): a mean of {}, above {}", sum_path, sum_text(sum), count,
                       count_path, sum.value() / static_cast<double>(count), highest_text(statistic, limits)));
    }
  };
  if (group.query_mean) {
    check(group.query_mean->sum, group.path + ".sum", group.path + ".count");
    return;
  }
  const auto& sums = group.head_means->sums;
  for (std::size_t layer = 0; layer < sums.size(); ++layer) {
    for (std::size_t head = 0; head < sums[layer].size(); ++head) {
      const ExactSum& sum = sums[layer][head];
      if (sum.units() >= 0 && sum.units() <= bound) continue;
      check(sum, fmt::format("{}.sums[{}][{}]", group.path, layer, head), fmt::format("{}.counts[{}]", group.path, layer));
    }
  }
}

// Arcs of the relations: an arc's query is a word, a word has tokens; offsets lie inside a window,
// and a causal model's query sees only the words before it.
void check_relations(const SavedRelations& relations, const StatisticLimits& limits, const std::string& path) {
  if (!relations.empty() && limits.parsed_sentences.value == 0) {
    fail(fmt::format("{}.relations holds {}, but no sentence had a parse ({} is 0): syntactic statistics come from "
                     "parsed sentences",
                     path, quoted_key(relations.begin()->first), limits.parsed_sentences.origin));
  }
  std::array<std::int64_t, 2> arcs{0, 0};
  for (const auto& [relation, directions] : relations) {
    for (std::size_t direction = 0; direction < directions.size(); ++direction) {
      if (!directions[direction]) continue;
      const char* name = direction_name(static_cast<ArcDirection>(direction));
      const std::string direction_path = fmt::format("{}.relations.{}.{}", path, relation, name);
      arcs[direction] += directions[direction]->support;
      if (arcs[direction] > limits.corpus_queries.value) {
        fail(fmt::format("{}.support brings the {} arcs to {}, more than {}, {}: an arc's query is a word, and a "
                         "word has tokens",
                         direction_path, name, arcs[direction], limits.corpus_queries.value,
                         limits.corpus_queries.origin));
      }
      for (const auto& [offset, count] : directions[direction]->offsets) {
        const std::int64_t distance = offset < 0 ? -static_cast<std::int64_t>(offset) : offset;
        if (offset == 0 || distance >= limits.max_length.value) {
          fail(fmt::format("{}.offsets holds offset {}: an arc joins two words of one window, from 1 to {} - 1 words "
                           "apart ({} is {})",
                           direction_path, offset, limits.max_length.origin, limits.max_length.origin,
                           limits.max_length.value));
        }
        if (limits.causal && offset > 0) {
          fail(fmt::format("{}.offsets holds offset {}: a causal model's query sees only earlier words (offsets "
                           "below 0)",
                           direction_path, offset));
        }
      }
    }
  }
}

// Loads every statistic (structure, names, shapes, whole counts) and checks its counts, means and
// relations against `limits`; returns the means.
std::vector<MeanGroup> load_statistics(const Json& statistics, const StatisticLimits& limits) {
  const std::string root = "statistics";
  if (!statistics.is_object()) fail(fmt::format("{} is {}, not an object", root, quote_json(statistics)));
  for (const auto& item : statistics.items()) {
    const bool known = std::any_of(std::begin(kStatistics), std::end(kStatistics),
                                   [&](const StatisticSchema& statistic) { return item.key() == statistic.name; });
    if (!known) {
      fail(fmt::format("{} holds {}: no classifier of headscan {} saves statistics by that name (it knows {})", root,
                       quoted_key(item.key()), HEADSCAN_VERSION, list_names()));
    }
  }
  std::vector<MeanGroup> groups;
  // Groups that count the same queries: (index, index, why).
  std::vector<std::tuple<std::size_t, std::size_t, const char*>> same_queries;
  auto head_means = [&](const Json& saved, const std::string& path, const StatisticSchema& statistic) {
    groups.push_back({path, &statistic, load_head_means(saved, limits.layers, limits.heads, path), std::nullopt});
    return groups.size() - 1;
  };
  for (const StatisticSchema& statistic : kStatistics) {
    const std::string path = saved_statistics_path(statistic.name);
    if (!statistics.contains(statistic.name)) {
      fail(fmt::format("{} has no \"{}\": every classifier's statistics are saved", root, statistic.name));
    }
    const Json& saved = statistics.at(statistic.name);
    switch (statistic.layout) {
      case Layout::means:
        head_means(saved, path, statistic);
        break;
      case Layout::positional:
        expect_saved_keys(saved, {kPositionalOffsets[0], kPositionalOffsets[1], kPositionalOffsets[2], kPositionalOffsets[3]},
                    path);
        for (const char* offset : kPositionalOffsets) {
          const std::string offset_path = path + "." + offset;
          expect_saved_keys(saved.at(offset), {"weight", "argmax"}, offset_path);
          const std::size_t weight = head_means(saved.at(offset).at("weight"), offset_path + ".weight", statistic);
          const std::size_t argmax = head_means(saved.at(offset).at("argmax"), offset_path + ".argmax", statistic);
          same_queries.emplace_back(argmax, weight, "both count the queries with a key at that offset");
        }
        break;
      case Layout::baselined: {
        expect_saved_keys(saved, {"means", "baseline"}, path);
        const std::size_t means = head_means(saved.at("means"), path + ".means", statistic);
        groups.push_back({path + ".baseline", &statistic, std::nullopt,
                          load_query_mean(saved.at("baseline"), path + ".baseline")});
        same_queries.emplace_back(groups.size() - 1, means, "the chance level is counted over the same queries");
        break;
      }
      case Layout::relations:
        check_relations(load_relations(saved, limits.layers, limits.heads, path), limits, path);
        break;
    }
  }
  for (const MeanGroup& group : groups) check_means(group, limits);
  for (const auto& [group, other, why] : same_queries) expect_same_queries(groups[group], groups[other], why);
  return groups;
}

}  // namespace

void check_saved_statistics(const Json& statistics, const StatisticLimits& limits) {
  load_statistics(statistics, limits);
}

const std::vector<std::string>& saved_statistic_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> listed;
    for (const StatisticSchema& statistic : kStatistics) listed.emplace_back(statistic.name);
    return listed;
  }();
  return names;
}

std::vector<ImpliedMean> implied_means(const Json& statistics, const StatisticLimits& limits) {
  std::vector<ImpliedMean> means;
  for (const MeanGroup& group : load_statistics(statistics, limits)) {
    const double high = highest_value(group.statistic->values, limits);
    if (group.query_mean) {
      means.push_back({group.path + ".sum", group.query_mean->sum, group.query_mean->count, high});
      continue;
    }
    const auto& loaded = *group.head_means;
    for (std::size_t layer = 0; layer < loaded.sums.size(); ++layer) {
      for (std::size_t head = 0; head < loaded.sums[layer].size(); ++head) {
        means.push_back({fmt::format("{}.sums[{}][{}]", group.path, layer, head), loaded.sums[layer][head],
                         loaded.counts[layer], high});
      }
    }
  }
  return means;
}

}  // namespace headscan
