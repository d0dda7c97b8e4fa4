#include "heads/relation_accuracy.h"

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "heads/saved_statistics.h"

namespace headscan {

const char* direction_name(ArcDirection direction) { return direction == ArcDirection::d2h ? "d2h" : "h2d"; }

std::pair<int, std::int64_t> most_frequent_offset(const std::map<int, std::int64_t>& offsets) {
  std::pair<int, std::int64_t> best{0, 0};
  bool found = false;
  for (const auto& [offset, count] : offsets) {
    const bool nearer = std::abs(offset) < std::abs(best.first) ||
                        (std::abs(offset) == std::abs(best.first) && offset < best.first);
    if (!found || count > best.second || (count == best.second && nearer)) {
      best = {offset, count};
      found = true;
    }
  }
  return best;
}

void RelationAccuracy::begin(int layers, int heads) {
  layers_ = layers;
  heads_ = heads;
  relations_.clear();
}

RelationAccuracy::DirectionCounts& RelationAccuracy::counts(const std::string& relation, ArcDirection direction) {
  DirectionCounts& entry = relations_[relation][static_cast<std::size_t>(direction)];
  if (entry.correct.empty()) entry.correct.assign(static_cast<std::size_t>(layers_ * heads_), 0);
  return entry;
}

void RelationAccuracy::add_arc(const std::string& relation, ArcDirection direction, int offset) {
  DirectionCounts& entry = counts(relation, direction);
  ++entry.support;
  ++entry.offsets[offset];
}

void RelationAccuracy::add_correct(const std::string& relation, ArcDirection direction, int layer, int head,
                                   std::int64_t arcs) {
  counts(relation, direction).correct.at(static_cast<std::size_t>(layer * heads_ + head)) += arcs;
}

std::vector<RelationResult> RelationAccuracy::results(int layer, int head, double margin,
                                                      std::int64_t min_support) const {
  std::vector<RelationResult> results;
  for (const auto& [relation, directions] : relations_) {
    std::optional<RelationResult> best;
    for (const ArcDirection direction : {ArcDirection::d2h, ArcDirection::h2d}) {
      const DirectionCounts& entry = directions[static_cast<std::size_t>(direction)];
      if (entry.support == 0 || entry.support < min_support) continue;
      const auto support = static_cast<double>(entry.support);
      const auto [offset, at_offset] = most_frequent_offset(entry.offsets);
      RelationResult result;
      result.relation = relation;
      result.direction = direction;
      result.accuracy = static_cast<double>(entry.correct.at(static_cast<std::size_t>(layer * heads_ + head))) / support;
      result.baseline = static_cast<double>(at_offset) / support;
      result.baseline_offset = offset;
      result.support = entry.support;
      result.passed = result.accuracy >= result.baseline + margin;
      if (!best || result.accuracy > best->accuracy) best = result;
    }
    if (best) results.push_back(*best);
  }
  return results;
}

nlohmann::json RelationAccuracy::save() const {
  nlohmann::json saved = {{"layers", layers_}, {"heads", heads_}, {"relations", nlohmann::json::object()}};
  for (const auto& [relation, directions] : relations_) {
    for (const ArcDirection direction : {ArcDirection::d2h, ArcDirection::h2d}) {
      const DirectionCounts& entry = directions[static_cast<std::size_t>(direction)];
      if (entry.support == 0 && entry.correct.empty()) continue;
      nlohmann::json offsets = nlohmann::json::array();
      for (const auto& [offset, count] : entry.offsets) offsets.push_back({offset, count});
      saved["relations"][relation][direction_name(direction)] = {
          {"support", entry.support}, {"offsets", offsets}, {"correct", entry.correct}};
    }
  }
  return saved;
}

void RelationAccuracy::merge(const nlohmann::json& saved, const std::string& path) {
  for (const auto& [relation, directions] : load_relations(saved, layers_, heads_, path)) {
    for (const ArcDirection direction : {ArcDirection::d2h, ArcDirection::h2d}) {
      const std::optional<SavedDirection>& source = directions[static_cast<std::size_t>(direction)];
      if (!source) continue;
      DirectionCounts& entry = counts(relation, direction);
      entry.support += source->support;
      for (const auto& [offset, count] : source->offsets) entry.offsets[offset] += count;
      for (std::size_t i = 0; i < source->correct.size(); ++i) entry.correct[i] += source->correct[i];
    }
  }
}

}  // namespace headscan
