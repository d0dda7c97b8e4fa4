#include "analyzer/tokenizers/piece_text.h"

#include "analyzer/tokenizers/pre_tokenizers/byte_level.h"
#include "analyzer/tokenizers/unicode.h"

namespace headscan {
namespace {

constexpr std::string_view kSentencePieceSpace = "\xE2\x96\x81";  // ▁ U+2581

// "<0xNN>": the byte NN, else -1.
int byte_piece(std::string_view piece) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return -1;
  int value = 0;
  for (const char c : piece.substr(3, 2)) {
    value *= 16;
    if (c >= '0' && c <= '9') {
      value += c - '0';
    } else if (c >= 'A' && c <= 'F') {
      value += c - 'A' + 10;
    } else if (c >= 'a' && c <= 'f') {
      value += c - 'a' + 10;
    } else {
      return -1;
    }
  }
  return value;
}

}  // namespace

std::string piece_text(const Tokenizer& tokenizer, std::int64_t id) {
  if (tokenizer.is_special(id)) return "";
  const std::string piece = tokenizer.id_to_piece(id);
  if (tokenizer.byte_level()) {
    if (std::optional<std::string> bytes = from_byte_level(piece)) return *bytes;
    return piece;
  }
  if (const int byte = byte_piece(piece); byte >= 0) return std::string(1, static_cast<char>(byte));
  std::string text;
  std::string_view rest = piece;
  if (rest.size() > 2 && rest.substr(0, 2) == "##") rest.remove_prefix(2);
  for (std::size_t at = 0; at < rest.size();) {
    if (rest.substr(at, kSentencePieceSpace.size()) == kSentencePieceSpace) {
      text += ' ';
      at += kSentencePieceSpace.size();
    } else {
      text += rest[at++];
    }
  }
  return text;
}

bool is_punctuation_text(std::string_view text) {
  bool any = false;
  for (std::size_t at = 0; at < text.size();) {
    const Utf8Char c = decode_utf8(text, at);
    at += c.length;
    if (!c.valid) return false;
    if (is_unicode_whitespace(c.code_point)) continue;
    if (!is_unicode_punctuation(c.code_point)) return false;
    any = true;
  }
  return any;
}

std::vector<std::uint8_t> punctuation_ids(const Tokenizer& tokenizer) {
  const std::int64_t size = tokenizer.vocab_size();
  std::vector<std::uint8_t> table(static_cast<std::size_t>(size > 0 ? size : 0), 0);
  for (std::int64_t id = 0; id < size; ++id) {
    table[static_cast<std::size_t>(id)] = is_punctuation_text(piece_text(tokenizer, id)) ? 1 : 0;
  }
  return table;
}

}  // namespace headscan
