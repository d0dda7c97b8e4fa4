// Text corpora: lines read with UTF-8 repair, tokenized by a small fixed tokenizer and cut into
// windows (make_sequences). The first byte picks the window length; the rest is the file.
// Checks: lines are valid UTF-8 and never empty, and windows cover every token once, in order,
// each within max_length.

#include <memory>

#include "analyzer/corpus/text_lines.h"
#include "analyzer/errors.h"
#include "analyzer/run/sequences/sequences.h"
#include "analyzer/tokenizers/tokenizer.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

const headscan::Tokenizer& word_tokenizer() {
  static const std::unique_ptr<headscan::Tokenizer> tokenizer = headscan::tokenizer_from_hf_json(
      R"({"added_tokens": [{"id": 4, "content": "<s>", "special": true}],
          "normalizer": {"type": "NFKC"}, "pre_tokenizer": {"type": "Whitespace"},
          "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "the": 1, "cat": 2, "世界": 3},
                    "unk_token": "[UNK]"}})",
      "fuzz/words.json");
  return *tokenizer;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const headscan::Tokenizer& tokenizer = word_tokenizer();
  headscan::SequenceShape shape;
  shape.max_length = 3 + data[0] % 16;
  if (data[0] & 0x80) shape.bos_id = 4;
  if (data[0] & 0x40) shape.suffix_ids = {5};  // a template's [SEP]
  const headscan::fuzz::MemoryFile file(std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  try {
    headscan::TextCorpusReader reader(file.path());
    headscan::CorpusLine line;
    while (reader.next(line)) {
      HEADSCAN_FUZZ_CHECK(!line.text.empty());
      std::string copy = line.text;
      HEADSCAN_FUZZ_CHECK(headscan::repair_utf8(copy) == 0 && copy == line.text);
      const std::vector<headscan::Token> tokens = tokenizer.encode(line.text);
      const auto windows = headscan::make_sequences(tokens, tokenizer, shape, line.line_number);
      std::size_t next = 0;
      for (const headscan::Sequence& window : windows) {
        HEADSCAN_FUZZ_CHECK(window.ids.size() <= static_cast<std::size_t>(shape.max_length));
        HEADSCAN_FUZZ_CHECK(window.ids.size() == window.special.size());
        HEADSCAN_FUZZ_CHECK(window.suffix_length == shape.suffix_ids.size());
        HEADSCAN_FUZZ_CHECK(shape.suffix_ids.empty() || (window.ids.back() == 5 && window.special.back() == 1));
        for (std::size_t i = shape.bos_id ? 1 : 0; i + window.suffix_length < window.ids.size(); ++i) {
          HEADSCAN_FUZZ_CHECK(next < tokens.size() && window.ids[i] == tokens[next].id);
          ++next;
        }
      }
      HEADSCAN_FUZZ_CHECK(next == tokens.size());
    }
  } catch (const headscan::InputError&) {
  }
  return 0;
}
