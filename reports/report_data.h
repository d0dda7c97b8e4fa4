#pragma once
// heads.json read into the shape the pages and plots draw from. Fields written by later analyses
// (induction, syntactic, rare_word, …) may be absent or null: a score column exists only when some
// head has a value for it, and a head without a value shows "—". The causal evidence of
// --ablation (reports/causal_data.h) is read here too, and is absent without it.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analyzer/model/model_layers.h"
#include "reports/causal_data.h"
#include "reports/score_values.h"

namespace headscan {

struct HeadInfo {
  int layer = 0;        // the attention map (capture order), the index into ReportData's per-head lists
  int model_layer = 0;  // the model's own index of its layer (heads.json's "layer"), which the reports show
  int head = 0;
  std::optional<int> kv_group;
  std::string primary = "none";
  std::vector<std::string> labels;
  const nlohmann::ordered_json* scores = nullptr;  // the head's "scores" object; null when absent
  const nlohmann::ordered_json* entry = nullptr;   // the head's whole entry in "heads"
  std::optional<Circuit> circuit;                   // induction and duplicate-token heads, with --ablation
  std::vector<HeadLink> depended_on_by;             // heads whose circuit lists this one, with their drop

  std::string id() const;  // "L0H3", by the model's layer index
};

// One score as a number per head, for heatmaps, the sortable table and the colour scales.
struct ScoreColumn {
  std::string name;                           // key in "scores", e.g. "previous_token"
  std::string meaning;                        // one line: what the number is
  std::vector<std::optional<double>> values;  // per head, index layer * heads + head
  double low = 0;                             // colour scale
  double high = 1;
  bool diverging = false;                     // a signed score: low = −high, 0 in the middle of the scale
  std::optional<double> threshold;            // from "thresholds"

  // 1 + the number of heads with a larger value (1 = the largest), or nullopt without a value.
  std::optional<std::size_t> rank(std::size_t index) const;
  std::size_t count() const;  // heads with a value
};

struct ReportData {
  int layers = 0;  // attention maps: the rows of the head map
  int heads = 0;
  // Every layer of the model as it numbers them (heads.json's model.layers), layers without an
  // attention map included; empty when the model's numbering is unknown (then map m is layer m).
  std::vector<ModelLayer> model_layers;
  std::vector<int> map_layers;  // the model's index of each attention map
  std::vector<HeadInfo> head_list;  // layer-major: index layer * heads + head
  std::vector<ScoreColumn> scores;  // known scores in a fixed order, then unknown ones
  std::map<std::string, double> thresholds;  // heads.json "thresholds"
  bool causal = true;  // model.causal: false for a bidirectional model, whose heads get no causal-only label
  // Heads share keys and values (n_kv_heads < n_heads): some head's kv_group is not its own index.
  bool grouped_query = false;
  std::optional<AblationSummary> ablation;   // heads.json "ablation" (--ablation)

  const HeadInfo& at(int layer, int head) const { return head_list[static_cast<std::size_t>(layer * heads + head)]; }
  // The model's index of attention map `map`.
  int model_layer(int map) const { return map_layers[static_cast<std::size_t>(map)]; }
  // The layers without an attention map, as the reports name them ("3 linear attention").
  std::vector<std::string> layers_without_maps() const;
  const ScoreColumn* score(std::string_view name) const;
  // Mean over the heads of `layer` that have a value, or nullopt.
  std::optional<double> layer_mean(std::string_view score_name, int layer) const;
};

// Throws std::runtime_error when `heads` has no usable "heads" array.
ReportData read_report_data(const nlohmann::ordered_json& heads);

// A short human reading of a score value: "0.97", "−1: 0.97 (argmax 1.00)", "nsubj h2d 0.61 vs 0.45".
std::string score_text(const nlohmann::ordered_json* value);

// Number with `digits` decimals; "—" for nullopt.
std::string format_number(std::optional<double> value, int digits = 2);

// The definition of a known score (DESIGN.md, "Head scores and labels" and "Causal evidence"), or "".
std::string score_meaning(std::string_view name);

}  // namespace headscan
