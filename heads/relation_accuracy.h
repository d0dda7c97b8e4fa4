#pragma once
// Per-relation accuracy of a head's most-attended word against a fixed-offset baseline (Clark et
// al. 2019, §4.2; DESIGN.md, "Syntactic heads"). Counts only, so shards merge.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace headscan {

// d2h: the dependent attends to its head; h2d: the head attends to its dependent.
enum class ArcDirection { d2h = 0, h2d = 1 };
const char* direction_name(ArcDirection direction);

struct RelationResult {
  std::string relation;
  ArcDirection direction = ArcDirection::d2h;
  double accuracy = 0;
  double baseline = 0;
  int baseline_offset = 0;
  std::int64_t support = 0;
  bool passed = false;
};

class RelationAccuracy {
 public:
  void begin(int layers, int heads);

  // One arc seen from its query word, the target visible to it. `offset`: target − query in
  // word indices. Arcs are the same for every head, so they are counted once per batch.
  void add_arc(const std::string& relation, ArcDirection direction, int offset);
  // The head predicted `arcs` of the arcs' targets right.
  void add_correct(const std::string& relation, ArcDirection direction, int layer, int head, std::int64_t arcs = 1);

  // Per relation (by name), the direction with the better accuracy among those with at least
  // `min_support` arcs (ties: d2h); relations with no such direction are left out.
  std::vector<RelationResult> results(int layer, int head, double margin, std::int64_t min_support) const;
  bool empty() const { return relations_.empty(); }

  nlohmann::json save() const;
  // Adds saved counts of the same shape (load_relations, heads/saved_statistics.h); throws
  // InputError naming the field under `path`, the JSON path of `saved` (the syntactic classifier's
  // in ClassifierSet::save() by default).
  void merge(const nlohmann::json& saved, const std::string& path = "statistics.syntactic");

 private:
  struct DirectionCounts {
    std::int64_t support = 0;
    std::map<int, std::int64_t> offsets;  // target − query → arcs
    std::vector<std::int64_t> correct;    // [layer * heads + head]
  };
  DirectionCounts& counts(const std::string& relation, ArcDirection direction);

  int layers_ = 0;
  int heads_ = 0;
  std::map<std::string, std::array<DirectionCounts, 2>> relations_;
};

// The most frequent offset and its count; ties go to the offset nearest 0, then the negative one.
std::pair<int, std::int64_t> most_frequent_offset(const std::map<int, std::int64_t>& offsets);

}  // namespace headscan
