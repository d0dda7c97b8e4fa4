// The causal passes' findings in heads.json: the "ablation" section and, per head, the scores
// importance, importance_layer_normalized, ablation_loss, ablation_repeat_loss and the "circuit".
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/run/kv_plan.h"
#include "analyzer/run/passes/ablation.h"
#include "analyzer/run/run_state.h"

namespace headscan {
namespace {

nlohmann::ordered_json pruning_json(const std::vector<PruningStep>& points) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const PruningStep& point : points) {
    double random_mean = 0;
    for (double loss : point.random_orders) random_mean += loss;
    if (!point.random_orders.empty()) random_mean /= static_cast<double>(point.random_orders.size());
    list.push_back({{"fraction", point.fraction},
                    {"removed", point.removed},
                    {"importance_order", point.importance_order},
                    {"random_order", random_mean},
                    {"random_orders", point.random_orders}});
  }
  return {{"step", 1.0 / kPruningSteps}, {"random_orders", kRandomPruningOrders}, {"points", std::move(list)}};
}

// Per needle probe length: the full model's copy events, the share the restricted model still makes
// and its mean loss change on the copied tokens; both null at a length without events.
nlohmann::ordered_json kv_plan_needles_json(const std::vector<KvPlanNeedles>& checked) {
  nlohmann::ordered_json lengths = nlohmann::ordered_json::array();
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  nlohmann::ordered_json accuracy = nlohmann::ordered_json::array();
  nlohmann::ordered_json loss = nlohmann::ordered_json::array();
  for (const KvPlanNeedles& length : checked) {
    lengths.push_back(length.length);
    events.push_back(length.copy_events);
    const auto count = static_cast<double>(length.copy_events);
    accuracy.push_back(length.copy_events > 0 ? nlohmann::ordered_json(static_cast<double>(length.kept) / count)
                                              : nlohmann::ordered_json());
    loss.push_back(length.copy_events > 0 ? nlohmann::ordered_json(length.loss_delta_sum / count)
                                          : nlohmann::ordered_json());
  }
  return {{"lengths", std::move(lengths)},
          {"copy_events", std::move(events)},
          {"copy_accuracy", std::move(accuracy)},
          {"loss_delta", std::move(loss)}};
}

}  // namespace

void add_ablation_json(nlohmann::ordered_json& document, const RunState& state) {
  const AblationFindings& found = state.ablation;
  const AblationObjective& objective = *state.objective;
  std::int64_t predictions = 0;
  for (const AblationItem& item : state.ablation_items) predictions += item.predictions;
  nlohmann::ordered_json section = {{"sequences", state.ablation_items.size()},
                                    {"requested_sequences", state.options.ablation_sequences},
                                    {"objective", objective.name()}};
  if (objective.kind == AblationObjective::Kind::masked_lm) {
    section["mask_token"] = objective.mask_token;
    section["mask_rate"] = kMaskRate;
  }
  section["predictions"] = predictions;
  section["seed"] = state.options.seed;
  section["loss"] = found.loss;
  section["pruning"] = pruning_json(found.pruning);
  if (!found.circuits_note.empty()) section["circuits_note"] = found.circuits_note;
  document["ablation"] = std::move(section);
  if (document.contains("kv_plan")) {
    auto& plan = document["kv_plan"];
    if (found.kv_plan_loss_delta) {
      const double delta = *found.kv_plan_loss_delta;
      plan["loss_delta"] = delta;
      plan["loss_budget"] = kKvPlanLossBudget;
      if (delta > kKvPlanLossBudget) {
        const std::string warning = fmt::format(
            "the KV-cache plan costs {:.3f} nats on the ablation set (more than {}): its streaming heads need more than "
            "their sink and window; try a larger --window or --sink",
            delta, kKvPlanLossBudget);
        plan["loss_note"] = warning;
        document["warnings"].push_back(warning);
      }
    } else if (!found.kv_plan_note.empty()) {
      plan["loss_note"] = found.kv_plan_note;
    }
    if (!found.kv_plan_needles.empty()) {
      plan["needles"] = kv_plan_needles_json(found.kv_plan_needles);
    } else if (!found.kv_plan_needles_note.empty()) {
      plan["needles_note"] = found.kv_plan_needles_note;
    }
  }

  const int heads = state.shape.heads;
  std::vector<double> layer_norms(static_cast<std::size_t>(state.shape.layers), 0.0);
  for (std::size_t index = 0; index < found.importance.size(); ++index) {
    layer_norms[index / static_cast<std::size_t>(heads)] += found.importance[index] * found.importance[index];
  }
  for (double& norm : layer_norms) norm = std::sqrt(norm);
  for (auto& head : document.at("heads")) {
    const int layer = head.at("layer").get<int>();
    const auto index = static_cast<std::size_t>(layer * heads + head.at("head").get<int>());
    auto& scores = head["scores"];
    const double norm = layer_norms[static_cast<std::size_t>(layer)];
    scores["importance"] = found.importance[index];
    scores["importance_layer_normalized"] = norm > 0 ? found.importance[index] / norm : 0.0;
    scores["ablation_loss"] = found.ablation_loss[index];
    if (index < found.repeat_loss_increase.size() && found.repeat_loss_increase[index]) {
      scores["ablation_repeat_loss"] = *found.repeat_loss_increase[index];
    }
  }
  for (const HeadCircuit& circuit : found.circuits) {
    nlohmann::ordered_json links = nlohmann::ordered_json::array();
    for (const CircuitLink& link : circuit.depends_on) {
      links.push_back({{"layer", link.layer}, {"head", link.head}, {"drop", link.drop}});
    }
    auto& head = document.at("heads").at(static_cast<std::size_t>(circuit.layer * heads + circuit.head));
    head["circuit"] = {{"score", circuit.score}, {"baseline", circuit.baseline}, {"depends_on", std::move(links)}};
  }
}

}  // namespace headscan
