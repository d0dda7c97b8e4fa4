#include "reports/heads_json.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/checked_file.h"

namespace headscan {

nlohmann::ordered_json make_heads_json(const ModelSummary& model, const CorpusSummary& corpus,
                                       const ProbeSummary& probes, const Thresholds& thresholds,
                                       nlohmann::ordered_json heads, const RunSummary& run,
                                       const std::vector<std::string>& warnings) {
  nlohmann::ordered_json document;
  document["headscan_version"] = HEADSCAN_VERSION;
  document["model"] = {{"path", model.path},
                       {"format", model.format},
                       {"name", model.name},
                       {"layers", model.layers},
                       {"heads", model.heads},
                       {"kv_heads", model.kv_heads},
                       {"causal", model.causal},
                       {"causal_source", model.causal_source},
                       {"capture", model.capture},
                       {"dtype", model.dtype},
                       {"forward", model.forward},
                       {"tokenizer", model.tokenizer},
                       {"bos_token", model.bos_token.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(model.bos_token)},
                       {"max_length", model.max_length}};
  if (model.step) document["model"]["step"] = *model.step;
  if (!model.lm_head_note.empty()) {
    document["model"]["lm_head"] = false;
    document["model"]["lm_head_note"] = model.lm_head_note;
  }
  if (model.repeat_loss.empty()) {
    document["model"]["repeat_loss"] = nullptr;
    document["model"]["repeat_loss_note"] = "unavailable: " + model.repeat_loss_note;
  } else {
    nlohmann::ordered_json losses = nlohmann::ordered_json::array();
    for (double loss : model.repeat_loss) losses.push_back(std::round(loss * 1e4) / 1e4);
    document["model"]["repeat_loss"] = std::move(losses);
  }
  document["corpus"] = {{"path", corpus.path},
                        {"format", corpus.format},
                        {"lines", corpus.lines},
                        {"documents", corpus.documents},
                        {"sequences", corpus.sequences},
                        {"tokens", corpus.tokens},
                        {"lines_with_invalid_utf8", corpus.lines_with_invalid_utf8},
                        {"truncated", corpus.truncated},
                        {"parser", corpus.parser},
                        {"sentences", corpus.sentences},
                        {"parsed_sentences", corpus.parsed_sentences},
                        {"idf", {{"source", corpus.idf_source}, {"documents", corpus.idf_documents}}}};
  document["probes"] = {{"count", probes.count},
                        {"repeats", probes.repeats},
                        {"repeat_lengths", probes.repeat_lengths},
                        {"seed", probes.seed}};
  if (!probes.skipped_because.empty()) document["probes"]["skipped_because"] = probes.skipped_because;
  document["thresholds"] = thresholds;

  document["heads"] = std::move(heads);
  document["warnings"] = warnings;
  set_run(document, run);
  return document;
}

void set_run(nlohmann::ordered_json& document, const RunSummary& run) {
  const double tokens = document.at("corpus").at("tokens").get<double>();
  const double rate = run.seconds > 0 ? tokens / run.seconds : 0.0;
  document["run"] = {{"seconds", std::round(run.seconds * 1000) / 1000},
                     {"tokens_per_second", std::round(rate)},
                     {"threads", run.threads},
                     {"batch_size", run.batch_size},
                     {"seed", run.seed}};
  if (!run.device.empty()) {
    document["run"]["device"] = run.device;
    document["run"]["device_name"] = run.device_name;
    document["run"]["dtype"] = run.dtype;
  }
  if (run.peak_device_memory >= 0) document["run"]["peak_device_memory_bytes"] = run.peak_device_memory;
  if (run.peak_host_memory >= 0) document["run"]["peak_host_memory_bytes"] = run.peak_host_memory;
  if (run.attention) {
    const AttentionRunSummary& attention = *run.attention;
    nlohmann::ordered_json block = nullptr;
    if (attention.block_rows > 0) {
      block = {{"rows", attention.block_rows}, {"length", attention.block_length}, {"bytes", attention.block_bytes}};
    }
    document["run"]["attention"] = {
        {"block_rows_requested", attention.requested_rows > 0 ? nlohmann::ordered_json(attention.requested_rows)
                                                              : nlohmann::ordered_json("auto")},
        {"blockwise_layers", attention.blockwise_layers},
        {"materialised_layers", attention.materialised_layers},
        {"largest_block", std::move(block)}};
  }
  if (!run.phases.empty()) {
    nlohmann::ordered_json phases = nlohmann::ordered_json::object();
    for (const auto& [name, seconds] : run.phases) phases[name] = std::round(seconds * 1000) / 1000;
    document["run"]["phases"] = std::move(phases);
  }
}

bool has_label(const nlohmann::ordered_json& head, const char* label) {
  const auto& labels = head.at("labels");
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

void write_json_file(const nlohmann::ordered_json& document, const std::filesystem::path& path) {
  write_checked_file(path, document.dump(2) + '\n');
}

}  // namespace headscan
