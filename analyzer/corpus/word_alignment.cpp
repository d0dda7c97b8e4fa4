#include "analyzer/corpus/word_alignment.h"

#include <algorithm>
#include <optional>

#include "analyzer/tokenizers/pre_tokenizers/byte_level.h"
#include "analyzer/tokenizers/unicode.h"

namespace headscan {
namespace {

constexpr char32_t kMetaspace = U'\u2581';  // "▁", SentencePiece's and Metaspace's space

// The byte of a byte-fallback piece "<0xNN>"; nullopt for any other piece.
std::optional<unsigned char> fallback_byte(std::string_view piece) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return std::nullopt;
  int byte = 0;
  for (const char digit : piece.substr(3, 2)) {
    const int value = digit >= '0' && digit <= '9'   ? digit - '0'
                      : digit >= 'A' && digit <= 'F' ? digit - 'A' + 10
                      : digit >= 'a' && digit <= 'f' ? digit - 'a' + 10
                                                     : -1;
    if (value < 0) return std::nullopt;
    byte = byte * 16 + value;
  }
  return static_cast<unsigned char>(byte);
}

// Whether `text` is made of whitespace and "▁" only (and not empty).
bool is_spaces(std::string_view text) {
  if (text.empty()) return false;
  for (std::size_t pos = 0; pos < text.size();) {
    const Utf8Char character = decode_utf8(text, pos);
    if (!character.valid || !(is_unicode_whitespace(character.code_point) || character.code_point == kMetaspace)) {
      return false;
    }
    pos += character.length;
  }
  return true;
}

// Whether a token's own piece stands for whitespace only (DESIGN.md, "Syntactic heads"): "▁",
// "▁▁", a byte-fallback piece of a whitespace byte ("<0x20>", "<0x0A>"); for byte-level
// tokenizers, whose pieces are all spelled in the byte-level alphabet, the pieces whose bytes are
// whitespace ("Ġ", "Ċ", "ĉĠ"; "Â", part of the no-break space, is not). A normalizer or
// pre-tokenizer that inserts a space aligns it to the character after it, so the span alone
// would put such a token in a word: the lone "▁" before the "D" of "Designed" when "▁D" is not
// in the vocabulary.
bool is_whitespace_piece(std::string_view piece, bool byte_level) {
  if (byte_level) {
    const std::optional<std::string> bytes = from_byte_level(piece);
    return bytes ? is_spaces(*bytes) : is_spaces(piece);  // an added token spells its text as it is
  }
  if (const std::optional<unsigned char> byte = fallback_byte(piece)) {
    return *byte < 0x80 && is_unicode_whitespace(*byte);
  }
  return is_spaces(piece);
}

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
  const bool byte_level = tokenizer.byte_level();
  std::vector<int> token_word(tokens.size(), -1);
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    const Token& token = tokens[t];
    if (tokenizer.is_special(token.id) || token.begin >= token.end || token.end > text.size()) continue;
    if (is_whitespace_piece(token.piece, byte_level)) continue;
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
