#pragma once
// The "added_tokens" of a Hugging Face tokenizer.json: strings such as "<s>" or "[MASK]" that are
// found in the text before the model sees it and become tokens as they are.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analyzer/tokenizers/regex.h"
#include "analyzer/tokenizers/unicode.h"

namespace headscan {

class Normalizer;

struct AddedToken {
  std::int64_t id = 0;
  std::string content;
  bool special = false;
  bool single_word = false;  // only where no word character touches it on either side
  bool lstrip = false;       // takes the whitespace before it into its span
  bool rstrip = false;       // takes the whitespace after it into its span
  bool normalized = false;   // matched in the normalized text rather than the raw text
};

// Reads the "added_tokens" list (absent or null: none). Throws InputError on a malformed entry.
std::vector<AddedToken> added_tokens_from_json(const nlohmann::json* spec, const std::string& origin);

// A piece of text between or on added tokens: `token` is null for text that still goes through
// the normalizer, pre-tokenizer and model.
struct AddedTokenSplit {
  ByteSpan span;
  const AddedToken* token = nullptr;
};

class AddedVocabulary {
 public:
  // `normalizer` (may be null) gives the form in which tokens with normalized=true are matched.
  AddedVocabulary(std::vector<AddedToken> tokens, const Normalizer* normalizer);

  // Cuts `text` into pieces covering it left to right, on the leftmost-longest occurrences of the
  // tokens with normalized == `normalized` (Hugging Face matches raw-text tokens first, then
  // normalized ones in the normalized remainder).
  std::vector<AddedTokenSplit> split(std::string_view text, bool normalized) const;

  const std::vector<AddedToken>& tokens() const { return tokens_; }
  bool empty() const { return tokens_.empty(); }

 private:
  struct Pattern {
    std::string text;
    const AddedToken* token;
  };
  // Patterns by first byte, longest first, one table for raw and one for normalized matching.
  using PatternTable = std::array<std::vector<Pattern>, 256>;

  const Pattern* match_at(std::string_view text, std::size_t pos, const PatternTable& table) const;
  bool is_word_character_at(std::string_view text, std::size_t pos) const;
  bool ends_with_word_character(std::string_view text, std::size_t end) const;

  std::vector<AddedToken> tokens_;
  PatternTable raw_patterns_;
  PatternTable normalized_patterns_;
  Regex word_character_;
};

}  // namespace headscan
