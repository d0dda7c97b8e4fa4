#include "analyzer/run/shard_run.h"

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/checked_file.h"
#include "analyzer/errors.h"
#include "analyzer/run/fingerprint.h"
#include "analyzer/run/output/output_dir.h"
#include "analyzer/run/passes/pass.h"
#include "analyzer/run/run_state.h"
#include "analyzer/run/shards/shard_state.h"
#include "heads/registry.h"
#include "reports/report_writer.h"

namespace headscan {
namespace {

class AblationSetPass : public Pass {
 public:
  const char* name() const override { return "ablation_set"; }
  std::optional<BatchSource> feeds() const override { return std::nullopt; }

  void run(RunState& state) override {
    const AnalysisOptions& options = state.options;
    // Windows and token ids do not depend on the parse.
    DocumentReader documents(options.corpus_path, "none", options.text_field);
    SequenceReader windows(documents, *state.text.tokenizer, state.text.shape, options.check_interrupt);
    std::vector<Sequence> sequences;
    std::size_t index = 0;
    while (index < static_cast<std::size_t>(options.ablation_sequences) &&
           windows.next(sequences, nullptr, options.ablation_sequences - static_cast<std::int64_t>(index))) {
      for (const Sequence& sequence : sequences) {
        if (index == static_cast<std::size_t>(options.ablation_sequences)) break;
        if (auto item = make_ablation_item(sequence, *state.objective, index, options.seed)) {
          state.ablation_items.push_back(std::move(*item));
        }
        ++index;
      }
    }
  }
};

// What every shard of one run must share.
nlohmann::ordered_json agreement(const RunState& state, const std::filesystem::path& idf_file) {
  const AnalysisOptions& options = state.options;
  nlohmann::ordered_json agree;
  agree["headscan_version"] = HEADSCAN_VERSION;
  agree["model"] = {{"sha256", file_sha256(options.model_path)}};
  agree["tokenizer"] = {{"description", state.text.tokenizer_description},
                        {"sha256", options.tokenizer_path.empty() ? "inside the model" : file_sha256(options.tokenizer_path)}};
  agree["corpus"] = {{"format", state.reader->format()}, {"sampled_sha256", sampled_file_sha256(options.corpus_path)}};
  agree["max_length"] = state.text.shape.max_length;
  agree["dtype"] = state.model->dtype();
  agree["seed"] = options.seed;
  // --probes: shard 0's probes are the run's, so every shard states the same.
  const auto probe_value = [](std::int64_t count) -> nlohmann::ordered_json {
    if (count == kPlannedProbes) return "default";
    if (count == 0) return "none";
    return count;
  };
  agree["probes"] = {{"induction", probe_value(options.probes.induction)}, {"needles", probe_value(options.probes.needles)}};
  // The batches, and so the float results, depend on it.
  agree["batch_size"] = options.batch_size;
  agree["parser"] = options.parser;
  agree["text_field"] = options.text_field;
  agree["thresholds"] = state.thresholds;
  agree["ablation"] = {{"on", options.ablation}, {"sequences", options.ablation ? options.ablation_sequences : 0}};
  agree["idf"] = {{"source", options.idf_path.empty() ? "corpus" : "file"}, {"sha256", file_sha256(idf_file.string())}};
  agree["shape"] = {{"layers", state.shape.layers}, {"heads", state.shape.heads}, {"causal", state.shape.causal}};
  return agree;
}

// Appends the examples' attention to `out` and describes them; `major` orders them across shards.
nlohmann::ordered_json save_examples(const std::vector<ExampleSequence>& examples, std::uint64_t major_base,
                                     bool major_is_line, const std::vector<Sequence>& sequences, CheckedFile& out,
                                     std::uint64_t& floats) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < examples.size(); ++i) {
    const ExampleSequence& example = examples[i];
    SavedExample saved;
    const std::uint64_t major = major_is_line && i < sequences.size() ? sequences[i].line_number : major_base;
    saved.key = {major, i};
    saved.source = example.source;
    saved.tokens = example.tokens;
    saved.special = example.special;
    saved.offset = floats;
    out.write(example.attention.data(), example.attention.size() * sizeof(float));
    floats += example.attention.size();
    list.push_back(saved_example_json(saved));
  }
  return list;
}

}  // namespace

void check_shard_options(const AnalysisOptions& options) {
  if (!options.shard) return;
  if (options.max_sequences > 0) {
    throw InputError(fmt::format("--max-sequences {} with --shard {}/{}: a shard cannot know where the first {} "
                                 "sequences of the corpus end; shard the whole corpus, or cut the corpus file",
                                 options.max_sequences, options.shard->index, options.shard->count,
                                 options.max_sequences));
  }
}

std::unique_ptr<Pass> make_ablation_set_pass() { return std::make_unique<AblationSetPass>(); }

void save_shard_state(RunState& state, const nlohmann::ordered_json& document, const std::vector<std::string>& warnings,
                      const RunSummary& run, const OutputDirectory& output) {
  const CorpusSlice slice = *state.options.shard;
  const std::filesystem::path idf_file = output.staging() / "idf.txt";
  state.frequencies->save(idf_file.string(), *state.text.tokenizer);

  nlohmann::ordered_json root;
  root["format"] = kShardStateFormat;
  root["version"] = kShardStateVersion;
  root["headscan_version"] = HEADSCAN_VERSION;
  root["shard"] = {{"index", slice.index}, {"count", slice.count}, {"slice", state.reader->slice_mode()}};
  root["agree"] = agreement(state, idf_file);
  root["shape"] = root["agree"]["shape"];

  const DocumentCounts& read = state.reader->counts();
  ShardCounts counts;
  counts.lines = static_cast<std::int64_t>(read.lines_read);
  counts.documents = static_cast<std::int64_t>(read.documents_read);
  counts.sequences = state.corpus_summary.sequences;
  counts.tokens = state.corpus_summary.tokens;
  counts.lines_with_invalid_utf8 = static_cast<std::int64_t>(read.lines_with_invalid_utf8);
  counts.invalid_utf8_replacements = static_cast<std::int64_t>(read.invalid_utf8_replacements);
  counts.sentences = read.sentences;
  counts.parsed_sentences = read.parsed_sentences;
  root["counts"] = counts_json(counts);
  root["statistics"] = nlohmann::ordered_json::parse(state.classifiers.save().dump());
  root["document"] = document;
  root["warnings"] = warnings;

  CheckedFile out(output.staging() / kShardExamplesFile);
  std::uint64_t floats = 0;
  const bool by_line = std::string_view(state.reader->slice_mode()) == "documents";
  root["examples"] = save_examples(state.corpus_examples, slice.index, by_line, state.corpus_example_chooser.chosen(),
                                   out, floats);
  root["probe_examples"] = save_examples(state.probe_examples, 0, false, {}, out, floats);
  out.close();
  root["example_floats"] = floats;
  root["seconds"] = run.seconds;
  nlohmann::ordered_json phases = nlohmann::ordered_json::object();
  for (const auto& [name, seconds] : run.phases) phases[name] = seconds;
  root["phases"] = std::move(phases);
  write_json_file(root, output.staging() / kShardStateFile);
}

}  // namespace headscan
