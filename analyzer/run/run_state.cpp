#include "analyzer/run/run_state.h"

#include <fmt/format.h>

#include "analyzer/corpus/word_alignment.h"
#include "analyzer/errors.h"
#include "analyzer/run/batch_tensors.h"

namespace headscan {

bool RunState::read_document(DocumentReader& documents, std::vector<Sequence>& sequences,
                             DocumentFrequencies* counted) const {
  const Tokenizer& tokenizer = *text.tokenizer;
  Document document;
  while (documents.next(document)) {
    const std::vector<Token> tokens = tokenizer.encode(document.text);
    sequences = make_sequences(tokens, tokenizer, text.shape, document.line_number);
    if (sequences.empty()) continue;
    if (document.parse) {
      const std::vector<int> token_word = align_tokens_to_words(tokens, document.text, *document.parse, tokenizer);
      attach_words(sequences, token_word, *document.parse, text.shape);
    }
    if (counted != nullptr) counted->add_document(tokens, tokenizer);
    return true;
  }
  return false;
}

bool RunState::pads() const { return model->takes_attention_mask() || shape.causal; }

ForwardOutput RunState::forward(const std::vector<Sequence>& batch, std::optional<BatchSource> feeds,
                                std::int64_t batch_index, std::vector<ExampleSequence>* examples) {
  const BatchTensors tensors = to_tensors(batch, pad_id, idf_table);
  std::vector<const SequenceWords*> words;
  bool any_words = false;
  for (const Sequence& sequence : batch) {
    words.push_back(sequence.words.get());
    any_words = any_words || sequence.words != nullptr;
  }
  const BatchContext context{tensors.ids,
                             tensors.valid,
                             tensors.special,
                             tensors.idf,
                             shape.causal,
                             text.shape.bos_id.has_value(),
                             feeds.value_or(BatchSource::corpus),
                             batch_index,
                             any_words ? &words : nullptr,
                             nullptr};
  if (feeds) classifiers.begin_batch();
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
    if (feeds) classifiers.observe(layer, attention, context);
    if (!recording) return;
    for (std::size_t b = 0; b < batch.size(); ++b) {
      const int example = batch[b].example;
      if (example >= 0 && example < static_cast<int>(examples->size())) {
        record_example_attention((*examples)[static_cast<std::size_t>(example)], layer,
                                 attention[static_cast<std::int64_t>(b)]);
      }
    }
  });
}

}  // namespace headscan
