#include "analyzer/run/sequences/sequence_reader.h"

#include <iterator>
#include <string_view>
#include <utility>

#include "analyzer/corpus/text_lines.h"
#include "analyzer/corpus/word_alignment.h"
#include "analyzer/run/sequences/deferred_words.h"

namespace headscan {

SequenceReader::SequenceReader(DocumentReader& documents, const Tokenizer& tokenizer, const SequenceShape& shape,
                               std::function<void()> check_interrupt)
    : documents_(documents), tokenizer_(tokenizer), shape_(shape), check_interrupt_(std::move(check_interrupt)) {}

bool SequenceReader::next(std::vector<Sequence>& sequences, DocumentFrequencies* counted, std::int64_t max_windows) {
  sequences.clear();
  const std::size_t wanted = max_windows > 0 ? static_cast<std::size_t>(max_windows) : SIZE_MAX;
  for (;;) {
    if (long_open_) {
      continue_long(sequences, wanted);
      if (!sequences.empty()) return true;
      continue;  // the rest of the document gave no token
    }
    Document document;
    if (!documents_.next(document)) return false;
    if (check_interrupt_) check_interrupt_();
    if ((!document.more && document.text.size() <= kLongLineBytes) || document.parse || document.pending_parse) {
      read_whole(document, counted, sequences);
      if (!sequences.empty()) return true;
      continue;
    }
    long_open_ = true;
    long_ = std::move(document);
    part_begin_ = 0;
    pending_.clear();
    next_window_ = 0;
    counted_ = counted;
    any_token_ = false;
  }
}

void SequenceReader::read_whole(const Document& document, DocumentFrequencies* counted,
                                std::vector<Sequence>& sequences) {
  std::vector<Token> tokens;
  if (document.text.size() <= kLongLineBytes) {
    tokens = tokenizer_.encode(document.text);
  } else {  // a parsed document longer than a part: tokenized in parts, offsets kept for the words
    for (std::size_t begin = 0; begin < document.text.size();) {
      const std::size_t end = line_part_end(document.text, begin);
      for (Token& token : tokenizer_.encode(std::string_view(document.text).substr(begin, end - begin))) {
        token.begin += begin;
        token.end += begin;
        tokens.push_back(std::move(token));
      }
      begin = end;
    }
  }
  if (tokens.empty()) return;
  sequences = make_sequences(tokens, tokenizer_, shape_, document.line_number);
  for (Sequence& sequence : sequences) sequence.chunk = document.chunk;
  if (document.parse) {
    const std::vector<int> token_word = align_tokens_to_words(tokens, document.text, *document.parse, tokenizer_);
    attach_words(sequences, token_word, *document.parse, shape_);
  }
  if (counted != nullptr) counted->add_document(tokens, tokenizer_);
  if (document.pending_parse) {  // the words come when the parse is done
    auto deferred = std::make_shared<DeferredWords>(document.pending_parse, std::move(tokens), document.text, sequences,
                                                    tokenizer_, shape_);
    for (Sequence& sequence : sequences) sequence.deferred_words = deferred;
  }
}

void SequenceReader::continue_long(std::vector<Sequence>& sequences, std::size_t max_windows) {
  const std::size_t room = shape_.room();
  std::size_t used = 0;  // of pending_, in the windows made
  const auto add_window = [&](std::size_t end) {
    Sequence sequence = make_window(pending_, used, end, tokenizer_, shape_, long_.line_number, next_window_++);
    sequence.chunk = long_.chunk;
    sequences.push_back(std::move(sequence));
    used = end;
  };
  for (;;) {
    while (sequences.size() < max_windows && pending_.size() - used >= room) add_window(used + room);
    if (sequences.size() == max_windows) break;  // the caller wants no more of the document
    if (!sequences.empty()) {
      pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(used));
      return;
    }
    if (!read_part()) {
      if (used < pending_.size()) add_window(pending_.size());
      break;
    }
  }
  close_long();
}

bool SequenceReader::read_part() {
  while (part_begin_ >= long_.text.size()) {
    if (!long_.more || !documents_.next_part(long_.text)) return false;
    part_begin_ = 0;
  }
  if (check_interrupt_) check_interrupt_();
  const std::size_t end = line_part_end(long_.text, part_begin_);
  std::vector<Token> part = tokenizer_.encode(std::string_view(long_.text).substr(part_begin_, end - part_begin_));
  part_begin_ = end;
  if (counted_ != nullptr) counted_->add_tokens(part, tokenizer_);
  any_token_ = any_token_ || !part.empty();
  pending_.insert(pending_.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
  return true;
}

void SequenceReader::close_long() {
  if (counted_ != nullptr && any_token_) counted_->end_document();
  long_open_ = false;
  long_ = Document{};
  pending_.clear();
}

}  // namespace headscan
