#include "analyzer/sentencepiece_tokenizer.h"

#include <algorithm>
#include <cstdlib>

#include <sentencepiece_processor.h>

#include "analyzer/errors.h"
#include "analyzer/unicode.h"

namespace headscan {

struct SentencePieceTokenizer::Impl {
  sentencepiece::SentencePieceProcessor processor;
  std::string path;
};

namespace {

// The byte a "<0xNN>" piece stands for.
int byte_of_piece(const std::string& piece) {
  if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>') return -1;
  return static_cast<int>(std::strtol(piece.substr(3, 2).c_str(), nullptr, 16));
}

// SentencePiece gives a character's span to its last byte piece only (the others have begin ==
// end). Gives each byte piece of `group` (indices into `tokens`, all byte pieces, the last one
// carrying the span) the span of the character its byte belongs to: when the bytes spell the
// text of the span, character by character; otherwise the whole span.
void spread_byte_spans(std::string_view text, const std::vector<std::size_t>& group, std::vector<Token>& tokens,
                       const std::vector<int>& bytes) {
  const Token& last = tokens[group.back()];
  const std::size_t begin = last.begin;
  const std::size_t end = last.end;
  bool spelled = end - begin == group.size();
  for (std::size_t i = 0; spelled && i < group.size(); ++i) {
    spelled = bytes[i] == static_cast<unsigned char>(text[begin + i]);
  }
  std::size_t character_begin = begin;
  std::size_t character_end = end;
  for (std::size_t i = 0; i < group.size(); ++i) {
    if (spelled && begin + i >= character_end) character_begin = begin + i;
    if (spelled && begin + i == character_begin) {
      character_end = std::min(end, character_begin + decode_utf8(text, character_begin).length);
    }
    tokens[group[i]].begin = character_begin;
    tokens[group[i]].end = character_end;
  }
}

}  // namespace

SentencePieceTokenizer::SentencePieceTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::load(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  const sentencepiece::util::Status status = impl->processor.Load(path);
  if (!status.ok()) {
    throw InputError(path + ": expected a SentencePiece model (.model, as spm_train writes it), but the sentencepiece "
                     "library cannot load it (" + status.ToString() +
                     "); give the tokenizer.model / spiece.model file of the model, or its tokenizer.json");
  }
  return std::unique_ptr<SentencePieceTokenizer>(new SentencePieceTokenizer(std::move(impl)));
}

std::vector<Token> SentencePieceTokenizer::encode(std::string_view text) const {
  const sentencepiece::ImmutableSentencePieceText encoded = impl_->processor.EncodeAsImmutableProto(text);
  std::vector<Token> tokens;
  tokens.reserve(encoded.pieces_size());
  std::vector<std::size_t> byte_group;  // byte pieces waiting for the one that carries the span
  std::vector<int> byte_values;
  for (const auto& piece : encoded.pieces()) {
    tokens.push_back({static_cast<std::int64_t>(piece.id()), piece.piece(), piece.begin(), piece.end()});
    const int byte = impl_->processor.IsByte(static_cast<int>(piece.id())) ? byte_of_piece(piece.piece()) : -1;
    if (byte < 0) {
      byte_group.clear();
      byte_values.clear();
      continue;
    }
    byte_group.push_back(tokens.size() - 1);
    byte_values.push_back(byte);
    if (piece.end() > piece.begin()) {
      spread_byte_spans(text, byte_group, tokens, byte_values);
      byte_group.clear();
      byte_values.clear();
    }
  }
  return tokens;
}

std::int64_t SentencePieceTokenizer::vocab_size() const { return impl_->processor.GetPieceSize(); }

std::optional<std::int64_t> SentencePieceTokenizer::token_to_id(std::string_view piece) const {
  const int id = impl_->processor.PieceToId(piece);
  // PieceToId answers the unknown id for pieces it does not know.
  if (id < 0 || impl_->processor.IdToPiece(id) != piece) return std::nullopt;
  return id;
}

std::string SentencePieceTokenizer::id_to_piece(std::int64_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  return impl_->processor.IdToPiece(static_cast<int>(id));
}

bool SentencePieceTokenizer::is_special(std::int64_t id) const {
  if (id < 0 || id >= vocab_size()) return false;
  return impl_->processor.IsControl(static_cast<int>(id)) || impl_->processor.IsUnknown(static_cast<int>(id));
}

std::string SentencePieceTokenizer::describe() const {
  return "SentencePiece, " + std::to_string(vocab_size()) + " pieces";
}

std::vector<std::string> SentencePieceTokenizer::template_prefix() const {
  const int bos = impl_->processor.bos_id();
  if (bos < 0 || bos >= vocab_size()) return {};
  return {impl_->processor.IdToPiece(bos)};
}

}  // namespace headscan
