#include "analyzer/run/sequences/deferred_words.h"

#include <stdexcept>
#include <utility>

#include "analyzer/corpus/parse_pool.h"
#include "analyzer/corpus/word_alignment.h"

namespace headscan {

DeferredWords::DeferredWords(std::shared_ptr<PendingParse> parse, std::vector<Token> tokens, std::string text,
                             const std::vector<Sequence>& windows, const Tokenizer& tokenizer,
                             const SequenceShape& shape)
    : parse_(std::move(parse)), tokens_(std::move(tokens)), text_(std::move(text)), tokenizer_(tokenizer),
      shape_(shape) {
  windows_.reserve(windows.size());
  for (const Sequence& window : windows) {
    Sequence shell;
    shell.ids = window.ids;
    shell.suffix_length = window.suffix_length;
    windows_.push_back(std::move(shell));
  }
}

std::shared_ptr<const SequenceWords> DeferredWords::window(std::size_t window) {
  if (window >= windows_.size()) {
    throw std::logic_error("DeferredWords: window " + std::to_string(window) + " of a document of " +
                           std::to_string(windows_.size()));
  }
  if (parse_ != nullptr) {
    const LineParse& parsed = parse_->get();
    // A document with no parsed sentence has no words, as if it had not been parsed.
    if (parsed.parsed > 0) {
      attach_words(windows_, align_tokens_to_words(tokens_, text_, parsed.parse, tokenizer_), parsed.parse, shape_);
    }
    parse_ = nullptr;
    tokens_ = {};
    text_ = {};
  }
  return windows_[window].words;
}

void DeferredWords::prefer() {
  if (parse_ != nullptr) parse_->prefer();
}

const SequenceWords* sequence_words(const Sequence& sequence) {
  if (sequence.words != nullptr || sequence.deferred_words == nullptr) return sequence.words.get();
  return sequence.deferred_words->window(sequence.window).get();
}

void prefer_parses(const std::vector<Sequence>& batch) {
  for (const Sequence& sequence : batch) {
    if (sequence.deferred_words != nullptr) sequence.deferred_words->prefer();
  }
}

}  // namespace headscan
