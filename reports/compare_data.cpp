#include "reports/compare_data.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "analyzer/errors.h"
#include "analyzer/json_limits.h"
#include "analyzer/model/model_metadata.h"
#include "reports/heads_csv.h"
#include "reports/model_layers_json.h"
#include "reports/score_values.h"

namespace headscan {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr const char* kWhatToGive =
    "give a report directory written by headscan (or merge), or its heads.json";

// A value of the run as it shows in a message, cut short.
std::string quoted(const Json& value) { return quote_json(nlohmann::json(value)); }

// An integer member within [low, high], or nullopt when absent; InputError for anything else.
std::optional<std::int64_t> integer_member(const Json& object, const char* key, std::int64_t low, std::int64_t high,
                                           const std::string& where) {
  const auto found = object.find(key);
  if (found == object.end()) return std::nullopt;
  const Json& value = *found;
  const bool integer = value.is_number_integer() || value.is_number_unsigned();
  // nlohmann reads a non-negative integer as unsigned: both bounds apply to it too.
  const bool in_range =
      integer && (value.is_number_unsigned()
                      ? value.get<std::uint64_t>() >= static_cast<std::uint64_t>(std::max<std::int64_t>(low, 0)) &&
                            value.get<std::uint64_t>() <= static_cast<std::uint64_t>(high)
                      : value.get<std::int64_t>() >= low && value.get<std::int64_t>() <= high);
  if (!in_range) {
    throw InputError(fmt::format("{}: expected \"{}\" to be a whole number from {} to {}, found {}; {}", where, key, low,
                                 high, quoted(value), kWhatToGive));
  }
  return value.get<std::int64_t>();
}

// The head entries of a run in layer-major order, each checked and with a kv_group.
Json checked_heads(const Json& entries, int layers, int heads, const LayerNumbering& numbering, const std::string& origin) {
  const std::size_t count = static_cast<std::size_t>(layers) * static_cast<std::size_t>(heads);
  if (entries.size() != count) {
    throw InputError(fmt::format("{}: \"heads\" lists {} heads, but the model has {} layers × {} heads = {}; the report "
                                 "is damaged: run headscan again",
                                 origin, entries.size(), layers, heads, count));
  }
  Json ordered = Json::array();
  std::vector<const Json*> slots(count, nullptr);
  for (std::size_t index = 0; index < entries.size(); ++index) {
    const Json& entry = entries[index];
    const std::string where = fmt::format("{}: heads[{}]", origin, index);
    if (!entry.is_object()) throw InputError(fmt::format("{}: expected an object, found {}", where, quoted(entry)));
    // "layer" is the model's index; heads are placed by attention map.
    const int model_layers = numbering.known() ? static_cast<int>(numbering.layers.size()) : layers;
    const auto model_layer = integer_member(entry, "layer", 0, model_layers - 1, where);
    const auto head = integer_member(entry, "head", 0, heads - 1, where);
    if (!model_layer || !head) throw InputError(fmt::format("{}: expected \"layer\" and \"head\"; {}", where, kWhatToGive));
    const int layer = numbering.map_of(static_cast<int>(*model_layer));
    if (layer < 0) {
      throw InputError(fmt::format("{}: layer {} has no attention map (model.layers gives its kind as \"{}\"); the "
                                   "report is damaged: run headscan again",
                                   where, *model_layer, numbering.layers[static_cast<std::size_t>(*model_layer)].kind));
    }
    const std::size_t slot = static_cast<std::size_t>(layer) * static_cast<std::size_t>(heads) + static_cast<std::size_t>(*head);
    if (slots[slot]) throw InputError(fmt::format("{}: L{}H{} is listed twice; the report is damaged: run headscan again", where, *model_layer, *head));
    slots[slot] = &entry;
  }
  for (const Json* entry : slots) {
    Json head = *entry;
    const std::string where = fmt::format("{}: L{}H{}", origin, head["layer"].get<int>(), head["head"].get<int>());
    if (!integer_member(head, "kv_group", 0, kMaxCompareHeads, where)) head["kv_group"] = head["head"];
    if (!head.contains("primary") || !head["primary"].is_string()) {
      throw InputError(fmt::format("{}: expected \"primary\", a label; {}", where, kWhatToGive));
    }
    if (!head.contains("labels") || !head["labels"].is_array() || head["labels"].size() > kMaxCompareLabels ||
        !std::all_of(head["labels"].begin(), head["labels"].end(), [](const Json& label) { return label.is_string(); })) {
      throw InputError(fmt::format("{}: expected \"labels\", an array of at most {} labels; {}", where,
                                   kMaxCompareLabels, kWhatToGive));
    }
    if (!head.contains("scores")) head["scores"] = Json::object();
    if (!head["scores"].is_object()) throw InputError(fmt::format("{}: expected \"scores\" to be an object; {}", where, kWhatToGive));
    ordered.push_back(std::move(head));
  }
  return ordered;
}

std::string directory_name(const fs::path& path) {
  const fs::path absolute = fs::absolute(path).lexically_normal();
  const fs::path directory = absolute.filename().empty() ? absolute.parent_path() : absolute;
  return directory.filename().string();
}

// Labels of `to` not in `from`.
std::vector<std::string> labels_not_in(const Json& to, const Json& from) {
  std::vector<std::string> found;
  for (const auto& label : to) {
    if (std::find(from.begin(), from.end(), label) == from.end()) found.push_back(label.get<std::string>());
  }
  return found;
}

std::optional<LabelChange> label_change(const Comparison& comparison, int layer, int head, std::size_t from, std::size_t to) {
  const Json& before = comparison.runs[from].head(layer, head);
  const Json& after = comparison.runs[to].head(layer, head);
  LabelChange change{layer, head, from, to, before["primary"].get<std::string>(), after["primary"].get<std::string>(),
                     labels_not_in(after["labels"], before["labels"]), labels_not_in(before["labels"], after["labels"])};
  if (change.primary_before == change.primary_after && change.added.empty() && change.removed.empty()) return std::nullopt;
  return change;
}

}  // namespace

CompareRun parse_compare_run(const std::string& text, const std::string& origin) {
  check_json_depth(text, origin);
  Json document;
  try {
    document = Json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for a number like 1e400
    throw InputError(fmt::format("{}: not JSON ({}); {}", origin, e.what(), kWhatToGive));
  }
  if (!document.is_object()) throw InputError(fmt::format("{}: expected a JSON object, a headscan report; {}", origin, kWhatToGive));
  const auto format = document.find("format");
  if (format != document.end() && format->is_string()) {
    const std::string name = format->get<std::string>();
    if (name == "headscan-shard") {
      throw InputError(fmt::format("{}: this is one shard of a run (--shard), not a report: combine the shards with "
                                   "headscan merge DIR... -o OUT and compare OUT",
                                   origin));
    }
    if (name == "headscan-compare") {
      throw InputError(fmt::format("{}: this is a comparison (compare.json), not a run; {}", origin, kWhatToGive));
    }
  }
  if (!document.contains("model") || !document["model"].is_object() || !document.contains("heads") ||
      !document["heads"].is_array()) {
    throw InputError(fmt::format("{}: expected a headscan report with \"model\" and \"heads\"; {}", origin, kWhatToGive));
  }
  Json& model = document["model"];
  const std::string where = origin + ": model";
  std::optional<std::int64_t> layers;
  LayerNumbering numbering;
  if (model.contains("layers") && model["layers"].is_array()) {
    DocumentLayers numbered = document_layers(model, origin);
    layers = numbered.maps;
    numbering = std::move(numbered.numbering);
  } else {
    layers = integer_member(model, "layers", 1, kMaxCompareHeads, where);
  }
  const auto heads = integer_member(model, "heads", 1, kMaxCompareHeads, where);
  if (!layers || !heads) throw InputError(fmt::format("{}: expected \"layers\" and \"heads\"; {}", where, kWhatToGive));
  if (*layers * *heads > kMaxCompareHeads) {
    throw InputError(fmt::format("{}: {} layers × {} heads is more than headscan compares ({} heads)", where, *layers,
                                 *heads, kMaxCompareHeads));
  }
  CompareRun run;
  run.path = origin;
  run.layers = static_cast<int>(*layers);
  run.heads = static_cast<int>(*heads);
  run.numbering = std::move(numbering);
  run.step = integer_member(model, "step", 0, kMaxMetadataStep, where);
  if (model.contains("repeat_loss")) {
    const Json& losses = model["repeat_loss"];
    const auto is_loss = [](const Json& v) { return v.is_number() && std::abs(v.get<double>()) <= kMaxCompareLoss; };
    if (!losses.is_null() && (!losses.is_array() || !std::all_of(losses.begin(), losses.end(), is_loss))) {
      throw InputError(fmt::format("{}: expected \"repeat_loss\" to be an array of losses in nats (numbers of at "
                                   "most {:g}), found {}",
                                   where, kMaxCompareLoss, quoted(losses)));
    }
  }
  if (document.contains("ablation") && !document["ablation"].is_object()) {
    throw InputError(fmt::format("{}: expected \"ablation\" to be an object; {}", origin, kWhatToGive));
  }
  document["heads"] = checked_heads(document["heads"], run.layers, run.heads, run.numbering, origin);
  std::set<std::string> names;
  for (const Json& head : document["heads"]) {
    for (const auto& [name, value] : head["scores"].items()) {
      names.insert(name);
      if (value.is_object() && value.size() > kMaxCompareColumns) {
        throw InputError(fmt::format("{}: L{}H{}'s score {} has {} members, more than a score of headscan has; {}",
                                     origin, head["layer"].get<int>(), head["head"].get<int>(), quoted(Json(name)),
                                     value.size(), kWhatToGive));
      }
    }
    if (names.size() > kMaxCompareScores) {
      throw InputError(fmt::format("{}: the heads have more than {} different scores; {}", origin, kMaxCompareScores, kWhatToGive));
    }
  }
  std::vector<std::string> columns;
  add_score_columns(document["heads"], columns);
  if (columns.size() > kMaxCompareColumns) {
    throw InputError(fmt::format("{}: the scores make {} columns, more than {}; {}", origin, columns.size(),
                                 kMaxCompareColumns, kWhatToGive));
  }
  run.document = std::move(document);
  return run;
}

CompareRun read_compare_run(const std::string& given) {
  std::error_code error;
  fs::path path = given;
  if (fs::is_directory(path, error)) path /= "heads.json";
  if (!fs::is_regular_file(path, error)) {
    if (fs::exists(fs::path(given) / "state.json", error)) {
      throw InputError(fmt::format("{}: this is one shard of a run (--shard), not a report: combine the shards with "
                                   "headscan merge DIR... -o OUT and compare OUT",
                                   given));
    }
    throw InputError(fmt::format("{}: no such report: {}", path.string(), kWhatToGive));
  }
  const std::uintmax_t size = fs::file_size(path, error);
  if (error || size > kMaxCompareRunBytes) {
    throw InputError(fmt::format("{}: {} bytes, more than a heads.json of headscan can be ({} bytes); {}", path.string(),
                                 size, kMaxCompareRunBytes, kWhatToGive));
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) throw InputError(fmt::format("{}: cannot be read", path.string()));
  CompareRun run = parse_compare_run(text.str(), path.string());
  run.given = given;
  run.name = path.filename() == "heads.json" ? directory_name(path.parent_path().empty() ? fs::path(".") : path.parent_path())
                                             : path.stem().string();
  return run;
}

Comparison make_comparison(std::vector<CompareRun> runs, const std::vector<std::int64_t>& steps) {
  if (runs.empty()) throw InputError("compare needs at least one run");
  Comparison comparison;
  comparison.layers = runs.front().layers;
  comparison.heads = runs.front().heads;
  for (const CompareRun& run : runs) {
    if (run.layers != comparison.layers || run.heads != comparison.heads) {
      throw InputError(fmt::format("{}: the model has {} layers × {} heads, but {} has {} layers × {} heads: compare "
                                   "puts heads of models of one shape side by side",
                                   run.given, run.layers, run.heads, runs.front().given, comparison.layers,
                                   comparison.heads));
    }
    // Heads are matched by the model's own layer index: the runs must number their layers alike.
    if (run.numbering.attention_layers != runs.front().numbering.attention_layers) {
      const auto named = [](const CompareRun& r) {
        return r.numbering.known() ? fmt::format("layers {}", fmt::join(r.numbering.attention_layers, ", "))
                                   : std::string("layers numbered by the order of the attention maps");
      };
      throw InputError(fmt::format("{}: its attention maps are {}, but {} has {}: compare matches heads by the "
                                   "model's layer index",
                                   run.given, named(run), runs.front().given, named(runs.front())));
    }
  }
  comparison.numbering = runs.front().numbering;
  std::error_code error;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (!runs[i].path.empty() && fs::equivalent(runs[i].path, runs[j].path, error)) {
        throw InputError(fmt::format("{}: this run is given twice (also as {})", runs[i].given, runs[j].given));
      }
    }
  }
  // Names: the directory's, or its path where two runs share one (then a number where even that
  // is shared, as for runs read from text).
  std::map<std::string, int> uses;
  for (const CompareRun& run : runs) ++uses[run.name];
  for (CompareRun& run : runs) {
    if (!run.name.empty() && uses[run.name] == 1) continue;
    if (run.path.empty()) continue;  // a report held in memory: numbered below
    const fs::path path = fs::path(run.path).lexically_normal();
    fs::path directory = path.filename() == "heads.json" ? path.parent_path() : path;
    if (directory.empty()) directory = fs::absolute(path, error).parent_path();
    run.name = directory.string();
  }
  uses.clear();
  for (const CompareRun& run : runs) ++uses[run.name];
  std::map<std::string, int> seen;
  for (CompareRun& run : runs) {
    if (uses[run.name] > 1) run.name += fmt::format(" ({})", ++seen[run.name]);
  }

  if (!steps.empty()) {
    if (steps.size() != runs.size()) {
      throw InputError(fmt::format("--steps gives {} steps for {} runs: give one step per run, in the order of the runs",
                                   steps.size(), runs.size()));
    }
    for (std::size_t i = 0; i < runs.size(); ++i) runs[i].step = steps[i];
    comparison.order = RunOrder::steps;
  } else if (std::all_of(runs.begin(), runs.end(), [](const CompareRun& run) { return run.step.has_value(); })) {
    comparison.order = RunOrder::step;
  } else {
    comparison.order = RunOrder::given;
    std::vector<std::string> without;
    for (const CompareRun& run : runs) {
      if (!run.step) without.push_back(run.name);
    }
    if (runs.size() > 1 && without.size() < runs.size()) {
      comparison.warnings.push_back(fmt::format(
          "runs in the order given: {} ha{} no step (\"step\" in the model's headscan.json); --steps gives every run one",
          fmt::join(without, ", "), without.size() == 1 ? "s" : "ve"));
    }
  }
  if (comparison.order != RunOrder::given) {
    std::stable_sort(runs.begin(), runs.end(), [](const CompareRun& a, const CompareRun& b) { return *a.step < *b.step; });
    for (std::size_t i = 1; i < runs.size(); ++i) {
      if (*runs[i].step == *runs[i - 1].step) {
        comparison.warnings.push_back(fmt::format("{} and {} have the same step, {}: they are shown in the order given",
                                                  runs[i - 1].name, runs[i].name, *runs[i].step));
      }
    }
  }
  for (CompareRun& run : runs) {
    run.title = comparison.order != RunOrder::given && run.step ? fmt::format("step {}", *run.step) : run.name;
  }
  for (const CompareRun& run : runs) {
    for (const Json& head : run.document["heads"]) {
      for (const auto& [name, value] : head["scores"].items()) {
        if (std::find(comparison.score_names.begin(), comparison.score_names.end(), name) == comparison.score_names.end()) {
          comparison.score_names.push_back(name);
        }
      }
    }
  }
  std::vector<std::string> columns;
  for (const CompareRun& run : runs) add_score_columns(run.document["heads"], columns);
  if (comparison.score_names.size() > kMaxCompareScores || columns.size() > kMaxCompareColumns) {
    throw InputError(fmt::format("the runs have more than {} different scores ({} columns) between them: compare "
                                 "runs of headscan",
                                 kMaxCompareScores, columns.size()));
  }
  comparison.runs = std::move(runs);
  return comparison;
}

RunFindings run_findings(const CompareRun& run) {
  RunFindings findings;
  for (int layer = 0; layer < run.layers; ++layer) {
    for (int head = 0; head < run.heads; ++head) {
      const Json* value = run_score(run, layer, head, "induction");
      const std::optional<double> score = value ? scalar_score(*value) : std::nullopt;
      if (score && (!findings.best_induction || *score > *findings.best_induction)) {
        findings.best_induction = score;
        findings.best_layer = layer;
        findings.best_head = head;
      }
    }
  }
  const Json& model = run.document["model"];
  if (model.contains("repeat_loss") && model["repeat_loss"].is_array()) {
    for (const Json& loss : model["repeat_loss"]) findings.repeat_loss.push_back(loss.get<double>());
  }
  if (findings.repeat_loss.size() >= 2) {
    double later = 0;
    for (std::size_t r = 1; r < findings.repeat_loss.size(); ++r) later += findings.repeat_loss[r];
    const double gap = findings.repeat_loss[0] - later / static_cast<double>(findings.repeat_loss.size() - 1);
    if (std::isfinite(gap)) findings.in_context_gap = gap;
  }
  if (run.document.contains("ablation")) findings.loss = number_at(run.document["ablation"], "loss");
  return findings;
}

PhaseChange phase_change(const std::vector<RunFindings>& findings) {
  PhaseChange change;
  for (std::size_t i = 0; i < findings.size(); ++i) {
    if (!change.induction_run && findings[i].best_induction && *findings[i].best_induction > kInductionFormed) {
      change.induction_run = i;
    }
    if (!change.gap_run && findings[i].in_context_gap && *findings[i].in_context_gap >= kInContextGapFormed) {
      change.gap_run = i;
    }
  }
  return change;
}

std::vector<LabelChange> consecutive_label_changes(const Comparison& comparison) {
  std::vector<LabelChange> changes;
  for (std::size_t run = 1; run < comparison.runs.size(); ++run) {
    for (int layer = 0; layer < comparison.layers; ++layer) {
      for (int head = 0; head < comparison.heads; ++head) {
        if (auto change = label_change(comparison, layer, head, run - 1, run)) changes.push_back(std::move(*change));
      }
    }
  }
  return changes;
}

std::vector<LabelChange> overall_label_changes(const Comparison& comparison) {
  std::vector<LabelChange> changes;
  if (comparison.runs.size() < 2) return changes;
  for (int layer = 0; layer < comparison.layers; ++layer) {
    for (int head = 0; head < comparison.heads; ++head) {
      if (auto change = label_change(comparison, layer, head, 0, comparison.runs.size() - 1)) changes.push_back(std::move(*change));
    }
  }
  return changes;
}

bool primary_changed(const Comparison& comparison, int layer, int head) {
  const Json& first = comparison.runs.front().head(layer, head)["primary"];
  return std::any_of(comparison.runs.begin(), comparison.runs.end(),
                     [&](const CompareRun& run) { return run.head(layer, head)["primary"] != first; });
}

std::optional<double> trajectory_value(const Json* value) {
  return value ? scalar_score(*value) : std::nullopt;
}

const Json* run_score(const CompareRun& run, int layer, int head, const std::string& name) {
  const Json& scores = run.head(layer, head)["scores"];
  const auto found = scores.find(name);
  if (found == scores.end() || found->is_null()) return nullptr;
  return &*found;
}

}  // namespace headscan
