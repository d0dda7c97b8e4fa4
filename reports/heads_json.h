#pragma once
// heads.json (DESIGN.md, "heads.json"): the analysis as data, from which every other report is
// drawn.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "heads/head_type.h"

namespace headscan {

struct ModelSummary {
  std::string path;
  std::string format;  // "torchscript" or "exported program"
  std::string name;
  int layers = 0;
  int heads = 0;
  int kv_heads = 0;
  bool causal = true;
  std::string causal_source;  // "metadata" or "detected"
  std::string capture;        // "graph" or "outputs"
  std::string dtype;          // the dtype the model ran in: "float32", "bfloat16", "float16", …
  std::string forward;        // the forward schema
  std::string tokenizer;      // e.g. "WordLevel, 64 tokens (model.pt:tokenizer.json)"
  std::string bos_token;      // empty when sequences have no BOS
  std::int64_t max_length = 0;
  std::optional<std::int64_t> step;  // headscan.json's "step" (a training checkpoint), when given
  std::vector<double> repeat_loss;  // mean loss of each probe repeat; empty when unavailable
  std::string repeat_loss_note;     // why repeat_loss is unavailable
  // What the report lacks when the output is not logits (no language-model head); empty when it is.
  std::string lm_head_note;
};

struct ProbeSummary {
  int count = 0;
  int repeats = 0;
  std::vector<int> repeat_lengths;
  std::uint64_t seed = 0;
  std::string skipped_because;  // non-empty when no probes ran
};

struct CorpusSummary {
  std::string path;
  std::string format = "text";
  std::int64_t lines = 0;
  std::int64_t documents = 0;
  std::int64_t sequences = 0;
  std::int64_t tokens = 0;
  std::int64_t lines_with_invalid_utf8 = 0;
  bool truncated = false;  // stopped at --max-sequences
  std::string parser = "none";        // "link-grammar", "conllu" or "none"
  std::int64_t sentences = 0;         // sentences the parser saw
  std::int64_t parsed_sentences = 0;  // those with a dependency parse
  std::string idf_source;  // "corpus" or the --idf file
  std::int64_t idf_documents = 0;
};

// How the run saw attention (heads.json run.attention): through headscan's op in row blocks, or
// materialised whole by the model.
struct AttentionRunSummary {
  std::int64_t requested_rows = 0;  // --attention-block; 0: auto
  int blockwise_layers = 0;         // attention layers computed by headscan's op, in row blocks
  int materialised_layers = 0;      // softmaxes the model computes whole, [B, H, T, T]
  std::int64_t block_rows = 0;      // Q at the longest call through the op (0: none)
  std::int64_t block_length = 0;    // that call's length T
  std::int64_t block_bytes = 0;     // one block [B, H, Q, T] in float32 there
};

struct RunSummary {
  double seconds = 0;  // from start to the end of the last pass
  // Where the time went: loading, each pass, writing the reports, in seconds, in order.
  std::vector<std::pair<std::string, double>> phases;
  int threads = 0;
  std::int64_t batch_size = 0;
  std::uint64_t seed = 0;
  std::string device;       // where the model and the statistics ran: "cpu", "cuda:0"
  std::string device_name;  // the GPU's or CPU's name
  std::string dtype;        // the dtype the model ran in
  std::int64_t peak_device_memory = -1;  // bytes LibTorch's GPU allocator held at most; -1: not a GPU
  std::int64_t peak_host_memory = -1;    // the process's peak resident bytes; -1: not known
  std::optional<AttentionRunSummary> attention;  // absent in a merged run's document
};

// The document, with `heads` from ClassifierSet::finalize() (heads/classifier_set.h).
nlohmann::ordered_json make_heads_json(const ModelSummary& model, const CorpusSummary& corpus,
                                       const ProbeSummary& probes, const Thresholds& thresholds,
                                       nlohmann::ordered_json heads, const RunSummary& run, const std::vector<std::string>& warnings);

// (Re)writes the document's "run" section, e.g. once the reports' time is known.
void set_run(nlohmann::ordered_json& document, const RunSummary& run);

// Whether a head of the "heads" array carries `label` among its "labels".
bool has_label(const nlohmann::ordered_json& head, const char* label);

// Writes `document` as indented JSON; throws std::runtime_error when the file cannot be written.
void write_json_file(const nlohmann::ordered_json& document, const std::filesystem::path& path);

}  // namespace headscan
