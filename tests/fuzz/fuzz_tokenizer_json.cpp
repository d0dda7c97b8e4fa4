// tokenizer.json: the bytes before the first NUL are the file, the lines after it are encoded.
// Checks that every token lies within its line and has an id below vocab_size().

#include <memory>

#include "analyzer/errors.h"
#include "analyzer/tokenizers/tokenizer.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto parts = headscan::fuzz::split_at_nul(data, size, 2);
  std::unique_ptr<headscan::Tokenizer> tokenizer;
  try {
    tokenizer = headscan::tokenizer_from_hf_json(parts[0], "fuzz/tokenizer.json");
  } catch (const headscan::InputError&) {
    return 0;
  }
  const std::int64_t vocab_size = tokenizer->vocab_size();
  HEADSCAN_FUZZ_CHECK(vocab_size >= 0);
  for (const std::string& piece : tokenizer->template_prefix()) (void)tokenizer->token_to_id(piece);
  for (const std::string& piece : tokenizer->template_suffix()) (void)tokenizer->token_to_id(piece);
  if (parts.size() < 2) return 0;
  for (std::string_view line : headscan::fuzz::lines_of(parts[1])) {
    try {
      for (const headscan::Token& token : tokenizer->encode(line)) {
        HEADSCAN_FUZZ_CHECK(token.begin <= token.end && token.end <= line.size());
        HEADSCAN_FUZZ_CHECK(token.id >= 0 && token.id < vocab_size);
        (void)tokenizer->id_to_piece(token.id);
        (void)tokenizer->is_special(token.id);
      }
    } catch (const headscan::InputError&) {  // e.g. a word a WordLevel model without unk_token lacks
    }
  }
  return 0;
}
