// The end of a run (run_results.h): heads.json's document, the example sequences captured again,
// and the lines on --ablation's findings.
#include "analyzer/run/run_results.h"

#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/errors.h"
#include "analyzer/run/count_warnings.h"
#include "analyzer/run/model_output.h"
#include "analyzer/run/run_state.h"
#include "reports/heads_json.h"

namespace headscan {

nlohmann::ordered_json heads_document(RunState& state, const Thresholds& thresholds, const RunSummary& run) {
  const AnalysisOptions& options = state.options;
  const ModelMetadata& metadata = state.model->metadata();
  ModelSummary& model = state.model_summary;
  model.path = options.model_path;
  model.format = state.model->format();
  model.name = metadata.name;
  model.layers = state.shape.layers;
  model.heads = state.shape.heads;
  model.kv_heads = metadata.n_kv_heads.value_or(state.shape.heads);
  model.causal = state.shape.causal;
  model.causal_source = metadata.causal ? "metadata" : "detected";
  model.capture = state.model->capture_method();
  model.dtype = state.model->dtype();
  model.forward = state.model->forward_schema();
  model.max_length = state.text.shape.max_length;
  model.step = metadata.step;
  model.lm_head_note = missing_logits_note(state.shape, state.text.tokenizer->vocab_size());
  if (model.kv_heads <= 0 || state.shape.heads % model.kv_heads != 0) {
    throw InputError(fmt::format("{}:headscan.json: n_kv_heads {} does not divide the {} query heads found",
                                 state.model->path(), model.kv_heads, state.shape.heads));
  }
  CorpusSummary& corpus = state.corpus_summary;
  const DocumentReader& reader = *state.reader;
  const DocumentCounts& counts = reader.counts();
  corpus.path = options.corpus_path;
  corpus.format = reader.format();
  corpus.lines = static_cast<std::int64_t>(counts.lines_read);
  corpus.documents = static_cast<std::int64_t>(counts.documents_read);
  corpus.lines_with_invalid_utf8 = static_cast<std::int64_t>(counts.lines_with_invalid_utf8);
  corpus.parser = reader.parser();
  corpus.sentences = counts.sentences;
  corpus.parsed_sentences = counts.parsed_sentences;
  const std::vector<std::string> warnings =
      count_warnings(reader.path(), corpus, static_cast<std::int64_t>(counts.invalid_utf8_replacements), thresholds,
                     options.max_sequences);
  state.warnings.insert(state.warnings.end(), warnings.begin(), warnings.end());
  return make_heads_json(model, corpus, state.probe_summary, thresholds,
                         state.classifiers.finalize(thresholds, model.kv_heads), run, state.warnings);
}

void capture_examples_if_needed(RunState& state) {
  if (state.options.check_interrupt) state.options.check_interrupt();
  if (!state.options.examples_path.empty()) {
    const bool shard_without_examples = state.options.shard && state.options.shard->index != 0;
    state.corpus_examples.clear();
    if (!shard_without_examples) {
      state.corpus_examples = capture_examples(*state.model, state.example_prompts, *state.text.tokenizer,
                                               state.shape, "example");
    }
  }
  if (state.record_examples) return;
  if (!state.options.examples_path.empty()) {
    state.probe_examples =
        capture_examples(*state.model, state.probe_example_sequences, *state.text.tokenizer, state.shape, "probe");
    return;
  }
  state.corpus_examples = capture_examples(*state.model, state.corpus_example_chooser.chosen(), *state.text.tokenizer,
                                           state.shape, "corpus line");
  state.probe_examples =
      capture_examples(*state.model, state.probe_example_sequences, *state.text.tokenizer, state.shape, "probe");
}

std::vector<std::string> ablation_findings(const nlohmann::ordered_json& document) {
  const auto& ablation = document.at("ablation");
  std::vector<std::string> lines{fmt::format("ablation: {} loss {:.3f} nats on {} sequence(s)",
                                             ablation.at("objective").get<std::string>(),
                                             ablation.at("loss").get<double>(), ablation.at("sequences").get<std::size_t>())};
  const nlohmann::ordered_json* largest = nullptr;
  constexpr int kCircuitLines = 5;
  int circuits = 0;
  for (const auto& head : document.at("heads")) {
    if (largest == nullptr || head.at("scores").at("ablation_loss").get<double>() >
                                  largest->at("scores").at("ablation_loss").get<double>()) {
      largest = &head;
    }
    if (!head.contains("circuit") || head.at("circuit").at("depends_on").empty()) continue;
    if (++circuits > kCircuitLines) continue;
    const auto& strongest = head.at("circuit").at("depends_on").at(0);
    lines.push_back(fmt::format("circuit: L{}H{} ({}) depends most on L{}H{} (its {} score drops by {:.2f} without it)",
                                head.at("layer").get<int>(), head.at("head").get<int>(),
                                head.at("primary").get<std::string>(), strongest.at("layer").get<int>(),
                                strongest.at("head").get<int>(), head.at("circuit").at("score").get<std::string>(),
                                strongest.at("drop").get<double>()));
  }
  if (circuits > kCircuitLines) lines.push_back(fmt::format("… and {} more circuits in heads.json", circuits - kCircuitLines));
  if (largest != nullptr) {
    lines.insert(lines.begin() + 1, fmt::format("removing L{}H{} raises the loss most: {:+.3f} nats",
                                                largest->at("layer").get<int>(), largest->at("head").get<int>(),
                                                largest->at("scores").at("ablation_loss").get<double>()));
  }
  return lines;
}

}  // namespace headscan
