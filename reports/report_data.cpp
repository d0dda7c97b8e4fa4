#include "reports/report_data.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "heads/registry.h"
#include "reports/model_layers_json.h"

namespace headscan {

namespace {

using Json = nlohmann::ordered_json;

// Every score a head type describes, with its meaning: first the scores of the types that give a
// label, in primary order, then the others in heads.json order.
const std::vector<ScoreDescription>& known_scores() {
  static const std::vector<ScoreDescription> scores = [] {
    std::vector<ScoreDescription> described;
    auto describe = [&](const HeadType& type) {
      described.insert(described.end(), type.scores.begin(), type.scores.end());
    };
    for (const std::string& label : primary_label_order()) {
      for (const HeadType& type : head_types()) {
        if (type.label == label) describe(type);
      }
    }
    for (const HeadType& type : head_types()) {
      if (type.label.empty()) describe(type);
    }
    return described;
  }();
  return scores;
}

// Whether the label of the type whose own score is `name` applies to this model: a type labels
// only causal models' heads when it is causal_only (induction, duplicate-token, ...).
bool label_applies(const std::string& name, bool causal) {
  for (const HeadType& type : head_types()) {
    if (type.name() == name) return causal || !type.causal_only;
  }
  return true;
}

// The scores of --ablation (DESIGN.md, "Causal evidence"): not a head type's, so described here.
enum class ScoreScale {
  usual,        // [0, 1] for shares, else from min(0, lowest) to the highest
  zero_to_max,  // from 0 to the highest, whatever its size
  signed_,      // symmetric about 0, so that the sign reads from the colour
};

struct CausalScore {
  const char* name;
  const char* meaning;
  ScoreScale scale;
};

const std::vector<CausalScore>& causal_scores() {
  static const std::vector<CausalScore> scores = {
      {"importance", "mean |∂L/∂ξ|, ξ scaling the head's attention: nats per unit of ξ (Michel et al. 2019)",
       ScoreScale::zero_to_max},
      {"importance_layer_normalized",
       "importance divided by the ℓ2 norm of the importances of its layer (Michel et al. 2019, §4.1)", ScoreScale::usual},
      {"ablation_loss", "mean loss increase (nats) when this head alone is removed; below 0 the loss falls",
       ScoreScale::signed_},
      {"ablation_repeat_loss", "loss increase (nats) on repeats 2–4 of the induction probes without this head",
       ScoreScale::signed_},
  };
  return scores;
}

const CausalScore* causal_score(std::string_view name) {
  for (const auto& score : causal_scores()) {
    if (name == score.name) return &score;
  }
  return nullptr;
}

}  // namespace

std::string HeadInfo::id() const { return fmt::format("L{}H{}", model_layer, head); }

std::optional<std::size_t> ScoreColumn::rank(std::size_t index) const {
  if (!values[index]) return std::nullopt;
  std::size_t above = 0;
  for (const auto& value : values) above += value && *value > *values[index];
  return above + 1;
}

std::size_t ScoreColumn::count() const {
  return static_cast<std::size_t>(std::count_if(values.begin(), values.end(), [](const auto& value) { return value.has_value(); }));
}

const ScoreColumn* ReportData::score(std::string_view name) const {
  for (const auto& column : scores) {
    if (column.name == name) return &column;
  }
  return nullptr;
}

std::vector<std::string> ReportData::layers_without_maps() const {
  std::vector<std::string> names;
  for (const ModelLayer& layer : model_layers) {
    if (layer.kind != kAttentionLayer) names.push_back(layer_label(layer));
  }
  return names;
}

std::optional<double> ReportData::layer_mean(std::string_view score_name, int layer) const {
  const ScoreColumn* column = score(score_name);
  if (!column) return std::nullopt;
  double sum = 0;
  int count = 0;
  for (int head = 0; head < heads; ++head) {
    if (const auto& value = column->values[static_cast<std::size_t>(layer * heads + head)]) {
      sum += *value;
      ++count;
    }
  }
  if (count == 0) return std::nullopt;
  return sum / count;
}

std::string format_number(std::optional<double> value, int digits) {
  if (!value) return "—";
  std::string text = fmt::format("{:.{}f}", *value, digits);
  if (text.rfind("-", 0) == 0) text.replace(0, 1, "−");
  if (text == "−0.00" || text == "−0.0" || text == "−0.000") text.erase(0, 3);
  return text;
}

std::string score_text(const Json* value) {
  if (!value || value->is_null()) return "—";
  if (value->is_number()) return format_number(scalar_score(*value));
  if (value->is_object() && value->contains("weight")) {
    std::string text;
    if (const auto offset = number_at(*value, "offset")) text = (*offset > 0 ? "+" : "") + format_number(*offset, 0) + ": ";
    text += format_number(number_at(*value, "weight"));
    if (const auto rate = number_at(*value, "argmax_rate")) text += " (argmax " + format_number(rate) + ")";
    return text;
  }
  std::string relation;
  if (const Json* best = is_relation_table(*value) ? best_relation(*value, &relation) : nullptr) {
    const auto direction = best->find("direction");
    const auto passed = best->find("passed");
    return fmt::format("{} {} {} vs {}{}", relation,
                       direction != best->end() && direction->is_string() ? direction->get<std::string>() : "",
                       format_number(number_at(*best, "accuracy")), format_number(number_at(*best, "baseline")),
                       passed != best->end() && passed->is_boolean() && passed->get<bool>() ? " ✓" : "");
  }
  if (value->is_object() && value->empty()) return "—";
  return value->dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string score_meaning(std::string_view name) {
  for (const auto& known : known_scores()) {
    if (name == known.name) return known.meaning;
  }
  if (const CausalScore* causal = causal_score(name)) return causal->meaning;
  return "";
}

ReportData read_report_data(const Json& document) {
  if (!document.is_object() || !document.contains("heads") || !document["heads"].is_array()) {
    throw std::runtime_error("heads.json has no \"heads\" array");
  }
  const Json& entries = document["heads"];
  ReportData data;
  const Json model = document.value("model", Json::object());
  LayerNumbering numbering;
  if (model.is_object() && model.contains("layers")) {
    DocumentLayers numbered = document_layers(model, "heads.json");
    data.layers = numbered.maps;
    numbering = std::move(numbered.numbering);
    data.model_layers = numbering.layers;
  }
  data.heads = model.is_object() ? model.value("heads", 0) : 0;
  const Json causal_field = model.is_object() ? model.value("causal", Json(true)) : Json(true);
  data.causal = !causal_field.is_boolean() || causal_field.get<bool>();
  // A head's "layer" is the model's index; the report's rows are the attention maps.
  const auto map_of = [&numbering](const Json& entry) { return numbering.map_of(entry.value("layer", -1)); };
  for (const auto& entry : entries) {
    data.layers = std::max(data.layers, map_of(entry) + 1);
    data.heads = std::max(data.heads, entry.value("head", -1) + 1);
  }
  if (data.layers <= 0 || data.heads <= 0) throw std::runtime_error("heads.json lists no heads");
  const Json thresholds = document.value("thresholds", Json::object());
  if (thresholds.is_object()) {
    for (const auto& [name, value] : thresholds.items()) {
      if (value.is_number()) data.thresholds[name] = value.get<double>();
    }
  }

  data.head_list.resize(static_cast<std::size_t>(data.layers * data.heads));
  for (int layer = 0; layer < data.layers; ++layer) {
    for (int head = 0; head < data.heads; ++head) {
      auto& info = data.head_list[static_cast<std::size_t>(layer * data.heads + head)];
      info.layer = layer;
      info.model_layer = numbering.model_index(layer);
      info.head = head;
    }
    data.map_layers.push_back(numbering.model_index(layer));
  }
  std::vector<std::string> score_order;
  for (const auto& entry : entries) {
    const int layer = map_of(entry);
    const int head = entry.value("head", -1);
    if (layer < 0 || head < 0) continue;
    auto& info = data.head_list[static_cast<std::size_t>(layer * data.heads + head)];
    info.entry = &entry;
    if (entry.contains("kv_group") && entry["kv_group"].is_number_integer()) {
      info.kv_group = entry["kv_group"].get<int>();
      data.grouped_query = data.grouped_query || *info.kv_group != head;
    }
    if (entry.contains("primary") && entry["primary"].is_string()) info.primary = entry["primary"].get<std::string>();
    if (entry.contains("labels") && entry["labels"].is_array()) {
      for (const auto& label : entry["labels"]) {
        if (label.is_string()) info.labels.push_back(label.get<std::string>());
      }
    }
    if (entry.contains("scores") && entry["scores"].is_object()) {
      info.scores = &entry["scores"];
      for (const auto& [name, value] : info.scores->items()) {
        if (std::find(score_order.begin(), score_order.end(), name) == score_order.end()) score_order.push_back(name);
      }
    }
  }

  // Known scores first, in their fixed order, then the causal ones, then the others as they first
  // appear.
  std::vector<std::string> ordered;
  for (const auto& known : known_scores()) {
    if (std::find(score_order.begin(), score_order.end(), known.name) != score_order.end()) ordered.push_back(known.name);
  }
  for (const auto& causal : causal_scores()) {
    const bool listed = std::find(ordered.begin(), ordered.end(), causal.name) != ordered.end();
    if (!listed && std::find(score_order.begin(), score_order.end(), causal.name) != score_order.end()) ordered.push_back(causal.name);
  }
  for (const auto& name : score_order) {
    if (std::find(ordered.begin(), ordered.end(), name) == ordered.end()) ordered.push_back(name);
  }

  for (const auto& name : ordered) {
    ScoreColumn column;
    column.name = name;
    column.meaning = score_meaning(name);
    column.values.resize(data.head_list.size());
    bool any = false;
    double low = 0, high = 0;
    for (std::size_t i = 0; i < data.head_list.size(); ++i) {
      const Json* scores = data.head_list[i].scores;
      if (!scores || !scores->contains(name)) continue;
      column.values[i] = scalar_score((*scores)[name]);
      if (column.values[i]) {
        low = any ? std::min(low, *column.values[i]) : *column.values[i];
        high = any ? std::max(high, *column.values[i]) : *column.values[i];
        any = true;
      }
    }
    if (!any) continue;  // only nulls or values without a number: shown on head pages only
    // Shares and weights live in [0, 1]; anything else (distances, margins) spans its own range;
    // importance spans 0 to its largest value, and a loss change is signed.
    const CausalScore* causal = causal_score(name);
    const ScoreScale scale = causal ? causal->scale : ScoreScale::usual;
    if (scale == ScoreScale::signed_) {
      const double reach = std::max(std::abs(low), std::abs(high));
      column.high = reach > 0 ? reach : 1;
      column.low = -column.high;
      column.diverging = true;
    } else if (scale == ScoreScale::zero_to_max) {
      column.low = 0;
      column.high = high > 0 ? high : 1;
    } else if (low >= 0 && high <= 1) {
      column.low = 0;
      column.high = 1;
    } else {
      column.low = std::min(0.0, low);
      column.high = high > column.low ? high : column.low + 1;
    }
    // A bidirectional model's map states no threshold of a label it cannot get.
    if (thresholds.is_object() && label_applies(name, data.causal)) column.threshold = number_at(thresholds, name.c_str());
    data.scores.push_back(std::move(column));
  }

  data.ablation = read_ablation(document);
  for (auto& info : data.head_list) {
    if (!info.entry) continue;
    // Links name the model's layer; the report indexes them by attention map.
    const int model_layers = numbering.known() ? static_cast<int>(numbering.layers.size()) : data.layers;
    info.circuit = read_circuit(*info.entry, model_layers, data.heads);
    if (!info.circuit) continue;
    auto& links = info.circuit->depends_on;
    for (HeadLink& link : links) link.layer = numbering.map_of(link.layer);
    links.erase(std::remove_if(links.begin(), links.end(), [](const HeadLink& link) { return link.layer < 0; }),
                links.end());
  }
  for (const auto& info : data.head_list) {
    if (!info.circuit) continue;
    for (const auto& link : info.circuit->depends_on) {
      data.head_list[static_cast<std::size_t>(link.layer * data.heads + link.head)].depended_on_by.push_back(
          {info.layer, info.head, link.drop});
    }
  }
  for (auto& info : data.head_list) {
    std::stable_sort(info.depended_on_by.begin(), info.depended_on_by.end(),
                     [](const HeadLink& a, const HeadLink& b) { return a.drop > b.drop; });
  }
  return data;
}

}  // namespace headscan
