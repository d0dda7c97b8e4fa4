// The start of a run (run_setup.h): the model and its text setup loaded, the corpus opened and the
// model's shape detected on its first sequence.
#include "analyzer/run/run_setup.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include "analyzer/corpus/parse_pool.h"
#include "analyzer/errors.h"
#include "analyzer/run/run_state.h"
#include "analyzer/tokenizers/piece_text.h"

namespace headscan {
namespace {

// Past kMaterialisedWarningLength tokens, attention the model materialises itself ([B, H, T, T] per
// layer: an eager softmax, soft-capping, sinks, differential attention) grows with T²; headscan's op
// bounds only the SDPA calls it computes.
constexpr std::int64_t kMaterialisedWarningLength = 4096;

}  // namespace

void load_model_and_text(RunState& state, const c10::Device& device) {
  const AnalysisOptions& options = state.options;
  // --device auto: a model that cannot move runs where it is, and the run
  // follows it (InstrumentedModel::device()).
  state.model = InstrumentedModel::load(options.model_path, options.dtype, device, options.device != "auto");
  state.model->set_attention_block(options.attention_block);
  const ModelMetadata& metadata = state.model->metadata();
  state.text = resolve_text_setup(TextSources{options.tokenizer_path, options.model_path,
                                              state.model->embedded_tokenizer(), &metadata, options.max_length});
  state.model_summary.tokenizer = state.text.tokenizer_description;
  if (state.text.bos) {
    state.model_summary.bos_token = state.text.bos->token;
    state.pad_id = state.text.bos->id;
  }
  state.warnings.insert(state.warnings.end(), state.text.warnings.begin(), state.text.warnings.end());
  std::vector<std::uint8_t> punctuation = punctuation_ids(*state.text.tokenizer);
  state.punctuation_table = torch::from_blob(punctuation.data(), {static_cast<std::int64_t>(punctuation.size())},
                                             torch::kUInt8)
                                .to(torch::kBool)
                                .to(state.model->device());
}

AttentionRunSummary attention_summary(const RunState& state) {
  AttentionRunSummary summary;
  summary.requested_rows = state.options.attention_block;
  summary.blockwise_layers = std::min(state.model->blockwise_attention_count(), state.shape.layers);
  summary.materialised_layers = state.shape.layers - summary.blockwise_layers;
  const AttentionBlockUse use = state.model->attention_block_use();
  summary.block_rows = use.rows;
  summary.block_length = use.length;
  summary.block_bytes = use.block_bytes;
  return summary;
}

void warn_of_materialised_attention(RunState& state) {
  const std::int64_t length = state.text.shape.max_length;
  const int materialised = attention_summary(state).materialised_layers;
  if (length <= kMaterialisedWarningLength || materialised == 0) return;
  const double gib = static_cast<double>(state.options.batch_size) * state.shape.heads * static_cast<double>(length) *
                     static_cast<double>(length) * 4.0 / static_cast<double>(1 << 30);
  state.warnings.push_back(fmt::format(
      "{} of the model's {} attention layers are softmaxes it computes whole ([batch, heads, T, T]), so their memory "
      "grows with T²: at --max-length {} and --batch-size {}, {:.1f} GiB per layer in float32; headscan computes "
      "only scaled_dot_product_attention in bounded blocks (export the model with headscan export, which keeps SDPA "
      "where it is exact), or lower --max-length or --batch-size",
      materialised, state.shape.layers, length, state.options.batch_size, gib));
}

// Opens the corpus and reads its first document, on which the model's shape is detected. A shard
// reads its own slice, and the shape off the corpus's first document, whichever shard has it.
void open_corpus(RunState& state) {
  const AnalysisOptions& options = state.options;
  // link-grammar parses on the cores the model's threads leave (on a GPU, all but the one that
  // drives it), else beside them on one thread.
  const int model_threads = state.model->device().is_cpu() ? torch::get_num_threads() : 1;
  state.reader = std::make_unique<DocumentReader>(
      options.corpus_path, options.parser, options.text_field, options.shard.value_or(CorpusSlice{}),
      parser_threads(usable_cores(), static_cast<std::size_t>(model_threads)));
  state.sequences =
      std::make_unique<SequenceReader>(*state.reader, *state.text.tokenizer, state.text.shape, options.check_interrupt);
  std::unique_ptr<DocumentReader> whole;
  std::unique_ptr<SequenceReader> whole_sequences;
  if (options.shard) {
    whole = std::make_unique<DocumentReader>(options.corpus_path, "none", options.text_field);
    whole_sequences =
        std::make_unique<SequenceReader>(*whole, *state.text.tokenizer, state.text.shape, options.check_interrupt);
  }
  DocumentReader& reader = options.shard ? *whole : *state.reader;
  SequenceReader& sequences = options.shard ? *whole_sequences : *state.sequences;
  if (!sequences.next(state.first_sequences, nullptr, options.max_sequences)) {
    throw InputError(fmt::format("{}: the corpus is empty: no {} gives any token ({} lines read); give a "
                                 "text file with one document per line, or a CoNLL-U file ending in .conllu",
                                 reader.path(), std::string(reader.format()) == "conllu" ? "sentence" : "line",
                                 reader.counts().lines_read));
  }
  try {
    state.shape = detect_model_shape(*state.model, state.first_sequences.front().ids);
  } catch (...) {
    rethrow_with_context(state.model->path() + ": ");
  }
  if (options.shard) state.first_sequences.clear();  // the corpus pass reads the slice from its start
}

}  // namespace headscan
