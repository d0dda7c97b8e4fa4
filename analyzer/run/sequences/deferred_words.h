#pragma once
// The words of a document's windows while link-grammar still parses it, beside the model
// (Document::pending_parse): the windows go to the batcher at once, tokenized, and get their words
// when a batch of them is about to run. Without LibTorch, like sequences.h.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "analyzer/corpus/sequence_words.h"
#include "analyzer/run/sequences/sequences.h"
#include "analyzer/tokenizers/tokenizer.h"

namespace headscan {

class PendingParse;

// Used from one thread (the one that reads and batches the corpus).
class DeferredWords {
 public:
  // `windows`: the document's windows as make_sequences() cut them from `tokens` (their lengths
  // are kept); `tokenizer` and `shape` are used, not copied.
  DeferredWords(std::shared_ptr<PendingParse> parse, std::vector<Token> tokens, std::string text,
                const std::vector<Sequence>& windows, const Tokenizer& tokenizer, const SequenceShape& shape);

  // Window `window`'s words, as attach_words() gives them: waits for the parse; null when no
  // sentence of the document parsed.
  std::shared_ptr<const SequenceWords> window(std::size_t window);
  // Asks for the parse before the documents nobody asked for (PendingParse::prefer).
  void prefer();

 private:
  std::shared_ptr<PendingParse> parse_;  // null once the words are made
  std::vector<Token> tokens_;
  std::string text_;
  std::vector<Sequence> windows_;  // their ids and suffix, then their words
  const Tokenizer& tokenizer_;
  const SequenceShape& shape_;
};

// The words of `sequence`: its own, or its deferred words (waiting for its parse).
const SequenceWords* sequence_words(const Sequence& sequence);

// Asks for the parses of `batch`'s documents, in order, before those of the documents after them.
void prefer_parses(const std::vector<Sequence>& batch);

}  // namespace headscan
