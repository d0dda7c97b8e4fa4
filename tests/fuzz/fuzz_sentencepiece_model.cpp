// SentencePiece .model files, loaded through the shim (libsentencepiece, not instrumented: the
// coverage guiding this target is headscan's side of the shim), then a few texts encoded.

#include <memory>

#include "analyzer/errors.h"
#include "analyzer/tokenizers/sentencepiece_tokenizer.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const headscan::fuzz::MemoryFile file(std::string_view(reinterpret_cast<const char*>(data), size));
  std::unique_ptr<headscan::SentencePieceTokenizer> tokenizer;
  try {
    tokenizer = headscan::SentencePieceTokenizer::load(file.path());
  } catch (const headscan::InputError&) {
    return 0;
  }
  const std::int64_t vocab_size = tokenizer->vocab_size();
  for (const std::string& piece : tokenizer->template_prefix()) (void)tokenizer->token_to_id(piece);
  for (std::string_view line : {"the cat sat", "héllo 世界 😀 <0x41>", "", "  ", "\xff\xfe bad \xc3"}) {
    for (const headscan::Token& token : tokenizer->encode(line)) {
      HEADSCAN_FUZZ_CHECK(token.begin <= token.end && token.end <= line.size());
      HEADSCAN_FUZZ_CHECK(token.id >= 0 && token.id < vocab_size);
      (void)tokenizer->id_to_piece(token.id);
      (void)tokenizer->is_special(token.id);
    }
  }
  (void)tokenizer->describe();
  return 0;
}
