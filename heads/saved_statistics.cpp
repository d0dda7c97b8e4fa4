#include "heads/saved_statistics.h"

#include <algorithm>
#include <climits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/errors.h"
#include "analyzer/json_limits.h"

namespace headscan {
namespace {

using Json = nlohmann::json;

constexpr std::size_t kMaxRelationName = 64;

[[noreturn]] void fail(const std::string& message) { throw InputError(message); }

std::string quoted_key(const std::string& key) { return quote_json(Json(key)); }

const Json& array_of(const Json& saved, const std::string& path, std::size_t size, const char* what) {
  if (!saved.is_array()) fail(fmt::format("{} is {}, not an array", path, quote_json(saved)));
  if (saved.size() != size) {
    fail(fmt::format("{} holds {} {}, but the model has {}: statistics merge only into those of the same model",
                     path, saved.size(), what, size));
  }
  return saved;
}

// The sum's value in messages: exact to about 15 digits.
std::string sum_text(const ExactSum& sum) { return fmt::format("{}", sum.value()); }

}  // namespace

void expect_saved_keys(const Json& saved, std::initializer_list<const char*> keys, const std::string& path) {
  if (!saved.is_object()) fail(fmt::format("{} is {}, not an object", path, quote_json(saved)));
  for (const char* key : keys) {
    if (!saved.contains(key)) fail(fmt::format("{} has no \"{}\"", path, key));
  }
  for (const auto& item : saved.items()) {
    if (std::none_of(keys.begin(), keys.end(), [&](const char* key) { return item.key() == key; })) {
      fail(fmt::format("{} holds {}, a name headscan {} does not know there (it knows {})", path,
                       quoted_key(item.key()), HEADSCAN_VERSION, fmt::join(keys, ", ")));
    }
  }
}

std::string saved_statistics_path(const std::string& classifier) { return "statistics." + classifier; }

const Json& saved_field(const Json& saved, const char* key, const std::string& path) {
  if (!saved.is_object()) fail(fmt::format("{} is {}, not an object", path, quote_json(saved)));
  const auto found = saved.find(key);
  if (found == saved.end()) fail(fmt::format("{} has no \"{}\"", path, key));
  return *found;
}

std::int64_t load_count(const Json& saved, const std::string& path) {
  // Read from text, a whole number from 0 up is unsigned; built in memory (save()), signed.
  const bool whole = saved.is_number_unsigned() || (saved.is_number_integer() && saved.get<std::int64_t>() >= 0);
  if (!whole || saved.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxSavedCount)) {
    fail(fmt::format("{} is {}: a count is a whole number (written without a point) from 0 to 2^42", path,
                     quote_json(saved)));
  }
  return static_cast<std::int64_t>(saved.get<std::uint64_t>());
}

SavedHeadMeans load_head_means(const Json& saved, int layers, int heads, const std::string& path) {
  expect_saved_keys(saved, {"sums", "counts"}, path);
  const Json& sums = array_of(saved.at("sums"), path + ".sums", static_cast<std::size_t>(layers), "layers");
  const Json& counts = array_of(saved.at("counts"), path + ".counts", static_cast<std::size_t>(layers), "layers");
  SavedHeadMeans loaded;
  for (std::size_t layer = 0; layer < sums.size(); ++layer) {
    const std::string layer_path = fmt::format("{}.sums[{}]", path, layer);
    const Json& row = array_of(sums[layer], layer_path, static_cast<std::size_t>(heads), "heads");
    const std::int64_t count = load_count(counts[layer], fmt::format("{}.counts[{}]", path, layer));
    std::vector<ExactSum> layer_sums;
    layer_sums.reserve(row.size());
    for (std::size_t head = 0; head < row.size(); ++head) {
      std::optional<ExactSum> sum = ExactSum::parse(row[head]);
      if (!sum) sum = ExactSum::load(row[head], fmt::format("{}[{}]", layer_path, head));  // throws
      if (count == 0 && sum->units() != 0) {
        fail(fmt::format("{}[{}] is {} but {}.counts[{}] is 0: a mean of no queries has a sum of 0", layer_path, head,
                         sum_text(*sum), path, layer));
      }
      layer_sums.push_back(*sum);
    }
    loaded.sums.push_back(std::move(layer_sums));
    loaded.counts.push_back(count);
  }
  return loaded;
}

SavedQueryMean load_query_mean(const Json& saved, const std::string& path) {
  expect_saved_keys(saved, {"sum", "count"}, path);
  SavedQueryMean loaded;
  loaded.count = load_count(saved.at("count"), path + ".count");
  loaded.sum = ExactSum::load(saved.at("sum"), path + ".sum");
  if (loaded.count == 0 && loaded.sum.units() != 0) {
    fail(fmt::format("{}.sum is {} but {}.count is 0: a mean of no queries has a sum of 0", path,
                     sum_text(loaded.sum), path));
  }
  return loaded;
}

bool is_relation_name(const std::string& name) {
  if (name.empty() || name.size() > kMaxRelationName || name == "_") return false;
  return std::none_of(name.begin(), name.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte == 0x7f || c == ':';
  });
}

namespace {

SavedDirection load_direction(const Json& saved, std::size_t heads_in_all, const std::string& path) {
  expect_saved_keys(saved, {"support", "offsets", "correct"}, path);
  SavedDirection loaded;
  loaded.support = load_count(saved.at("support"), path + ".support");
  const Json& offsets = saved.at("offsets");
  if (!offsets.is_array()) fail(fmt::format("{}.offsets is {}, not an array", path, quote_json(offsets)));
  std::int64_t arcs = 0;
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    const std::string item_path = fmt::format("{}.offsets[{}]", path, i);
    const Json& item = offsets[i];
    const bool is_pair = item.is_array() && item.size() == 2 && item[0].is_number_integer();
    const bool fits = is_pair && (item[0].is_number_unsigned() ? item[0].get<std::uint64_t>() <= INT_MAX
                                                               : item[0].get<std::int64_t>() >= INT_MIN);
    if (!fits) {
      fail(fmt::format("{} is {}: an offset is [words from query to target, arcs], two whole numbers", item_path,
                       quote_json(item)));
    }
    const int offset = item[0].get<int>();
    const std::int64_t count = load_count(item[1], item_path + "[1]");
    if (count == 0) fail(fmt::format("{}[1] is 0: an offset is saved only when an arc has it", item_path));
    if (!loaded.offsets.empty() && offset <= loaded.offsets.rbegin()->first) {
      fail(fmt::format("{}[0] is {}, not after offset {}: offsets are saved once each, in increasing order",
                       item_path, offset, loaded.offsets.rbegin()->first));
    }
    arcs += count;
    if (arcs > loaded.support) {
      fail(fmt::format("{} brings the arcs of the offsets to {}, but {}.support is {}: every arc has one offset",
                       item_path, arcs, path, loaded.support));
    }
    loaded.offsets.emplace(offset, count);
  }
  if (arcs != loaded.support) {
    fail(fmt::format("{}.offsets hold {} arcs, but {}.support is {}: every arc has one offset", path, arcs, path,
                     loaded.support));
  }
  const Json& correct = array_of(saved.at("correct"), path + ".correct", heads_in_all, "heads (layers × heads)");
  for (std::size_t i = 0; i < correct.size(); ++i) {
    const std::string correct_path = fmt::format("{}.correct[{}]", path, i);
    const std::int64_t right = load_count(correct[i], correct_path);
    if (right > loaded.support) {
      fail(fmt::format("{} is {}, more arcs than {}.support ({}): a head predicts at most every arc", correct_path,
                       right, path, loaded.support));
    }
    loaded.correct.push_back(right);
  }
  return loaded;
}

}  // namespace

SavedRelations load_relations(const Json& saved, int layers, int heads, const std::string& path) {
  expect_saved_keys(saved, {"layers", "heads", "relations"}, path);
  const std::int64_t saved_layers = load_count(saved.at("layers"), path + ".layers");
  const std::int64_t saved_heads = load_count(saved.at("heads"), path + ".heads");
  if (saved_layers != layers || saved_heads != heads) {
    fail(fmt::format("{} holds statistics of a model with {} layers and {} heads, but the model has {} and {}: "
                     "statistics merge only into those of the same model",
                     path, saved_layers, saved_heads, layers, heads));
  }
  const Json& relations = saved.at("relations");
  if (!relations.is_object()) fail(fmt::format("{}.relations is {}, not an object", path, quote_json(relations)));
  SavedRelations loaded;
  for (const auto& item : relations.items()) {
    const std::string& relation = item.key();
    if (!is_relation_name(relation)) {
      fail(fmt::format("{}.relations holds {}: not a relation's name (1 to {} bytes, no control character or ':', "
                       "not \"_\")",
                       path, quoted_key(relation), kMaxRelationName));
    }
    const std::string relation_path = path + ".relations." + relation;
    const Json& directions = item.value();
    if (!directions.is_object() || directions.empty()) {
      fail(fmt::format("{} is {}: a relation holds \"d2h\", \"h2d\" or both", relation_path, quote_json(directions)));
    }
    auto& entry = loaded[relation];
    for (const auto& direction : directions.items()) {
      std::optional<ArcDirection> found;
      for (const ArcDirection known : {ArcDirection::d2h, ArcDirection::h2d}) {
        if (direction.key() == direction_name(known)) found = known;
      }
      if (!found) {
        fail(fmt::format("{} holds {}: a relation holds \"d2h\", \"h2d\" or both", relation_path,
                         quoted_key(direction.key())));
      }
      entry[static_cast<std::size_t>(*found)] =
          load_direction(direction.value(), static_cast<std::size_t>(layers) * static_cast<std::size_t>(heads),
                         relation_path + "." + direction.key());
    }
  }
  return loaded;
}

}  // namespace headscan
