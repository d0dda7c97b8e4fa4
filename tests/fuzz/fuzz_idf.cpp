// --idf FILE: document frequencies read for a small fixed vocabulary; every frequency is at most
// the document count, and the idf table is finite.

#include <cmath>
#include <memory>

#include "analyzer/corpus/document_frequencies.h"
#include "analyzer/errors.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

const headscan::Tokenizer& vocabulary() {
  static const std::unique_ptr<headscan::Tokenizer> tokenizer = headscan::tokenizer_from_hf_json(
      R"({"pre_tokenizer": {"type": "Whitespace"},
          "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "the": 1, "cat": 2, "Ġthe": 3, "世界": 4},
                    "unk_token": "[UNK]"}})",
      "fuzz/words.json");
  return *tokenizer;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const headscan::Tokenizer& tokenizer = vocabulary();
  const headscan::fuzz::MemoryFile file(std::string_view(reinterpret_cast<const char*>(data), size));
  try {
    const auto frequencies = headscan::DocumentFrequencies::load(file.path(), tokenizer);
    HEADSCAN_FUZZ_CHECK(frequencies.documents() >= 0);
    for (std::int64_t id = 0; id < tokenizer.vocab_size(); ++id) {
      HEADSCAN_FUZZ_CHECK(frequencies.frequency(id) >= 0 && frequencies.frequency(id) <= frequencies.documents());
    }
    for (float idf : frequencies.idf_table()) HEADSCAN_FUZZ_CHECK(std::isfinite(idf) && idf >= 1.0f);
  } catch (const headscan::InputError&) {
  }
  return 0;
}
