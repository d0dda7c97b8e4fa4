#include "analyzer/run/kv_plan.h"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/checked_file.h"
#include "heads/streaming.h"
#include "reports/heads_json.h"
#include "reports/model_layers_json.h"

namespace headscan {

void add_head_summary(nlohmann::ordered_json& document) {
  const auto& heads = document.at("heads");
  std::int64_t sinks = 0;
  for (const auto& head : heads) {
    const auto& first = head.at("scores").value("first_token", nlohmann::ordered_json());
    if (first.is_number() && first.get<double>() >= kSinkRateThreshold) ++sinks;
  }
  const auto count = static_cast<std::int64_t>(heads.size());
  document["summary"] = {{"sink_rate", count > 0 ? static_cast<double>(sinks) / static_cast<double>(count) : 0.0},
                         {"sink_threshold", kSinkRateThreshold},
                         {"sink_heads", sinks}};

  const auto& model = document.at("model");
  if (!model.at("causal").get<bool>()) return;
  // The plan's rows are the attention layers (maps), in the model's order; heads name the model's layer.
  const DocumentLayers numbered = document_layers(model, "heads.json");
  const int layers = numbered.maps;
  const int query_heads = model.at("heads").get<int>();
  const int kv_heads = std::max(1, model.value("kv_heads", query_heads));
  const int group = std::max(1, query_heads / kv_heads);
  Thresholds thresholds;
  for (const auto& [name, value] : document.at("thresholds").items()) thresholds[name] = value.get<double>();
  const StreamingWindow window = streaming_window(thresholds);

  std::vector<std::vector<std::string>> plan(static_cast<std::size_t>(layers),
                                             std::vector<std::string>(static_cast<std::size_t>(query_heads), "full"));
  std::vector<std::vector<int>> full(static_cast<std::size_t>(layers), std::vector<int>(static_cast<std::size_t>(kv_heads), 0));
  for (const auto& head : heads) {
    const int layer = numbered.numbering.map_of(head.at("layer").get<int>());
    const int index = head.at("head").get<int>();
    if (layer < 0 || layer >= layers || index < 0 || index >= query_heads) continue;
    const bool keeps_all = has_label(head, "retrieval") || !has_label(head, "streaming");
    plan[static_cast<std::size_t>(layer)][static_cast<std::size_t>(index)] = keeps_all ? "full" : "streaming";
    if (keeps_all) full[static_cast<std::size_t>(layer)][static_cast<std::size_t>(std::min(index / group, kv_heads - 1))] = 1;
  }
  std::int64_t full_groups = 0;
  for (const auto& row : full) full_groups += std::count(row.begin(), row.end(), 1);
  const std::int64_t groups = static_cast<std::int64_t>(layers) * kv_heads;
  nlohmann::ordered_json saved = nlohmann::ordered_json::object();
  const std::int64_t kept = window.sink + window.window;
  for (const std::int64_t context : kPlanContexts) {
    // Full groups keep every token, streaming groups at most sink + window of them.
    const double streaming_share = groups > 0 ? static_cast<double>(groups - full_groups) / static_cast<double>(groups) : 0.0;
    const double dropped = 1.0 - static_cast<double>(std::min(context, kept)) / static_cast<double>(context);
    saved[std::to_string(context)] = streaming_share * dropped;
  }
  const bool measured = std::any_of(heads.begin(), heads.end(), [](const auto& head) {
    return head.at("scores").value("streaming", nlohmann::ordered_json()).is_number();
  });
  document["kv_plan"] = {{"sink_size", window.sink},
                         {"recent_size", window.window},
                         {"heads", plan},
                         {"full_attention_heads", full},
                         {"full_kv_heads", full_groups},
                         {"kv_heads", groups},
                         {"memory_saved", saved}};
  if (!measured && !heads.empty()) {
    const std::string note = fmt::format(
        "no sequence is longer than sink + window = {} tokens, so streaming is null and every head keeps a full "
        "cache; give longer documents, a larger --max-length, or a smaller --sink/--window",
        kept);
    document["kv_plan"]["note"] = note;
    document["warnings"].push_back(note);
  }
}

void write_kv_plan_files(const nlohmann::ordered_json& document, const std::filesystem::path& directory) {
  if (!document.contains("kv_plan")) return;
  const auto& plan = document.at("kv_plan");
  std::filesystem::create_directories(directory);
  std::string tsv;
  for (const auto& row : plan.at("full_attention_heads")) {
    std::vector<int> values = row.get<std::vector<int>>();
    tsv += fmt::format("{}\n", fmt::join(values, "\t"));
  }
  write_checked_file(directory / "full_attention_heads.tsv", tsv);
  nlohmann::ordered_json config{{"sink_size", plan.at("sink_size")}, {"recent_size", plan.at("recent_size")}};
  // A model with layers without attention: the model's index of each row of the TSV.
  const LayerNumbering& numbering = document_layers(document.at("model"), "heads.json").numbering;
  if (numbering.attention_layers.size() != numbering.layers.size()) config["layers"] = numbering.attention_layers;
  write_checked_file(directory / "config.json", config.dump(2) + "\n");
}

}  // namespace headscan
