#include "analyzer/tokenizers/pre_tokenizers/byte_level.h"

#include <array>
#include <string>


namespace headscan {
namespace {

// The pattern of openai/gpt-2 encoder.py, as Hugging Face pre_tokenizers/byte_level.rs uses it.
constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct ByteAlphabet {
  static constexpr char32_t kLastCharacter = 0x143;  // the 68 bytes that do not stand for themselves end here

  std::array<std::string, 256> characters;
  std::array<int, kLastCharacter + 1> byte_of;  // per character up to kLastCharacter: its byte, or -1

  ByteAlphabet() {
    auto stands_for_itself = [](int byte) {
      return (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE && byte <= 0xFF);
    };
    byte_of.fill(-1);
    char32_t next = 0x100;
    for (int byte = 0; byte < 256; ++byte) {
      const char32_t character = stands_for_itself(byte) ? static_cast<char32_t>(byte) : next++;
      append_utf8(characters[byte], character);
      byte_of[character] = byte;
    }
  }
};

const ByteAlphabet& alphabet() {
  static const ByteAlphabet instance;
  return instance;
}

}  // namespace

std::string_view byte_level_character(unsigned char byte) { return alphabet().characters[byte]; }

std::optional<std::string> from_byte_level(std::string_view piece) {
  const ByteAlphabet& bytes = alphabet();
  std::string decoded;
  decoded.reserve(piece.size());
  for (std::size_t pos = 0; pos < piece.size();) {
    const Utf8Char character = decode_utf8(piece, pos);
    if (!character.valid || character.code_point > ByteAlphabet::kLastCharacter) return std::nullopt;
    const int byte = bytes.byte_of[character.code_point];
    if (byte < 0) return std::nullopt;
    decoded.push_back(static_cast<char>(byte));
    pos += character.length;
  }
  return decoded;
}

NormalizedString to_byte_level(const NormalizedString& text) { return to_byte_level(text, 0, text.text().size()); }

NormalizedString to_byte_level(const NormalizedString& text, std::size_t begin, std::size_t end) {
  // Written directly rather than through NormalizedString::Builder: this runs on every word of
  // byte-level tokenizers (GPT-2, Llama 3), the hot path of tokenization.
  const ByteAlphabet& bytes = alphabet();
  const std::string& source = text.text();
  const std::vector<ByteSpan>& alignment = text.alignment();
  std::size_t size = 0;
  for (std::size_t pos = begin; pos < end; ++pos) size += bytes.characters[static_cast<unsigned char>(source[pos])].size();
  std::string mapped;
  std::vector<ByteSpan> mapped_alignment;
  mapped.reserve(size);
  mapped_alignment.reserve(size);
  for (std::size_t pos = begin; pos < end; ++pos) {
    const std::string& character = bytes.characters[static_cast<unsigned char>(source[pos])];
    mapped += character;
    for (std::size_t k = 0; k < character.size(); ++k) mapped_alignment.push_back(alignment[pos]);
  }
  return NormalizedString::from_parts(std::move(mapped), std::move(mapped_alignment));
}

ByteLevelPreTokenizer::ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
    : add_prefix_space_(add_prefix_space), use_regex_(use_regex), gpt2_words_(TextPattern::regex(kGpt2Pattern)) {}

void ByteLevelPreTokenizer::split(const NormalizedString& text, std::vector<NormalizedString>& words) const {
  const NormalizedString* source = &text;
  NormalizedString prefixed;
  if (add_prefix_space_ && !text.empty() && text.text().front() != ' ') {
    prefixed = text;
    prefixed.prepend(" ");
    source = &prefixed;
  }
  if (!use_regex_) {
    if (!source->empty()) words.push_back(to_byte_level(*source));
    return;
  }
  // Isolated: matches and the text between them are all words.
  for (const PatternMatch& piece : gpt2_words_.find_matches(source->text())) {
    if (piece.span.end > piece.span.begin) words.push_back(to_byte_level(*source, piece.span.begin, piece.span.end));
  }
}

}  // namespace headscan
