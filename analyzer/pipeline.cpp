// run_analysis(): corpus → tokenizer → sequences → batches → instrumented forward → classifiers →
// probes → heads.json and reports (DESIGN.md, "Data flow").
#include <chrono>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "analyzer/analysis.h"
#include "analyzer/batch_tensors.h"
#include "analyzer/documents.h"
#include "analyzer/document_frequencies.h"
#include "analyzer/errors.h"
#include "analyzer/examples.h"
#include "analyzer/model.h"
#include "analyzer/model_shape.h"
#include "analyzer/output_dir.h"
#include "analyzer/probes.h"
#include "analyzer/progress.h"
#include "analyzer/sequences.h"
#include "analyzer/word_alignment.h"
#include "heads/registry.h"
#include "heads/row_summary.h"
#include "reports/heads_json.h"
#include "reports/report_writer.h"

namespace headscan {
namespace {

constexpr std::int64_t kDefaultMaxLength = 512;
// Fewer parsed sentences than this give too few arcs for most relations to reach their support.
constexpr std::int64_t kFewParsedSentences = 50;

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

class Analysis {
 public:
  explicit Analysis(const AnalysisOptions& options) : options_(options), output_(options.output_dir, options.force) {}

  AnalysisSummary run();

 private:
  void load_model_and_tokenizer();
  // Reads documents until one yields a sequence; false at the end of the corpus.
  bool read_document(DocumentReader& reader, std::vector<Sequence>& sequences, DocumentFrequencies* frequencies);
  DocumentFrequencies count_document_frequencies();
  void corpus_pass(DocumentReader& reader, std::vector<Sequence> first_sequences);
  void probe_pass();
  // Runs one batch and hands every layer's attention to the classifiers of its source.
  ForwardOutput analyse(const std::vector<Sequence>& batch, BatchSource source, std::int64_t batch_index);
  nlohmann::ordered_json finish(const Thresholds& thresholds, const DocumentReader& reader, double seconds);
  // Syntactic labels need parses: say so when few or none were had.
  void warn_about_parses(const DocumentCounts& counts, const Thresholds& thresholds);

  const AnalysisOptions& options_;
  OutputDirectory output_;
  std::unique_ptr<InstrumentedModel> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  SequenceShape sequence_shape_;
  std::vector<std::unique_ptr<HeadClassifier>> classifiers_;
  ModelSummary model_summary_;
  CorpusSummary corpus_summary_;
  ProbeSummary probe_summary_;
  std::vector<std::string> warnings_;
  ModelShape shape_;
  std::int64_t pad_id_ = 0;
  at::Tensor idf_table_;  // [V] float
  ProbeSet probes_;
  ExampleChooser examples_;
  // Causal models: the examples' attention is recorded in the corpus and probe passes (the top-left
  // corner of a sequence's attention is its prefix's); other models run the examples again.
  bool record_examples_ = false;
  std::vector<ExampleSequence> corpus_examples_;
  std::vector<ExampleSequence> probe_examples_;
  std::vector<Sequence> probe_example_sequences_;
};

void Analysis::load_model_and_tokenizer() {
  model_ = InstrumentedModel::load(options_.model_path);
  const ModelMetadata& metadata = model_->metadata();
  tokenizer_ = choose_tokenizer(options_, *model_, model_summary_.tokenizer);
  // The same BOS as `headscan tokenize` shows: headscan.json's, else the tokenizer template's.
  if (const auto bos = choose_bos(*tokenizer_, metadata.bos_token, model_->path() + ":headscan.json")) {
    sequence_shape_.bos_id = bos->id;
    model_summary_.bos_token = bos->token;
    pad_id_ = bos->id;
  }
  sequence_shape_.max_length = options_.max_length > 0 ? options_.max_length
                               : metadata.max_length  ? *metadata.max_length
                                                      : kDefaultMaxLength;
  if (options_.max_length == 0 && !metadata.max_length) {
    warnings_.push_back(fmt::format("{} has no max_length in headscan.json: sequences are cut at {} tokens "
                                    "(set --max-length to the model's context)",
                                    model_->path(), kDefaultMaxLength));
  }
}

bool Analysis::read_document(DocumentReader& reader, std::vector<Sequence>& sequences,
                             DocumentFrequencies* frequencies) {
  Document document;
  while (reader.next(document)) {
    const std::vector<Token> tokens = tokenizer_->encode(document.text);
    sequences = make_sequences(tokens, *tokenizer_, sequence_shape_, document.line_number);
    if (sequences.empty()) continue;
    if (document.parse) {
      const std::vector<int> token_word = align_tokens_to_words(tokens, document.text, *document.parse, *tokenizer_);
      attach_words(sequences, token_word, *document.parse, sequence_shape_);
    }
    if (frequencies != nullptr) frequencies->add_document(tokens, *tokenizer_);
    return true;
  }
  return false;
}

// idf over the documents the analysis will read: a tokenizer-only pass before the model runs.
DocumentFrequencies Analysis::count_document_frequencies() {
  if (!options_.idf_path.empty()) {
    corpus_summary_.idf_source = options_.idf_path;
    return DocumentFrequencies::load(options_.idf_path, *tokenizer_);
  }
  corpus_summary_.idf_source = "corpus";
  DocumentFrequencies frequencies(tokenizer_->vocab_size());
  DocumentReader reader(options_.corpus_path, "none");
  std::vector<Sequence> sequences;
  std::int64_t counted = 0;
  while ((options_.max_sequences == 0 || counted < options_.max_sequences) &&
         read_document(reader, sequences, &frequencies)) {
    counted += static_cast<std::int64_t>(sequences.size());
  }
  return frequencies;
}

ForwardOutput Analysis::analyse(const std::vector<Sequence>& batch, BatchSource source, std::int64_t batch_index) {
  const BatchTensors tensors = to_tensors(batch, pad_id_, idf_table_);
  std::vector<const SequenceWords*> words;
  bool any_words = false;
  for (const Sequence& sequence : batch) {
    words.push_back(sequence.words.get());
    any_words = any_words || sequence.words != nullptr;
  }
  RowSummaryCache rows;
  const BatchContext context{tensors.ids, tensors.valid, tensors.special, tensors.idf, shape_.causal,
                             sequence_shape_.bos_id.has_value(), source, batch_index,
                             any_words ? &words : nullptr, &rows};
  ForwardOutput output = model_->forward(tensors.ids, &tensors.mask, [&](int layer, const at::Tensor& attention) {
    if (layer >= shape_.layers || attention.size(1) != shape_.heads) {
      throw std::runtime_error(fmt::format(
          "the model produced attention for layer {} with {} heads, but the first sequence showed {} layers "
          "of {} heads; models whose attention layers depend on the input are not supported",
          layer, attention.size(1), shape_.layers, shape_.heads));
    }
    for (auto& classifier : classifiers_) {
      const bool wanted = source == BatchSource::corpus ? classifier->wants_corpus() : classifier->wants_probes();
      if (wanted) classifier->observe(layer, attention, context);
    }
    if (record_examples_) {
      auto& examples = source == BatchSource::corpus ? corpus_examples_ : probe_examples_;
      for (std::size_t b = 0; b < batch.size(); ++b) {
        const int example = batch[b].example;
        if (example >= 0 && example < static_cast<int>(examples.size())) {
          record_example_attention(examples[static_cast<std::size_t>(example)], layer,
                                   attention[static_cast<std::int64_t>(b)]);
        }
      }
    }
  });
  if (source == BatchSource::corpus) {
    corpus_summary_.sequences += static_cast<std::int64_t>(batch.size());
    corpus_summary_.tokens += tensors.tokens;
  }
  return output;
}

void Analysis::corpus_pass(DocumentReader& reader, std::vector<Sequence> sequences) {
  // Causal models are padded too: no real query sees the padding after it.
  const auto batch_size = static_cast<std::size_t>(options_.batch_size);
  Batcher batcher(batch_size, model_->takes_attention_mask() || shape_.causal, batch_size * 32);
  const bool by_sequences = options_.max_sequences > 0;
  Progress progress(options_.progress, by_sequences ? options_.max_sequences : reader.total_bytes(),
                    by_sequences ? "sequences" : "corpus");
  std::int64_t queued = 0;
  std::int64_t batch_index = 0;
  auto run_batches = [&](std::vector<std::vector<Sequence>> batches) {
    for (const auto& batch : batches) {
      try {
        analyse(batch, BatchSource::corpus, batch_index++);
      } catch (...) {
        rethrow_with_context(fmt::format("{} (corpus line {}): ", model_->path(), batch.front().line_number));
      }
      progress.update(by_sequences ? corpus_summary_.sequences : reader.counts().bytes_read, corpus_summary_.tokens);
    }
  };
  do {
    for (auto& sequence : sequences) {
      if (by_sequences && queued == options_.max_sequences) break;
      examples_.offer(sequence);
      if (record_examples_ && sequence.example >= 0) {
        corpus_examples_.push_back(make_example(examples_.chosen().back(), *tokenizer_, shape_, "corpus line"));
      }
      batcher.add(std::move(sequence));
      ++queued;
    }
    run_batches(batcher.take_ready());
    if (by_sequences && queued == options_.max_sequences) {
      corpus_summary_.truncated = true;
      break;
    }
  } while (read_document(reader, sequences, nullptr));
  run_batches(batcher.flush());
  progress.finish(corpus_summary_.tokens);
}

void Analysis::probe_pass() {
  probes_ = make_probes(*tokenizer_, sequence_shape_.bos_id, sequence_shape_.max_length, options_.seed);
  probe_summary_.seed = options_.seed;
  probe_summary_.count = static_cast<int>(probes_.sequences.size());
  probe_summary_.repeats = probes_.repeats;
  probe_summary_.repeat_lengths = probes_.repeat_lengths;
  probe_summary_.skipped_because = probes_.skipped_because;
  if (probes_.sequences.empty()) {
    warnings_.push_back("no probe sequences, so no induction or duplicate-token scores: " + probes_.skipped_because);
    model_summary_.repeat_loss_note = "no probe sequences";
    return;
  }
  ExampleChooser chooser;
  chooser.offer(probes_.sequences.front());
  probe_example_sequences_ = chooser.chosen();
  if (record_examples_) {
    probe_examples_.push_back(make_example(probe_example_sequences_.front(), *tokenizer_, shape_, "probe"));
  }
  const auto batch_size = static_cast<std::size_t>(options_.batch_size);
  Batcher batcher(batch_size, model_->takes_attention_mask() || shape_.causal, probes_.sequences.size());
  for (const Sequence& probe : probes_.sequences) batcher.add(probe);
  RepeatLoss repeat_loss(probes_.repeats);
  std::int64_t batch_index = 0;
  bool have_logits = true;
  for (const auto& batch : batcher.flush()) {
    ForwardOutput output;
    try {
      output = analyse(batch, BatchSource::probe, batch_index++);
    } catch (...) {
      rethrow_with_context(fmt::format("{} (probe sequences): ", model_->path()));
    }
    have_logits = have_logits && output.logits && output.logits->size(2) >= tokenizer_->vocab_size();
    if (have_logits) repeat_loss.add(*output.logits, batch, probes_, sequence_shape_.bos_id.has_value());
  }
  if (have_logits) {
    model_summary_.repeat_loss = repeat_loss.mean();
  } else {
    model_summary_.repeat_loss_note =
        "the model's output is not logits [batch, tokens, vocabulary] (alone or first in a tuple)";
  }
}

nlohmann::ordered_json Analysis::finish(const Thresholds& thresholds, const DocumentReader& reader, double seconds) {
  const ModelMetadata& metadata = model_->metadata();
  model_summary_.path = options_.model_path;
  model_summary_.name = metadata.name;
  model_summary_.layers = shape_.layers;
  model_summary_.heads = shape_.heads;
  model_summary_.kv_heads = metadata.n_kv_heads.value_or(shape_.heads);
  model_summary_.causal = shape_.causal;
  model_summary_.causal_source = metadata.causal ? "metadata" : "detected";
  model_summary_.capture = model_->capture_method();
  model_summary_.forward = model_->forward_schema();
  model_summary_.max_length = sequence_shape_.max_length;
  if (model_summary_.kv_heads <= 0 || shape_.heads % model_summary_.kv_heads != 0) {
    throw InputError(fmt::format("{}:headscan.json: n_kv_heads {} does not divide the {} query heads found",
                                 model_->path(), model_summary_.kv_heads, shape_.heads));
  }
  corpus_summary_.path = options_.corpus_path;
  const DocumentCounts& counts = reader.counts();
  corpus_summary_.format = reader.format();
  corpus_summary_.lines = static_cast<std::int64_t>(counts.lines_read);
  corpus_summary_.documents = static_cast<std::int64_t>(counts.documents_read);
  corpus_summary_.lines_with_invalid_utf8 = static_cast<std::int64_t>(counts.lines_with_invalid_utf8);
  corpus_summary_.parser = reader.parser();
  corpus_summary_.sentences = counts.sentences;
  corpus_summary_.parsed_sentences = counts.parsed_sentences;
  if (counts.lines_with_invalid_utf8 > 0) {
    warnings_.push_back(fmt::format("{}: {} line(s) had invalid UTF-8, replaced by U+FFFD ({} replacement(s))",
                                    reader.path(), counts.lines_with_invalid_utf8, counts.invalid_utf8_replacements));
  }
  warn_about_parses(counts, thresholds);
  if (corpus_summary_.truncated) {
    warnings_.push_back(fmt::format("stopped after --max-sequences {}", options_.max_sequences));
  }
  RunSummary run;
  run.seconds = seconds;
  run.threads = torch::get_num_threads();
  run.batch_size = options_.batch_size;
  run.seed = options_.seed;
  return make_heads_json(model_summary_, corpus_summary_, probe_summary_, thresholds, classifiers_, run, warnings_);
}

void Analysis::warn_about_parses(const DocumentCounts& counts, const Thresholds& thresholds) {
  if (corpus_summary_.parser == "none") {
    warnings_.push_back("no dependency parses (--parser none), so no syntactic scores: give plain English text "
                        "to parse with link-grammar, or a CoNLL-U corpus (.conllu)");
  } else if (counts.parsed_sentences < kFewParsedSentences) {
    warnings_.push_back(fmt::format(
        "{} parsed {} of {} sentence(s): syntactic labels need parses (support of {} arcs per relation); "
        "link-grammar parses English only, so for other languages give a CoNLL-U corpus (.conllu) from a parser "
        "for that language",
        corpus_summary_.parser, counts.parsed_sentences, counts.sentences, thresholds.at("syntactic_support")));
  }
}

AnalysisSummary Analysis::run() {
  const auto start = std::chrono::steady_clock::now();
  torch::NoGradGuard no_grad;
  if (options_.threads > 0) torch::set_num_threads(options_.threads);

  load_model_and_tokenizer();
  classifiers_ = make_classifiers();
  const Thresholds thresholds = resolve_thresholds(classifiers_, options_.thresholds);

  DocumentReader reader(options_.corpus_path, options_.parser);
  std::vector<Sequence> sequences;
  if (!read_document(reader, sequences, nullptr)) {
    throw InputError(fmt::format("{}: the corpus is empty: no {} gives any token ({} lines read); give a "
                                 "text file with one document per line, or a CoNLL-U file ending in .conllu",
                                 reader.path(), std::string(reader.format()) == "conllu" ? "sentence" : "line",
                                 reader.counts().lines_read));
  }
  try {
    shape_ = detect_model_shape(*model_, sequences.front());
  } catch (...) {
    rethrow_with_context(model_->path() + ": ");
  }
  for (auto& classifier : classifiers_) classifier->begin(shape_);
  record_examples_ = shape_.causal && (options_.html || options_.plots);

  const DocumentFrequencies frequencies = count_document_frequencies();
  corpus_summary_.idf_documents = frequencies.documents();
  std::vector<float> idf = frequencies.idf_table();
  idf_table_ = torch::tensor(idf, torch::kFloat);

  corpus_pass(reader, std::move(sequences));
  probe_pass();

  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const nlohmann::ordered_json document = finish(thresholds, reader, seconds);
  write_json_file(document, output_.staging() / "heads.json");
  frequencies.save((output_.staging() / "idf.txt").string(), *tokenizer_);
  if (options_.html || options_.plots) {
    if (!record_examples_) {
      corpus_examples_ = capture_examples(*model_, examples_.chosen(), *tokenizer_, shape_, "corpus line");
      probe_examples_ = capture_examples(*model_, probe_example_sequences_, *tokenizer_, shape_, "probe");
    }
    write_reports(output_.staging(), document, corpus_examples_, probe_examples_,
                  ReportOptions{options_.html, options_.plots});
  }
  output_.commit();

  AnalysisSummary summary;
  summary.output_dir = options_.output_dir;
  summary.layers = shape_.layers;
  summary.heads = shape_.heads;
  summary.sequences = corpus_summary_.sequences;
  summary.tokens = corpus_summary_.tokens;
  summary.seconds = seconds;
  for (const auto& head : document.at("heads")) ++summary.label_counts[head.at("primary").get<std::string>()];
  summary.warnings = warnings_;
  return summary;
}

}  // namespace

AnalysisSummary run_analysis(const AnalysisOptions& options) {
  if (options.batch_size < 1) throw InputError(fmt::format("--batch-size {}: must be at least 1", options.batch_size));
  if (options.max_length != 0 && options.max_length < 2) {
    throw InputError(fmt::format("--max-length {}: sequences need at least 2 tokens", options.max_length));
  }
  Analysis analysis(options);
  return analysis.run();
}

}  // namespace headscan
