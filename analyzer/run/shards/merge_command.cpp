#include "analyzer/run/shards/merge_command.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/checked_file.h"
#include "analyzer/errors.h"
#include "analyzer/run/count_warnings.h"
#include "analyzer/run/kv_plan.h"
#include "analyzer/run/output/output_dir.h"
#include "analyzer/run/shards/shard_state.h"
#include "heads/classifier_set.h"
#include "heads/registry.h"
#include "heads/streaming.h"
#include "reports/heads_csv.h"
#include "reports/heads_json.h"
#include "reports/model_layers_json.h"
#include "reports/report_writer.h"

namespace headscan {
namespace {

namespace fs = std::filesystem;

static_assert(ExampleSequence::kMaxExampleTokens == kMaxSavedExampleTokens);
static_assert(ExampleSequence::kMaxExamples == kMaxSavedExamples);

// The shards' thresholds with the merge's --threshold overrides.
Thresholds merged_thresholds(const ShardState& first, const std::map<std::string, double>& overrides) {
  Thresholds thresholds;
  for (const auto& [name, value] : first.agree.at("thresholds").items()) thresholds[name] = value.get<double>();
  try {
    resolve_thresholds(thresholds);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}/{}: agree.thresholds holds a name that is not a threshold of headscan {} ({}); "
                                 "the state is damaged: run the shard again",
                                 first.directory, kShardStateFile, HEADSCAN_VERSION, e.what()));
  }
  for (const auto& [name, value] : overrides) {
    if ((name == kStreamingSink || name == kStreamingWindow) && thresholds.count(name) && thresholds.at(name) != value) {
      throw InputError(fmt::format("--threshold {}={}: the shards counted streaming statistics with {} = {}; a merge "
                                   "cannot change the sink or window (run the shards with --sink or --window instead)",
                                   name, value, name, thresholds.at(name)));
    }
    thresholds[name] = value;
  }
  return resolve_thresholds(thresholds);
}

// Shard 0 checked the plan its own heads gave (--ablation): its loss_delta stays when the merged
// plan is the same, and otherwise gives way to a note.
void keep_plan_check(const nlohmann::ordered_json& checked, nlohmann::ordered_json& document) {
  if (!checked.contains("loss_delta") && !checked.contains("loss_note")) return;
  if (!document.contains("kv_plan")) return;
  auto& plan = document["kv_plan"];
  if (checked.value("heads", nlohmann::ordered_json()) == plan.at("heads")) {
    for (const char* key : {"loss_delta", "loss_budget", "loss_note", "needles", "needles_note"}) {
      if (checked.contains(key)) plan[key] = checked.at(key);
    }
    return;
  }
  plan["loss_note"] = "shard 0 checked the plan its own heads gave, which differs from the merged plan; run --ablation "
                      "without shards to check this one";
}

// The sum of every shard's classifier statistics.
ClassifierSet merged_classifiers(const std::vector<ShardState>& shards) {
  const ShardState& first = shards.front();
  ClassifierSet classifiers;
  ModelShape shape;
  shape.layers = first.layers;
  shape.heads = first.heads;
  shape.causal = first.causal;
  classifiers.begin(shape);
  for (const ShardState& shard : shards) {
    try {
      classifiers.merge(shard.statistics);
    } catch (const nlohmann::json::exception& e) {
      throw InputError(fmt::format("{}: the shard's statistics are damaged ({}); run the shard again", shard.directory,
                                   e.what()));
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: the shard's statistics are damaged ({}); run the shard again", shard.directory,
                                   e.what()));
    }
  }
  return classifiers;
}

// The example sequences of the single run: the first ones of the corpus over all shards.
std::vector<ExampleSequence> load_examples(const std::vector<ShardState>& shards, bool probes) {
  struct Found {
    const ShardState* shard;
    const SavedExample* example;
  };
  std::vector<Found> found;
  for (const ShardState& shard : shards) {
    for (const SavedExample& example : probes ? shard.probe_examples : shard.examples) found.push_back({&shard, &example});
    if (probes) break;  // the probes ran in shard 0
  }
  std::stable_sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    return std::tie(a.example->key, a.shard->index) < std::tie(b.example->key, b.shard->index);
  });
  if (found.size() > ExampleSequence::kMaxExamples) found.resize(ExampleSequence::kMaxExamples);
  std::vector<ExampleSequence> examples;
  for (const Found& item : found) {
    ExampleSequence example;
    example.source = item.example->source;
    example.tokens = item.example->tokens;
    example.special = item.example->special;
    example.layers = item.shard->layers;
    example.heads = item.shard->heads;
    const std::size_t length = example.tokens.size();
    example.attention.resize(static_cast<std::size_t>(example.layers) * example.heads * length * length);
    const fs::path path = fs::path(item.shard->directory) / kShardExamplesFile;
    std::ifstream in(path, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(item.example->offset * sizeof(float)));
    in.read(reinterpret_cast<char*>(example.attention.data()),
            static_cast<std::streamsize>(example.attention.size() * sizeof(float)));
    if (!in) throw std::runtime_error(fmt::format("{}: cannot be read", path.string()));
    examples.push_back(std::move(example));
  }
  return examples;
}

// The merged heads: scores and labels from the summed statistics, numbered by the model's layer
// index as the shards were; the causal passes' scores and circuits (shard 0's) carried over in the
// order a single run writes them.
nlohmann::ordered_json merged_heads(const ClassifierSet& classifiers, const Thresholds& thresholds,
                                    const ShardState& first) {
  const nlohmann::ordered_json& first_document = first.document;
  const int kv_heads = first_document.at("model").value("kv_heads", 0);
  nlohmann::ordered_json heads = classifiers.finalize(thresholds, kv_heads);
  number_heads(heads, first.layer_numbering);
  const auto& shard_heads = first_document.at("heads");
  if (shard_heads.size() != heads.size()) {
    throw InputError("shard 0's heads.json does not match its statistics: the state is damaged; run the shard again");
  }
  for (std::size_t index = 0; index < heads.size(); ++index) {
    const auto& from = shard_heads.at(index);
    auto& head = heads.at(index);
    if (!from.is_object() || !from.contains("scores") || !from.at("scores").is_object()) continue;
    for (const auto& [name, value] : from.at("scores").items()) {
      if (!head.at("scores").contains(name)) head["scores"][name] = value;
    }
    if (from.contains("circuit")) head["circuit"] = from.at("circuit");
  }
  return heads;
}

}  // namespace

MergeSummary run_merge(const MergeOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<ShardState> read;
  for (const std::string& directory : options.shard_directories) read.push_back(read_shard_state(directory));
  const std::vector<ShardState> shards = order_shards(std::move(read));
  const ShardState& first = shards.front();
  const Thresholds thresholds = merged_thresholds(first, options.thresholds);
  std::vector<std::string> inputs = options.shard_directories;
  OutputDirectory output(options.output_dir, options.force, inputs);

  const ClassifierSet classifiers = merged_classifiers(shards);
  ShardCounts counts;
  RunSummary run;
  std::map<std::string, double> phase_seconds;
  std::vector<std::string> phase_order;
  for (const ShardState& shard : shards) {
    counts.add(shard.counts);
    run.seconds += shard.seconds;
    for (const auto& [name, seconds] : shard.phases) {
      if (!phase_seconds.count(name)) phase_order.push_back(name);
      phase_seconds[name] += seconds;
    }
  }

  nlohmann::ordered_json document = first.document;
  nlohmann::ordered_json heads;
  CorpusSummary corpus;
  try {
    auto& section = document.at("corpus");
    section["lines"] = counts.lines;
    section["documents"] = counts.documents;
    section["sequences"] = counts.sequences;
    section["tokens"] = counts.tokens;
    section["lines_with_invalid_utf8"] = counts.lines_with_invalid_utf8;
    section["sentences"] = counts.sentences;
    section["parsed_sentences"] = counts.parsed_sentences;
    corpus.lines_with_invalid_utf8 = counts.lines_with_invalid_utf8;
    corpus.parser = section.at("parser").get<std::string>();
    corpus.sentences = counts.sentences;
    corpus.parsed_sentences = counts.parsed_sentences;
    document["thresholds"] = thresholds;
    heads = merged_heads(classifiers, thresholds, first);
    std::vector<std::string> warnings = first.warnings;
    const auto more = count_warnings(section.at("path").get<std::string>(), corpus, counts.invalid_utf8_replacements,
                                     thresholds, 0);
    warnings.insert(warnings.end(), more.begin(), more.end());
    document["heads"] = heads;
    document["warnings"] = warnings;
    const nlohmann::ordered_json checked = document.value("kv_plan", nlohmann::ordered_json::object());
    add_head_summary(document);
    keep_plan_check(checked, document);
    const auto& shard_run = first.document.value("run", nlohmann::ordered_json::object());
    run.threads = shard_run.value("threads", 0);
    run.batch_size = shard_run.value("batch_size", std::int64_t{0});
    run.seed = shard_run.value("seed", std::uint64_t{0});
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: the shard's heads.json is damaged ({}); run the shard again", first.directory,
                                 e.what()));
  }
  if (document.contains("ablation") && thresholds != merged_thresholds(first, {})) {
    document["warnings"].push_back(
        "the circuits under \"ablation\" were found for the labels of the shards' thresholds; --threshold changed "
        "them in this merge");
  }

  for (const std::string& name : phase_order) run.phases.emplace_back(name, phase_seconds[name]);

  double merge_seconds = 0;
  output.write([&](const fs::path& staging) {
    copy_checked_file(fs::path(first.directory) / "idf.txt", staging / "idf.txt");
    if (options.html || options.plots) {
      write_reports(staging, document, load_examples(shards, false), load_examples(shards, true),
                    ReportOptions{options.html, options.plots});
    }
    merge_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    run.phases.emplace_back("merge", merge_seconds);
    set_run(document, run);
    document["run"]["shards"] = shards.size();
    write_json_file(document, staging / "heads.json");
    write_heads_csv(document, staging / "heads.csv");
    write_kv_plan_files(document, staging / "kv_plan");
  });
  output.commit();

  MergeSummary summary;
  summary.output_dir = options.output_dir;
  summary.shards = shards.size();
  summary.layers = first.layers;
  summary.heads = first.heads;
  summary.sequences = counts.sequences;
  summary.tokens = counts.tokens;
  summary.shard_seconds = run.seconds;
  summary.seconds = merge_seconds;
  for (const auto& head : heads) ++summary.label_counts[head.at("primary").get<std::string>()];
  summary.warnings = document["warnings"].get<std::vector<std::string>>();
  summary.warnings.insert(summary.warnings.end(), output.notes().begin(), output.notes().end());
  return summary;
}

}  // namespace headscan
