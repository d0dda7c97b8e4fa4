// run_analysis(): corpus → tokenizer → sequences → batches → instrumented forward → classifiers →
// heads.json (DESIGN.md, "Data flow").
#include <chrono>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "analyzer/analysis.h"
#include "analyzer/corpus.h"
#include "analyzer/errors.h"
#include "analyzer/model.h"
#include "analyzer/output_dir.h"
#include "analyzer/progress.h"
#include "analyzer/sequences.h"
#include "heads/registry.h"
#include "reports/heads_json.h"

namespace headscan {
namespace {

constexpr std::int64_t kDefaultMaxLength = 512;
constexpr double kCausalTolerance = 1e-6;  // weight above the diagonal still counted as none

struct BatchTensors {
  at::Tensor ids;      // [B, T] int64
  at::Tensor valid;    // [B, T] bool
  at::Tensor special;  // [B, T] bool
  std::int64_t tokens = 0;
};

// Right-pads to the longest sequence. Padding is never attended by real tokens: either the model
// takes an attention mask, or it is causal and padding comes after every real token.
BatchTensors to_tensors(const std::vector<Sequence>& batch, std::int64_t pad_id) {
  std::size_t length = 0;
  for (const auto& sequence : batch) length = std::max(length, sequence.ids.size());
  const auto rows = static_cast<std::int64_t>(batch.size());
  const auto columns = static_cast<std::int64_t>(length);
  BatchTensors tensors;
  tensors.ids = torch::full({rows, columns}, pad_id, torch::kInt64);
  tensors.valid = torch::zeros({rows, columns}, torch::kBool);
  tensors.special = torch::zeros({rows, columns}, torch::kBool);
  auto ids = tensors.ids.accessor<std::int64_t, 2>();
  auto valid = tensors.valid.accessor<bool, 2>();
  auto special = tensors.special.accessor<bool, 2>();
  for (std::int64_t b = 0; b < rows; ++b) {
    const Sequence& sequence = batch[b];
    for (std::size_t t = 0; t < sequence.ids.size(); ++t) {
      ids[b][t] = sequence.ids[t];
      valid[b][t] = true;
      special[b][t] = sequence.special[t] != 0;
    }
    tensors.tokens += static_cast<std::int64_t>(sequence.ids.size());
  }
  return tensors;
}

std::unique_ptr<Tokenizer> choose_tokenizer(const AnalysisOptions& options, const InstrumentedModel& model,
                                            std::string& description) {
  if (!options.tokenizer_path.empty()) {
    auto tokenizer = load_tokenizer_file(options.tokenizer_path);
    description = fmt::format("{} ({})", tokenizer->describe(), options.tokenizer_path);
    return tokenizer;
  }
  if (model.embedded_tokenizer().empty()) {
    throw InputError(fmt::format(
        "{}: no tokenizer: the archive holds no tokenizer.json; pass --tokenizer FILE (a Hugging Face "
        "tokenizer.json), or save it inside the model with torch.jit.save(m, path, "
        "_extra_files={{\"tokenizer.json\": text}})",
        model.path()));
  }
  const std::string origin = model.path() + ":tokenizer.json";
  auto tokenizer = tokenizer_from_hf_json(model.embedded_tokenizer(), origin);
  description = fmt::format("{} ({})", tokenizer->describe(), origin);
  return tokenizer;
}

// What one forward call over the first sequence shows about the model.
struct ModelShapeProbe {
  ModelShape shape;
  bool causal = true;
};

ModelShapeProbe probe_model(InstrumentedModel& model, const Sequence& first, bool takes_mask) {
  std::vector<std::int64_t> ids = first.ids;
  // Causality needs at least two positions.
  while (ids.size() < 2) ids.push_back(ids.back());
  const at::Tensor input = torch::tensor(ids, torch::kInt64).unsqueeze(0);
  const at::Tensor mask = torch::ones_like(input);
  ModelShapeProbe probe;
  model.forward(input, takes_mask ? &mask : nullptr, [&](int layer, const at::Tensor& attention) {
    if (layer == 0) probe.shape.heads = static_cast<int>(attention.size(1));
    if (attention.size(1) != probe.shape.heads) {
      throw InputError(fmt::format("attention layer {} has {} heads, layer 0 has {}; headscan needs the same "
                                   "number of (query) heads in every layer",
                                   layer, attention.size(1), probe.shape.heads));
    }
    probe.shape.layers = layer + 1;
    if (attention.triu(/*diagonal=*/1).abs().max().item<double>() > kCausalTolerance) probe.causal = false;
  });
  if (probe.shape.layers == 0) {
    throw InputError(fmt::format(
        "found no attention: the forward graph has {} softmax op(s), none of which produced "
        "probabilities over keys ([batch, heads, T, T], [batch*heads, T, T] or [batch, T, T]), and the "
        "output holds no attention tensors; export the model with eager attention "
        "(softmax(QK^T/sqrt(d)) computed explicitly)",
        model.softmax_count()));
  }
  return probe;
}

class Analysis {
 public:
  explicit Analysis(const AnalysisOptions& options) : options_(options), output_(options.output_dir, options.force) {}

  AnalysisSummary run();

 private:
  void load_model_and_tokenizer();
  // Reads documents until one yields a sequence; false at the end of the corpus.
  bool read_document(CorpusReader& reader, std::vector<Sequence>& sequences);
  void analyse(const std::vector<Sequence>& batch);

  const AnalysisOptions& options_;
  OutputDirectory output_;
  std::unique_ptr<InstrumentedModel> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  SequenceShape sequence_shape_;
  std::vector<std::unique_ptr<HeadClassifier>> classifiers_;
  ModelSummary model_summary_;
  CorpusSummary corpus_summary_;
  std::vector<std::string> warnings_;
  ModelShape shape_;
  bool causal_ = true;
  std::int64_t pad_id_ = 0;
};

void Analysis::load_model_and_tokenizer() {
  model_ = InstrumentedModel::load(options_.model_path);
  const ModelMetadata& metadata = model_->metadata();
  tokenizer_ = choose_tokenizer(options_, *model_, model_summary_.tokenizer);
  if (!metadata.bos_token.empty()) {
    sequence_shape_.bos_id = tokenizer_->token_to_id(metadata.bos_token);
    if (!sequence_shape_.bos_id) {
      throw InputError(fmt::format("{}:headscan.json: bos_token \"{}\" is not in the tokenizer's vocabulary ({}); "
                                   "fix bos_token or use the model's own tokenizer",
                                   model_->path(), metadata.bos_token, model_summary_.tokenizer));
    }
    pad_id_ = *sequence_shape_.bos_id;
  }
  sequence_shape_.max_length = options_.max_length > 0 ? options_.max_length
                               : metadata.max_length  ? *metadata.max_length
                                                      : kDefaultMaxLength;
  if (sequence_shape_.max_length < 2) {
    throw InputError(fmt::format("--max-length {}: sequences need at least 2 tokens", sequence_shape_.max_length));
  }
  if (options_.max_length == 0 && !metadata.max_length) {
    warnings_.push_back(fmt::format("{} has no max_length in headscan.json: sequences are cut at {} tokens "
                                    "(set --max-length to the model's context)",
                                    model_->path(), kDefaultMaxLength));
  }
}

bool Analysis::read_document(CorpusReader& reader, std::vector<Sequence>& sequences) {
  CorpusLine line;
  while (reader.next(line)) {
    sequences = make_sequences(tokenizer_->encode(line.text), *tokenizer_, sequence_shape_, line.line_number);
    if (!sequences.empty()) return true;
  }
  return false;
}

void Analysis::analyse(const std::vector<Sequence>& batch) {
  const BatchTensors tensors = to_tensors(batch, pad_id_);
  const at::Tensor mask = tensors.valid.to(torch::kInt64);
  const BatchContext context{tensors.ids, tensors.valid, tensors.special, causal_,
                             sequence_shape_.bos_id.has_value(), BatchSource::corpus};
  model_->forward(tensors.ids, &mask, [&](int layer, const at::Tensor& attention) {
    if (layer >= shape_.layers || attention.size(1) != shape_.heads) {
      throw std::runtime_error(fmt::format(
          "the model produced attention for layer {} with {} heads, but the first sequence showed {} layers "
          "of {} heads; models whose attention layers depend on the input are not supported",
          layer, attention.size(1), shape_.layers, shape_.heads));
    }
    for (auto& classifier : classifiers_) {
      if (classifier->wants_corpus()) classifier->observe(layer, attention, context);
    }
  });
  corpus_summary_.sequences += static_cast<std::int64_t>(batch.size());
  corpus_summary_.tokens += tensors.tokens;
}

AnalysisSummary Analysis::run() {
  const auto start = std::chrono::steady_clock::now();
  torch::NoGradGuard no_grad;
  if (options_.threads > 0) torch::set_num_threads(options_.threads);
  torch::manual_seed(options_.seed);

  load_model_and_tokenizer();
  classifiers_ = make_classifiers();
  const Thresholds thresholds = resolve_thresholds(classifiers_, options_.thresholds);

  CorpusReader reader(options_.corpus_path);
  std::vector<Sequence> sequences;
  if (!read_document(reader, sequences)) {
    throw InputError(fmt::format("{}: the corpus is empty: no line gives any token ({} lines read); give a "
                                 "text file with one document per line",
                                 reader.path(), reader.lines_read()));
  }

  try {
    const ModelShapeProbe probe = probe_model(*model_, sequences.front(), model_->takes_attention_mask());
    shape_ = probe.shape;
    causal_ = model_->metadata().causal.value_or(probe.causal);
    model_summary_.causal_source = model_->metadata().causal ? "metadata" : "detected";
  } catch (...) {
    rethrow_with_context(model_->path() + ": ");
  }
  for (auto& classifier : classifiers_) classifier->begin(shape_);

  // Causal models are padded too: no real query sees the padding after it.
  Batcher batcher(static_cast<std::size_t>(options_.batch_size), model_->takes_attention_mask() || causal_,
                  static_cast<std::size_t>(options_.batch_size) * 32);
  const bool by_sequences = options_.max_sequences > 0;
  Progress progress(options_.progress, by_sequences ? options_.max_sequences : reader.total_bytes(),
                    by_sequences ? "sequences" : "corpus");
  std::int64_t queued = 0;
  auto run_batches = [&](std::vector<std::vector<Sequence>> batches) {
    for (const auto& batch : batches) {
      try {
        analyse(batch);
      } catch (...) {
        rethrow_with_context(fmt::format("{} (corpus line {}): ", model_->path(), batch.front().line_number));
      }
      progress.update(by_sequences ? corpus_summary_.sequences : reader.bytes_read(), corpus_summary_.tokens);
    }
  };
  do {
    for (auto& sequence : sequences) {
      if (by_sequences && queued == options_.max_sequences) break;
      batcher.add(std::move(sequence));
      ++queued;
    }
    run_batches(batcher.take_ready());
    if (by_sequences && queued == options_.max_sequences) {
      corpus_summary_.truncated = true;
      break;
    }
  } while (read_document(reader, sequences));
  run_batches(batcher.flush());
  progress.finish(corpus_summary_.tokens);

  const ModelMetadata& metadata = model_->metadata();
  model_summary_.path = options_.model_path;
  model_summary_.name = metadata.name;
  model_summary_.layers = shape_.layers;
  model_summary_.heads = shape_.heads;
  model_summary_.kv_heads = metadata.n_kv_heads.value_or(shape_.heads);
  model_summary_.causal = causal_;
  model_summary_.capture = model_->capture_method();
  model_summary_.forward = model_->forward_schema();
  model_summary_.bos_token = metadata.bos_token;
  model_summary_.max_length = sequence_shape_.max_length;
  if (model_summary_.kv_heads <= 0 || shape_.heads % model_summary_.kv_heads != 0) {
    throw InputError(fmt::format("{}:headscan.json: n_kv_heads {} does not divide the {} query heads found",
                                 model_->path(), model_summary_.kv_heads, shape_.heads));
  }
  corpus_summary_.path = options_.corpus_path;
  corpus_summary_.lines = static_cast<std::int64_t>(reader.lines_read());
  corpus_summary_.documents = static_cast<std::int64_t>(reader.documents_read());
  corpus_summary_.lines_with_invalid_utf8 = static_cast<std::int64_t>(reader.lines_with_invalid_utf8());
  if (reader.lines_with_invalid_utf8() > 0) {
    warnings_.push_back(fmt::format("{}: {} line(s) had invalid UTF-8, replaced by U+FFFD ({} replacement(s))",
                                    reader.path(), reader.lines_with_invalid_utf8(),
                                    reader.invalid_utf8_replacements()));
  }
  if (corpus_summary_.truncated) {
    warnings_.push_back(fmt::format("stopped after --max-sequences {}", options_.max_sequences));
  }

  RunSummary run;
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.threads = torch::get_num_threads();
  run.batch_size = options_.batch_size;
  run.seed = options_.seed;
  const nlohmann::ordered_json document =
      make_heads_json(model_summary_, corpus_summary_, thresholds, classifiers_, run, warnings_);
  write_json_file(document, output_.staging() / "heads.json");
  output_.commit();

  AnalysisSummary summary;
  summary.output_dir = options_.output_dir;
  summary.layers = shape_.layers;
  summary.heads = shape_.heads;
  summary.sequences = corpus_summary_.sequences;
  summary.tokens = corpus_summary_.tokens;
  summary.seconds = run.seconds;
  for (const auto& head : document.at("heads")) ++summary.label_counts[head.at("primary").get<std::string>()];
  summary.warnings = warnings_;
  return summary;
}

}  // namespace

AnalysisSummary run_analysis(const AnalysisOptions& options) {
  if (options.batch_size < 1) throw InputError(fmt::format("--batch-size {}: must be at least 1", options.batch_size));
  Analysis analysis(options);
  return analysis.run();
}

}  // namespace headscan
