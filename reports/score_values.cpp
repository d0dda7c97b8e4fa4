#include "reports/score_values.h"

#include <cmath>

#include <nlohmann/json.hpp>

namespace headscan {

using Json = nlohmann::ordered_json;

std::optional<double> number_at(const Json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  const auto found = object.find(key);
  if (found == object.end() || !found->is_number()) return std::nullopt;
  return found->get<double>();
}

bool is_relation_table(const Json& value) {
  if (!value.is_object() || value.empty()) return false;
  for (const auto& [relation, entry] : value.items()) {
    if (!entry.is_object() || !entry.contains("accuracy")) return false;
  }
  return true;
}

const Json* best_relation(const Json& table, std::string* name) {
  if (!table.is_object()) return nullptr;
  const Json* best = nullptr;
  bool best_passed = false;
  double best_margin = 0;
  for (const auto& [relation, entry] : table.items()) {
    const auto accuracy = number_at(entry, "accuracy");
    if (!accuracy) continue;
    const double margin = *accuracy - number_at(entry, "baseline").value_or(0);
    const auto passed_member = entry.find("passed");
    const bool passed = passed_member != entry.end() && passed_member->is_boolean() && passed_member->get<bool>();
    if (best == nullptr || passed > best_passed || (passed == best_passed && margin > best_margin)) {
      best = &entry;
      best_passed = passed;
      best_margin = margin;
      if (name) *name = relation;
    }
  }
  return best;
}

std::optional<double> scalar_score(const Json& value) {
  std::optional<double> number;
  if (value.is_number()) {
    number = value.get<double>();
  } else if (value.is_object() && value.contains("weight")) {
    number = number_at(value, "weight");
  } else if (is_relation_table(value)) {
    if (const Json* best = best_relation(value, nullptr)) {
      number = number_at(*best, "accuracy").value_or(0) - number_at(*best, "baseline").value_or(0);
    }
  }
  if (number && !std::isfinite(*number)) return std::nullopt;
  return number;
}

}  // namespace headscan
