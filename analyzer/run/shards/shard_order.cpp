// The shards given to `headscan merge` checked to make one run and put in order (order_shards,
// shard_state.h): one count, every index once, equal "agree" sections and shapes.
#include "analyzer/run/shards/shard_state.h"

#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analyzer/errors.h"
#include "analyzer/run/shards/shard_state_fields.h"

namespace headscan {
namespace {

using shard_fields::Json;
using shard_fields::quoted;

// The first key where two "agree" sections differ, with both values, quoted.
std::string first_difference(const Json& a, const Json& b) {
  for (const auto& [key, value] : a.items()) {
    if (!b.contains(key)) return fmt::format("{}: {} against nothing", key, quoted(value));
    if (b.at(key) != value) return fmt::format("{}: {} against {}", key, quoted(value), quoted(b.at(key)));
  }
  for (const auto& [key, value] : b.items()) {
    if (!a.contains(key)) return fmt::format("{}: nothing against {}", key, quoted(value));
  }
  return {};
}

}  // namespace

std::vector<ShardState> order_shards(std::vector<ShardState> shards) {
  if (shards.empty()) throw InputError("no shard directories given: headscan merge DIR... -o OUT");
  const std::uint64_t count = shards.front().count;
  std::map<std::uint64_t, std::size_t> by_index;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const ShardState& shard = shards[i];
    if (shard.count != count) {
      throw InputError(fmt::format("{} is shard {}/{} but {} is shard {}/{}: every shard of one run has the same count",
                                   shard.directory, shard.index, shard.count, shards.front().directory,
                                   shards.front().index, count));
    }
    const auto [found, added] = by_index.emplace(shard.index, i);
    if (!added) {
      throw InputError(fmt::format("shard {}/{} is given twice: {} and {}; give each shard's directory once",
                                   shard.index, count, shards[found->second].directory, shard.directory));
    }
  }
  std::vector<std::uint64_t> missing;
  for (std::uint64_t index = 0; index < count && missing.size() < 10; ++index) {
    if (!by_index.count(index)) missing.push_back(index);
  }
  if (!missing.empty()) {
    throw InputError(fmt::format("shard(s) {} of {} are missing: a merge needs all {} shards of the run (given: {})",
                                 fmt::join(missing, ", "), count, count, shards.size()));
  }
  std::vector<ShardState> ordered;
  for (const auto& [index, position] : by_index) ordered.push_back(std::move(shards[position]));
  for (const ShardState& shard : ordered) {
    std::string difference = first_difference(ordered.front().agree, shard.agree);
    const ShardState& first = ordered.front();
    if (difference.empty() && (shard.layers != first.layers || shard.heads != first.heads || shard.causal != first.causal)) {
      difference = fmt::format("shape: {} layers x {} heads against {} x {}", shard.layers, shard.heads, first.layers,
                               first.heads);
    }
    if (!difference.empty()) {
      throw InputError(fmt::format("{} (shard {}) and {} (shard 0) come from different runs: {}; merge the shards of "
                                   "one run, with the same model, tokenizer, corpus and options",
                                   shard.directory, shard.index, ordered.front().directory, difference));
    }
  }
  return ordered;
}

}  // namespace headscan
