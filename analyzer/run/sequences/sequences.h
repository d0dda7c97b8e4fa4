#pragma once
// From documents to model inputs: windows of at most max_length tokens framed as the tokenizer's
// template frames a text, BOS before and the template's suffix after (DESIGN.md, "Sequences"),
// and batches of sequences in bounded memory.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "analyzer/tokenizers/tokenizer.h"
#include "analyzer/corpus/parsed_sentence.h"
#include "analyzer/corpus/sequence_words.h"

namespace headscan {

class DeferredWords;

struct Sequence {
  std::vector<std::int64_t> ids;
  std::vector<std::uint8_t> special;  // 1 for BOS, the suffix and the tokenizer's special tokens
  // The last `suffix_length` ids are the template's suffix ([SEP], </s>): special, in no word,
  // and not queries (keys only); 0 when the template has none.
  std::size_t suffix_length = 0;
  std::size_t line_number = 0;        // the corpus line it comes from
  std::size_t window = 0;             // 0 for the first window of a line
  std::uint64_t chunk = 0;            // its document's chunk: batches never mix chunks
  std::shared_ptr<const SequenceWords> words;  // words and dependency arcs; null without a parse
  // The words to come of a document still being parsed (deferred_words.h: sequence_words() reads
  // either); null otherwise.
  std::shared_ptr<DeferredWords> deferred_words;
  int example = -1;  // index among the report's example sequences (ExampleChooser), -1: none
};

struct SequenceShape {
  std::optional<std::int64_t> bos_id;    // prepended to every window when set
  std::int64_t max_length = 512;         // tokens per sequence, BOS and suffix included
  std::vector<std::int64_t> suffix_ids;  // appended to every window: the template's suffix

  // Tokens of every window that are not text: BOS and the suffix.
  std::size_t framing() const;
  // Tokens of text per window: max_length less the framing (at least 1: resolve_text_setup checks
  // it).
  std::size_t room() const;
  // A window's framing: BOS (special) before the text, and after it the suffix (special, counted
  // in suffix_length). `sequence` holds no ids before open() and only its text before close().
  void open(Sequence& sequence) const;
  void close(Sequence& sequence) const;
};

// Cuts one document's tokens into consecutive windows of at most shape.room() tokens, each framed
// by BOS and the suffix. A document with no tokens gives none.
std::vector<Sequence> make_sequences(const std::vector<Token>& tokens, const Tokenizer& tokenizer,
                                     const SequenceShape& shape, std::size_t line_number);

// One window of a document: tokens[begin, end) (at most shape.room() of them) framed by BOS and
// the suffix, numbered `window` among the document's windows.
Sequence make_window(const std::vector<Token>& tokens, std::size_t begin, std::size_t end, const Tokenizer& tokenizer,
                     const SequenceShape& shape, std::size_t line_number, std::size_t window);

// Gives every window of a document (as make_sequences() cut it from the same tokens and shape)
// its words and the arcs whose two ends both have tokens in the window. `token_word`: per token,
// its sentence word (align_tokens_to_words). The words of a multiword token share their tokens and
// are one local word (SequenceWords); the arcs between them are left out.
void attach_words(std::vector<Sequence>& sequences, const std::vector<int>& token_word,
                  const ParsedSentence& sentence, const SequenceShape& shape);

// Groups sequences into batches of at most batch_size: sequences of equal length together or,
// when padding is allowed, neighbours in length order padded to the longest. At most
// `max_buffered` sequences wait, so memory does not grow with the corpus. Output is
// deterministic for the same input order.
class Batcher {
 public:
  Batcher(std::size_t batch_size, bool allow_padding, std::size_t max_buffered);

  void add(Sequence sequence);
  // Batches that are complete, or that must go to keep the buffer bounded.
  std::vector<std::vector<Sequence>> take_ready();
  // Everything still waiting, at the end of the corpus.
  std::vector<std::vector<Sequence>> flush();

 private:
  std::vector<std::vector<Sequence>> take_all_sorted(bool keep_partial);

  std::size_t batch_size_;
  bool allow_padding_;
  std::size_t max_buffered_;
  std::size_t buffered_ = 0;
  std::map<std::size_t, std::vector<Sequence>> by_length_;
  std::vector<std::vector<Sequence>> ready_;
};

}  // namespace headscan
