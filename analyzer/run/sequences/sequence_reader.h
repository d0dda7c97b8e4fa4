#pragma once
// A corpus's documents as model inputs (analyzer/run/sequences/sequences.h), in bounded memory
// however long a document is: a document longer than kLongLineBytes (analyzer/corpus/text_lines.h)
// is tokenized part by part and handed out as the windows its parts complete, so that only one
// part's tokens and one unfinished window are held at a time, whether the line comes from a plain
// or a compressed file. Without LibTorch, like sequences.h.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "analyzer/corpus/document_frequencies.h"
#include "analyzer/corpus/documents.h"
#include "analyzer/run/sequences/sequences.h"
#include "analyzer/tokenizers/tokenizer.h"

namespace headscan {

class SequenceReader {
 public:
  // Reads `documents` with `tokenizer` into windows of `shape` (all three used, not copied);
  // `check_interrupt` (when set) is called for every document and every part of a long one.
  SequenceReader(DocumentReader& documents, const Tokenizer& tokenizer, const SequenceShape& shape,
                 std::function<void()> check_interrupt = {});

  // The next windows, in the order make_sequences() cuts a document's tokens (Sequence::window
  // counts on across calls): all the windows of a document, or of a long one, those its next
  // parts complete (at least one; its last, shorter window when it ends). A document with no
  // token gives none and is passed over. Words are attached when the document is parsed (a parsed
  // document is tokenized whole: its parse names all its words), or, while link-grammar still
  // parses it, given as the words to come (Sequence::deferred_words). Each document is counted into
  // `counted` when given (a long one part by part, the pointer of its first call kept).
  // With `max_windows` > 0 the caller wants at most that many more windows: a long document is
  // read only as far as they need and, once they are given, closed (only what was read of it is
  // counted). False at the end of the corpus.
  bool next(std::vector<Sequence>& sequences, DocumentFrequencies* counted = nullptr, std::int64_t max_windows = 0);

  DocumentReader& documents() { return documents_; }

 private:
  // The windows of a short or a parsed document, all at once (make_sequences, attach_words).
  void read_whole(const Document& document, DocumentFrequencies* counted, std::vector<Sequence>& sequences);
  // Adds to `sequences` the windows that the open long document's next parts complete, at most
  // `max_windows` in all; closes it at its end or when `max_windows` are given.
  void continue_long(std::vector<Sequence>& sequences, std::size_t max_windows);
  // Tokenizes the next part of the open long document into pending_; false after its last part.
  bool read_part();
  void close_long();

  DocumentReader& documents_;
  const Tokenizer& tokenizer_;
  const SequenceShape& shape_;
  std::function<void()> check_interrupt_;
  // The long document being handed out: its line, chunk and the part of its text now held.
  bool long_open_ = false;
  Document long_;
  std::size_t part_begin_ = 0;       // where the next part starts in long_.text
  std::vector<Token> pending_;       // tokens read and not yet in a window
  std::size_t next_window_ = 0;      // Sequence::window of its next window
  DocumentFrequencies* counted_ = nullptr;
  bool any_token_ = false;
};

}  // namespace headscan
