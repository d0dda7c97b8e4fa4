#include "analyzer/run/run_state.h"

#include <fmt/format.h>

#include "analyzer/corpus/word_alignment.h"
#include "analyzer/errors.h"
#include "analyzer/run/batch_tensors.h"

namespace headscan {
namespace {

constexpr std::size_t kPieceBytes = std::size_t{256} << 10;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

// Where the piece of `text` starting at `begin` ends: before the whitespace run nearest below
// begin + kPieceBytes, so that no token of a tokenizer that splits at whitespace spans two pieces;
// at a character boundary when the piece has no whitespace.
std::size_t piece_end(const std::string& text, std::size_t begin) {
  const std::size_t limit = begin + kPieceBytes;
  if (limit >= text.size()) return text.size();
  for (std::size_t end = limit; end > begin + 1; --end) {
    if (is_space(text[end]) && !is_space(text[end - 1])) return end;
  }
  std::size_t end = limit;
  while (end > begin + 1 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return end;
}

// Tokenizes a long document piece by piece: keeps the first `wanted` tokens, counts every piece's
// tokens into `counted` (when given), and stops as soon as it has what it keeps and counts nothing.
// Returns whether the document had any token.
bool encode_in_pieces(const Tokenizer& tokenizer, const std::string& text, std::size_t wanted,
                      DocumentFrequencies* counted, std::vector<Token>& tokens) {
  bool any = false;
  for (std::size_t begin = 0; begin < text.size();) {
    if (tokens.size() >= wanted && counted == nullptr) break;
    const std::size_t end = piece_end(text, begin);
    std::vector<Token> piece = tokenizer.encode(std::string_view(text).substr(begin, end - begin));
    any = any || !piece.empty();
    if (counted != nullptr) counted->add_tokens(piece, tokenizer);
    for (Token& token : piece) {
      if (tokens.size() >= wanted) break;
      token.begin += begin;
      token.end += begin;
      tokens.push_back(std::move(token));
    }
    begin = end;
  }
  return any;
}

}  // namespace

bool RunState::read_document(DocumentReader& documents, std::vector<Sequence>& sequences,
                             DocumentFrequencies* counted, std::int64_t max_windows) const {
  const Tokenizer& tokenizer = *text.tokenizer;
  Document document;
  while (documents.next(document)) {
    std::vector<Token> tokens;
    DocumentFrequencies* count_whole = counted;  // null once counted in pieces
    if (document.text.size() <= kLongDocumentBytes) {
      tokens = tokenizer.encode(document.text);
    } else {
      const std::size_t wanted = max_windows > 0 ? static_cast<std::size_t>(max_windows) * text.shape.room() : SIZE_MAX;
      const bool any = encode_in_pieces(tokenizer, document.text, wanted, counted, tokens);
      if (counted != nullptr && any) counted->end_document();
      count_whole = nullptr;
    }
    sequences = make_sequences(tokens, tokenizer, text.shape, document.line_number);
    for (Sequence& sequence : sequences) sequence.chunk = document.chunk;
    if (sequences.empty()) continue;
    if (document.parse) {
      const std::vector<int> token_word = align_tokens_to_words(tokens, document.text, *document.parse, tokenizer);
      attach_words(sequences, token_word, *document.parse, text.shape);
    }
    if (count_whole != nullptr) count_whole->add_document(tokens, tokenizer);
    return true;
  }
  return false;
}

std::vector<std::vector<Sequence>> RunState::probe_batches() const {
  Batcher batcher(static_cast<std::size_t>(options.batch_size), pads(), probes.sequences.size());
  for (const Sequence& probe : probes.sequences) batcher.add(probe);
  return batcher.flush();
}

std::unique_ptr<DocumentFrequencies> RunState::count_frequencies(const std::string& path,
                                                                std::int64_t max_sequences) const {
  auto counts = std::make_unique<DocumentFrequencies>(text.tokenizer->vocab_size());
  DocumentReader documents(path, "none", options.text_field);
  std::vector<Sequence> sequences;
  std::int64_t counted = 0;
  while ((max_sequences == 0 || counted < max_sequences) &&
         read_document(documents, sequences, counts.get(), max_sequences > 0 ? max_sequences - counted : 0)) {
    counted += static_cast<std::int64_t>(sequences.size());
  }
  return counts;
}

std::vector<Sequence> RunState::read_examples() {
  DocumentReader documents(options.examples_path, "none");
  if (std::string_view(documents.format()) != "text") {
    throw InputError(fmt::format("--examples {}: expected a text file with one prompt per line, found a {} file; "
                                 "give the prompts as plain text",
                                 options.examples_path, documents.format()));
  }
  ExampleChooser chooser;
  std::vector<Sequence> sequences;
  std::size_t prompts = 0;
  while (read_document(documents, sequences, nullptr, 1)) {
    ++prompts;
    if (sequences.front().ids.size() > ExampleSequence::kMaxExampleTokens) {
      warnings.push_back(fmt::format("--examples {}: line {} is cut to its first {} tokens in the report",
                                     options.examples_path, sequences.front().line_number,
                                     ExampleSequence::kMaxExampleTokens));
    }
    chooser.offer(sequences.front());
  }
  if (prompts == 0) {
    throw InputError(fmt::format("--examples {}: no line gives any token; write one prompt per line",
                                 options.examples_path));
  }
  if (prompts > ExampleSequence::kMaxExamples) {
    warnings.push_back(fmt::format("--examples {}: the report shows the first {} of its {} prompts",
                                   options.examples_path, ExampleSequence::kMaxExamples, prompts));
  }
  return chooser.chosen();
}

bool RunState::pads() const { return model->takes_attention_mask() || shape.causal; }

ForwardOutput RunState::forward(const std::vector<Sequence>& batch, std::optional<BatchSource> feeds,
                                std::int64_t batch_index, std::vector<ExampleSequence>* examples,
                                ClassifierSet* target, const HeadScales* scales) {
  ClassifierSet& observers = target != nullptr ? *target : classifiers;
  const BatchTensors tensors = to_tensors(batch, pad_id, idf_table);
  std::vector<const SequenceWords*> words;
  bool any_words = false;
  for (const Sequence& sequence : batch) {
    words.push_back(sequence.words.get());
    any_words = any_words || sequence.words != nullptr;
  }
  const BatchContext context{tensors.ids,
                             tensors.valid,
                             tensors.queries,
                             tensors.special,
                             tensors.idf,
                             shape.causal,
                             text.shape.bos_id.has_value(),
                             feeds.value_or(BatchSource::corpus),
                             batch_index,
                             any_words ? &words : nullptr,
                             nullptr};
  if (feeds) observers.begin_batch();
  const bool recording = record_examples && examples != nullptr;
  return model->forward(tensors.ids, &tensors.mask, [&](int layer, const at::Tensor& attention) {
    if (layer >= shape.layers || attention.size(1) != shape.heads) {
      throw InputError(fmt::format(
          "the model produced attention for layer {} with {} heads, but the first sequence showed {} layers "
          "of {} heads; headscan needs the same attention layers for every input (models whose layers depend "
          "on the input, such as early exits, are not supported)",
          layer, attention.size(1), shape.layers, shape.heads));
    }
    require_finite_attention(layer, attention, &tensors.valid);
    if (feeds) observers.observe(layer, attention, context);
    if (!recording) return;
    for (std::size_t b = 0; b < batch.size(); ++b) {
      const int example = batch[b].example;
      if (example >= 0 && example < static_cast<int>(examples->size())) {
        record_example_attention((*examples)[static_cast<std::size_t>(example)], layer,
                                 attention[static_cast<std::int64_t>(b)]);
      }
    }
  }, scales);
}

}  // namespace headscan
