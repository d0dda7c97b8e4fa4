#include "analyzer/word_alignment.h"

#include <algorithm>

#include "analyzer/unicode.h"

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

void attach_words(std::vector<Sequence>& sequences, const std::vector<int>& token_word,
                  const ParsedSentence& sentence, const SequenceShape& shape) {
  const std::size_t offset = shape.bos_id ? 1 : 0;
  const std::size_t room = static_cast<std::size_t>(shape.max_length) - offset;
  for (std::size_t window = 0; window < sequences.size(); ++window) {
    Sequence& sequence = sequences[window];
    const std::size_t start = window * room;
    auto words = std::make_shared<SequenceWords>();
    words->token_word.assign(sequence.ids.size(), -1);
    // Sentence word → local word, for the words with a token in this window.
    std::vector<int> local(sentence.words.size(), -1);
    for (std::size_t position = offset; position < sequence.ids.size(); ++position) {
      const int word = token_word.at(start + position - offset);
      if (word < 0) continue;
      if (local[static_cast<std::size_t>(word)] < 0) local[static_cast<std::size_t>(word)] = words->words++;
      words->token_word[position] = local[static_cast<std::size_t>(word)];
    }
    for (std::size_t dependent = 0; dependent < sentence.words.size(); ++dependent) {
      const ParsedWord& word = sentence.words[dependent];
      if (word.head < 0 || word.relation.empty()) continue;
      const int dependent_local = local[dependent];
      const int head_local = local[static_cast<std::size_t>(word.head)];
      if (dependent_local < 0 || head_local < 0) continue;
      words->arcs.push_back(
          WordArc{dependent_local, head_local, word.relation, word.head - static_cast<int>(dependent)});
    }
    sequence.words = std::move(words);
  }
}

}  // namespace headscan
