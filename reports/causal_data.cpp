#include "reports/causal_data.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace headscan {

namespace {

using Json = nlohmann::ordered_json;

std::optional<double> finite_number(const Json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  const auto found = object.find(key);
  if (found == object.end() || !found->is_number()) return std::nullopt;
  const double value = found->get<double>();
  return std::isfinite(value) ? std::optional<double>(value) : std::nullopt;
}

std::optional<int> whole_number(const Json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  const auto found = object.find(key);
  if (found == object.end() || !found->is_number_integer()) return std::nullopt;
  return found->get<int>();
}

PruningPoint read_point(const Json& entry) {
  PruningPoint point;
  point.fraction = finite_number(entry, "fraction").value_or(0);
  point.removed = whole_number(entry, "removed");
  point.importance_order = finite_number(entry, "importance_order");
  point.random_order = finite_number(entry, "random_order");
  if (entry.contains("random_orders") && entry["random_orders"].is_array()) {
    for (const auto& loss : entry["random_orders"]) {
      if (loss.is_number() && std::isfinite(loss.get<double>())) point.random_orders.push_back(loss.get<double>());
    }
  }
  return point;
}

}  // namespace

std::string HeadLink::id() const { return fmt::format("L{}H{}", layer, head); }

std::optional<std::pair<double, double>> AblationSummary::loss_range() const {
  std::optional<std::pair<double, double>> range;
  const auto include = [&](double value) {
    range = range ? std::make_pair(std::min(range->first, value), std::max(range->second, value)) : std::make_pair(value, value);
  };
  for (const auto& point : pruning) {
    if (point.importance_order) include(*point.importance_order);
    if (point.random_order) include(*point.random_order);
    for (const double value : point.random_orders) include(value);
  }
  return range;
}

std::optional<AblationSummary> read_ablation(const Json& document) {
  if (!document.is_object() || !document.contains("ablation") || !document["ablation"].is_object()) return std::nullopt;
  const Json& ablation = document["ablation"];
  AblationSummary summary;
  summary.json = &ablation;
  if (ablation.contains("objective") && ablation["objective"].is_string()) summary.objective = ablation["objective"].get<std::string>();
  summary.loss = finite_number(ablation, "loss");
  summary.sequences = whole_number(ablation, "sequences");
  const Json pruning = ablation.value("pruning", Json::object());
  if (pruning.is_object() && pruning.contains("points") && pruning["points"].is_array()) {
    for (const auto& entry : pruning["points"]) {
      if (entry.is_object()) summary.pruning.push_back(read_point(entry));
    }
  }
  std::stable_sort(summary.pruning.begin(), summary.pruning.end(),
                   [](const PruningPoint& a, const PruningPoint& b) { return a.fraction < b.fraction; });
  for (const auto& point : summary.pruning) summary.random_orders = std::max(summary.random_orders, point.random_orders.size());
  return summary;
}

std::optional<Circuit> read_circuit(const Json& entry, int layers, int heads) {
  if (!entry.is_object() || !entry.contains("circuit") || !entry["circuit"].is_object()) return std::nullopt;
  const Json& object = entry["circuit"];
  Circuit circuit;
  if (object.contains("score") && object["score"].is_string()) circuit.score = object["score"].get<std::string>();
  circuit.baseline = finite_number(object, "baseline");
  if (object.contains("depends_on") && object["depends_on"].is_array()) {
    for (const auto& link : object["depends_on"]) {
      const auto layer = whole_number(link, "layer");
      const auto head = whole_number(link, "head");
      const auto drop = finite_number(link, "drop");
      if (!layer || !head || !drop || *layer < 0 || *layer >= layers || *head < 0 || *head >= heads) continue;
      circuit.depends_on.push_back({*layer, *head, *drop});
    }
  }
  std::stable_sort(circuit.depends_on.begin(), circuit.depends_on.end(),
                   [](const HeadLink& a, const HeadLink& b) { return a.drop > b.drop; });
  return circuit;
}

}  // namespace headscan
