// CoNLL-U corpora: every sentence read, its spans and arcs checked against its text and words, and
// the `# text` warning built.

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
      for (std::size_t i = 0; i < parse.words.size(); ++i) {
        const auto& word = parse.words[i];
        HEADSCAN_FUZZ_CHECK(word.begin < word.end && word.end <= sentence.text.size());
        HEADSCAN_FUZZ_CHECK(word.head >= -1 && word.head < static_cast<int>(parse.words.size()));
        // A multiword token's later words have its span; other words start after the word before.
        if (i == 0) {
          HEADSCAN_FUZZ_CHECK(!word.continues_multiword);
        } else if (word.continues_multiword) {
          HEADSCAN_FUZZ_CHECK(word.begin == parse.words[i - 1].begin && word.end == parse.words[i - 1].end);
        } else {
          HEADSCAN_FUZZ_CHECK(word.begin >= parse.words[i - 1].end);
        }
      }
    }
    HEADSCAN_FUZZ_CHECK(reader.text_warning().empty() == (reader.text_mismatches() == 0));
  } catch (const headscan::InputError&) {
  }
  return 0;
}
