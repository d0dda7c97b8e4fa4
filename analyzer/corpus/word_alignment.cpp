#include "analyzer/corpus/word_alignment.h"

#include <algorithm>

#include "analyzer/tokenizers/unicode.h"

namespace headscan {
namespace {

// The token's span without leading and trailing whitespace; empty when it is whitespace only.
std::pair<std::size_t, std::size_t> trim_whitespace(std::string_view text, std::size_t begin, std::size_t end) {
  std::size_t first = end;
  std::size_t last = begin;
  for (std::size_t pos = begin; pos < end;) {
    const Utf8Char character = decode_utf8(text, pos);
    const std::size_t next = std::min(end, pos + character.length);
    if (!is_unicode_whitespace(character.code_point)) {
      first = std::min(first, pos);
      last = next;
    }
    pos = next;
  }
  return first < last ? std::make_pair(first, last) : std::make_pair(end, end);
}

}  // namespace

std::vector<int> align_tokens_to_words(const std::vector<Token>& tokens, std::string_view text,
                                       const ParsedSentence& sentence, const Tokenizer& tokenizer) {
  const auto& words = sentence.words;
  std::vector<int> token_word(tokens.size(), -1);
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    const Token& token = tokens[t];
    if (tokenizer.is_special(token.id) || token.begin >= token.end || token.end > text.size()) continue;
    const auto [begin, end] = trim_whitespace(text, token.begin, token.end);
    if (begin >= end) continue;
    // The first word that ends after the token begins; it overlaps the token if it starts before
    // the token ends. Whitespace inside a token that spans a space does not matter: the first
    // word it overlaps is the one it starts in or the first one after its leading part.
    const auto word = std::upper_bound(words.begin(), words.end(), begin,
                                       [](std::size_t position, const ParsedWord& w) { return position < w.end; });
    if (word != words.end() && word->begin < end) token_word[t] = static_cast<int>(word - words.begin());
  }
  return token_word;
}

}  // namespace headscan
