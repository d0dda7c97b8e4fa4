#include "analyzer/byte_level.h"

#include <array>
#include <string>


namespace headscan {
namespace {

// The pattern of openai/gpt-2 encoder.py, as Hugging Face pre_tokenizers/byte_level.rs uses it.
constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct ByteAlphabet {
  std::array<std::string, 256> characters;

  ByteAlphabet() {
    auto stands_for_itself = [](int byte) {
      return (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE && byte <= 0xFF);
    };
    char32_t next = 0x100;
    for (int byte = 0; byte < 256; ++byte) {
      append_utf8(characters[byte], stands_for_itself(byte) ? static_cast<char32_t>(byte) : next++);
    }
  }
};

const ByteAlphabet& alphabet() {
  static const ByteAlphabet instance;
  return instance;
}

}  // namespace

std::string_view byte_level_character(unsigned char byte) { return alphabet().characters[byte]; }

NormalizedString to_byte_level(const NormalizedString& text) {
  const ByteAlphabet& bytes = alphabet();
  const std::string& source = text.text();
  NormalizedString::Builder builder(text);
  for (std::size_t pos = 0; pos < source.size(); ++pos) {
    builder.append(bytes.characters[static_cast<unsigned char>(source[pos])], pos, pos + 1);
  }
  return builder.finish();
}

ByteLevelPreTokenizer::ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
    : add_prefix_space_(add_prefix_space), use_regex_(use_regex), gpt2_words_(TextPattern::regex(kGpt2Pattern)) {}

void ByteLevelPreTokenizer::split(const NormalizedString& text, std::vector<NormalizedString>& words) const {
  std::vector<NormalizedString> pieces;
  if (add_prefix_space_ && !text.empty() && text.text().front() != ' ') {
    NormalizedString prefixed = text;
    prefixed.prepend(" ");
    pieces.push_back(std::move(prefixed));
  } else {
    pieces.push_back(text);
  }
  if (use_regex_) {
    NormalizedString whole = std::move(pieces.front());
    pieces.clear();
    split_on_matches(whole, gpt2_words_.find_matches(whole.text()), SplitBehavior::isolated, pieces);
  }
  for (const NormalizedString& piece : pieces) {
    if (!piece.empty()) words.push_back(to_byte_level(piece));
  }
}

}  // namespace headscan
