#pragma once
// The model stage of a tokenizer: turns one pre-tokenized word into vocabulary tokens.
// One implementation per Hugging Face model type (WordLevel now; BPE, WordPiece, Unigram later).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/tokenizers/tokenizer.h"

namespace headscan {

class TokenizerModel {
 public:
  virtual ~TokenizerModel() = default;

  // Appends the tokens of `word` (normalized text, never empty) to `tokens`; their begin/end are
  // byte offsets into `word`. Throws InputError if the word cannot be represented.
  virtual void tokenize(std::string_view word, std::vector<Token>& tokens) const = 0;

  virtual std::optional<std::int64_t> token_to_id(std::string_view piece) const = 0;
  virtual std::optional<std::string> id_to_piece(std::int64_t id) const = 0;
  // One past the largest id in the model's vocabulary (0 when empty).
  virtual std::int64_t vocab_size() const = 0;
  // Ids the model itself treats as special (its unknown token).
  virtual std::vector<std::int64_t> special_ids() const = 0;
  // The Hugging Face type name, e.g. "WordLevel".
  virtual std::string type() const = 0;
};

}  // namespace headscan
