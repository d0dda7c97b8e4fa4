// compare.json and compare.csv of a comparison (reports/compare_data.h): the tables `headscan
// compare` writes beside its page.
#include <map>

#include <fmt/format.h>

#include "reports/compare_data.h"
#include "reports/heads_csv.h"
#include "reports/score_values.h"
#include "reports/text.h"

namespace headscan {
namespace {

using Json = nlohmann::ordered_json;

Json number_or_null(const std::optional<double>& value) { return value ? Json(*value) : Json(nullptr); }

Json label_changes_json(const Comparison& comparison, const std::vector<LabelChange>& changes) {
  Json list = Json::array();
  for (const LabelChange& change : changes) {
    list.push_back({{"layer", comparison.model_layer(change.layer)},
                    {"head", change.head},
                    {"from", change.from},
                    {"to", change.to},
                    {"primary", {change.primary_before, change.primary_after}},
                    {"added", change.added},
                    {"removed", change.removed}});
  }
  return list;
}

const char* order_name(RunOrder order) {
  switch (order) {
    case RunOrder::step: return "step";
    case RunOrder::steps: return "--steps";
    case RunOrder::given: break;
  }
  return "given";
}

}  // namespace

Json compare_json(const Comparison& comparison) {
  Json runs = Json::array();
  std::vector<RunFindings> findings;
  for (const CompareRun& run : comparison.runs) {
    const RunFindings found = run_findings(run);
    findings.push_back(found);
    const Json& model = run.document["model"];
    Json entry = {{"path", valid_utf8(run.given)},
                  {"name", valid_utf8(run.name)},
                  {"step", run.step ? Json(*run.step) : Json(nullptr)},
                  {"model", model.contains("name") ? model["name"] : Json(nullptr)},
                  {"repeat_loss", found.repeat_loss.empty() ? Json(nullptr) : Json(found.repeat_loss)},
                  {"in_context_gap", number_or_null(found.in_context_gap)},
                  {"loss", number_or_null(found.loss)}};
    entry["best_induction"] = found.best_induction ? Json{{"layer", comparison.model_layer(found.best_layer)}, {"head", found.best_head},
                                                          {"score", *found.best_induction}}
                                                   : Json(nullptr);
    std::map<std::string, int> counts;
    for (const Json& head : run.document["heads"]) ++counts[head["primary"].get<std::string>()];
    entry["primary_counts"] = counts;
    if (run.document.contains("ablation")) {
      const Json& ablation = run.document["ablation"];
      Json numbers = Json::object();
      for (const char* key : {"sequences", "objective", "loss"}) {
        if (ablation.contains(key)) numbers[key] = ablation[key];
      }
      const auto pruning = ablation.find("pruning");
      if (pruning != ablation.end() && pruning->is_object() && pruning->contains("points") && (*pruning)["points"].is_array()) {
        Json points = Json::array();
        for (const Json& point : (*pruning)["points"]) {
          if (!point.is_object()) continue;
          points.push_back({{"fraction", number_or_null(number_at(point, "fraction"))},
                            {"importance_order", number_or_null(number_at(point, "importance_order"))},
                            {"random_order", number_or_null(number_at(point, "random_order"))}});
        }
        numbers["pruning"] = std::move(points);
      }
      entry["ablation"] = std::move(numbers);
    }
    runs.push_back(std::move(entry));
  }
  const PhaseChange change = phase_change(findings);
  auto at_run = [&](const std::optional<std::size_t>& run) {
    if (!run) return Json(nullptr);
    const CompareRun& found = comparison.runs[*run];
    return Json{{"run", *run}, {"step", found.step ? Json(*found.step) : Json(nullptr)}};
  };

  const bool circuits = std::any_of(comparison.runs.begin(), comparison.runs.end(), [](const CompareRun& run) {
    return std::any_of(run.document["heads"].begin(), run.document["heads"].end(),
                       [](const Json& head) { return head.contains("circuit"); });
  });
  Json heads = Json::array();
  for (int layer = 0; layer < comparison.layers; ++layer) {
    for (int head = 0; head < comparison.heads; ++head) {
      Json scores = Json::object();
      for (const std::string& name : comparison.score_names) {
        Json values = Json::array();
        for (const CompareRun& run : comparison.runs) {
          const Json* value = run_score(run, layer, head, name);
          values.push_back(value ? *value : Json(nullptr));
        }
        scores[name] = std::move(values);
      }
      Json labels = Json::array(), primary = Json::array(), circuit = Json::array();
      for (const CompareRun& run : comparison.runs) {
        const Json& entry = run.head(layer, head);
        labels.push_back(entry["labels"]);
        primary.push_back(entry["primary"]);
        circuit.push_back(entry.contains("circuit") ? entry["circuit"] : Json(nullptr));
      }
      Json entry = {{"layer", comparison.model_layer(layer)}, {"head", head}, {"scores", std::move(scores)}, {"labels", std::move(labels)},
                    {"primary", std::move(primary)}, {"primary_changed", primary_changed(comparison, layer, head)}};
      if (circuits) entry["circuit"] = std::move(circuit);
      heads.push_back(std::move(entry));
    }
  }
  Json warnings = Json::array();
  for (const std::string& warning : comparison.warnings) warnings.push_back(valid_utf8(warning));
  return {{"format", "headscan-compare"},
          {"version", 1},
          {"headscan_version", HEADSCAN_VERSION},
          {"order", order_name(comparison.order)},
          {"shape", {{"layers", comparison.layers}, {"heads", comparison.heads}}},
          {"score_names", comparison.score_names},
          {"runs", std::move(runs)},
          {"phase_change", {{"induction_above", kInductionFormed},
                            {"induction_run", at_run(change.induction_run)},
                            {"in_context_gap_above", kInContextGapFormed},
                            {"in_context_gap_run", at_run(change.gap_run)}}},
          {"heads", std::move(heads)},
          {"label_changes", {{"consecutive", label_changes_json(comparison, consecutive_label_changes(comparison))},
                             {"first_to_last", label_changes_json(comparison, overall_label_changes(comparison))}}},
          {"warnings", warnings}};
}

std::string compare_csv(const Comparison& comparison) {
  std::vector<std::string> columns;
  for (const CompareRun& run : comparison.runs) add_score_columns(run.document["heads"], columns);
  std::string text = std::string("run,run_name,step,") + kHeadCsvColumns;
  for (const std::string& column : columns) text += "," + csv_field(column);
  text += "\r\n";
  for (std::size_t index = 0; index < comparison.runs.size(); ++index) {
    const CompareRun& run = comparison.runs[index];
    const std::string prefix =
        fmt::format("{},{},{},", index, csv_field(valid_utf8(run.name)), run.step ? std::to_string(*run.step) : std::string());
    for (const Json& head : run.document["heads"]) text += prefix + head_csv_fields(head, columns) + "\r\n";
  }
  return text;
}

}  // namespace headscan
