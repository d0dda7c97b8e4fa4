// CoNLL-U corpora: every sentence read, its spans and arcs checked against its text and words.

#include "analyzer/corpus/conllu.h"
#include "analyzer/errors.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const headscan::fuzz::MemoryFile file(std::string_view(reinterpret_cast<const char*>(data), size));
  try {
    headscan::ConlluReader reader(file.path());
    headscan::ConlluSentence sentence;
    while (reader.next(sentence)) {
      const headscan::ParsedSentence& parse = sentence.parse;
      HEADSCAN_FUZZ_CHECK(!parse.words.empty());
      for (const auto& word : parse.words) {
        HEADSCAN_FUZZ_CHECK(word.begin < word.end && word.end <= sentence.text.size());
        HEADSCAN_FUZZ_CHECK(word.head >= -1 && word.head < static_cast<int>(parse.words.size()));
      }
    }
  } catch (const headscan::InputError&) {
  }
  return 0;
}
