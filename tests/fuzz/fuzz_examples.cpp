// --examples files: the prompts the report shows whole. Checks: a file with a NUL byte anywhere is
// refused with InputError; one that is accepted gives lines of valid UTF-8 without NUL.

#include <string>

#include "analyzer/corpus/text_lines.h"
#include "analyzer/errors.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string contents(reinterpret_cast<const char*>(data), size);
  const headscan::fuzz::MemoryFile file(contents);
  try {
    headscan::reject_nul_bytes(file.path(), "--examples", "expected a UTF-8 text file with one prompt per line");
  } catch (const headscan::InputError&) {
    return 0;
  }
  HEADSCAN_FUZZ_CHECK(contents.find('\0') == std::string::npos);
  try {
    headscan::TextCorpusReader reader(file.path());
    headscan::CorpusLine line;
    while (reader.next(line)) {
      std::string copy = line.text;
      HEADSCAN_FUZZ_CHECK(headscan::repair_utf8(copy) == 0 && line.text.find('\0') == std::string::npos);
    }
  } catch (const headscan::InputError&) {
    // mostly invalid UTF-8: refused as binary by the corpus reader as well
  }
  return 0;
}
