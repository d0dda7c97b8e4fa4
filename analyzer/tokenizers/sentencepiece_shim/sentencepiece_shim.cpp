#include "analyzer/tokenizers/sentencepiece_shim/sentencepiece_shim.h"

#include <exception>
#include <memory>
#include <string>
#include <string_view>

#include <sentencepiece_processor.h>

namespace {

const sentencepiece::SentencePieceProcessor& processor_of(const void* processor) {
  return *static_cast<const sentencepiece::SentencePieceProcessor*>(processor);
}

}  // namespace

extern "C" {

void* headscan_spm_load(const char* path, headscan_spm_string_fn on_error, void* context) {
  auto processor = std::make_unique<sentencepiece::SentencePieceProcessor>();
  std::string message;
  try {
    const sentencepiece::util::Status status = processor->Load(path);
    if (status.ok()) return processor.release();
    message = status.ToString();
  } catch (const std::exception& e) {  // sentencepiece's tries (darts_clone) throw on some malformed models
    message = e.what();
  }
  on_error(context, message.data(), message.size());
  return nullptr;
}

void headscan_spm_free(void* processor) { delete static_cast<sentencepiece::SentencePieceProcessor*>(processor); }

int headscan_spm_piece_size(const void* processor) { return processor_of(processor).GetPieceSize(); }

int headscan_spm_bos_id(const void* processor) { return processor_of(processor).bos_id(); }

int headscan_spm_kind(const void* processor, int id) {
  const auto& spm = processor_of(processor);
  return (spm.IsByte(id) ? 1 : 0) | (spm.IsControl(id) ? 2 : 0) | (spm.IsUnknown(id) ? 4 : 0);
}

void headscan_spm_id_to_piece(const void* processor, int id, headscan_spm_string_fn on_piece, void* context) {
  const std::string& piece = processor_of(processor).IdToPiece(id);
  on_piece(context, piece.data(), piece.size());
}

int headscan_spm_piece_to_id(const void* processor, const char* piece, std::size_t size) {
  return processor_of(processor).PieceToId(std::string_view(piece, size));
}

void headscan_spm_encode(const void* processor, const char* text, std::size_t size, headscan_spm_piece_fn on_piece,
                         void* context) {
  const auto encoded = processor_of(processor).EncodeAsImmutableProto(std::string_view(text, size));
  for (const auto& piece : encoded.pieces()) {
    const std::string& value = piece.piece();
    on_piece(context, static_cast<int>(piece.id()), value.data(), value.size(), piece.begin(), piece.end());
  }
}
}
