// Compressed corpora: a text compressed with gzip, zstd or xz (libarchive, as the tests and users
// make them), then whole, cut short or followed by other bytes. The first byte picks the format
// and what is done to the stream; the next two where it is cut; the rest is the text.
// Checks: a whole stream gives exactly the lines of the plain text (long lines in parts that join
// to the line); a damaged one is an InputError, and every line it gave before is the plain text's;
// data after a stream is always refused.

#include <archive.h>
#include <archive_entry.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "analyzer/corpus/text_lines.h"
#include "analyzer/errors.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

std::string compress(const std::string& text, int filter) {
  archive* writer = archive_write_new();
  if (writer == nullptr) throw std::bad_alloc();
  archive_write_add_filter(writer, filter);
  archive_write_set_format_raw(writer);
  archive_write_set_bytes_in_last_block(writer, 1);
  std::vector<char> buffer(text.size() * 2 + 4096);
  std::size_t used = 0;
  if (archive_write_open_memory(writer, buffer.data(), buffer.size(), &used) != ARCHIVE_OK) {
    throw std::runtime_error("archive_write_open_memory failed");
  }
  archive_entry* entry = archive_entry_new();
  archive_entry_set_filetype(entry, AE_IFREG);
  archive_write_header(writer, entry);
  archive_entry_free(entry);
  archive_write_data(writer, text.data(), text.size());
  archive_write_close(writer);
  archive_write_free(writer);
  return std::string(buffer.data(), used);
}

// Every line of the file, long ones joined from their parts.
void read_lines(const std::string& path, std::vector<std::string>& given) {
  headscan::TextCorpusReader reader(path);
  headscan::CorpusLine line;
  while (reader.next(line)) {
    std::string whole = line.text;
    for (std::string part; line.more && reader.next_part(part);) whole += part;
    given.push_back(whole);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  static const int kFilters[] = {ARCHIVE_FILTER_GZIP, ARCHIVE_FILTER_ZSTD, ARCHIVE_FILTER_XZ};
  const int filter = kFilters[data[0] % 3];
  const int damage = (data[0] / 3) % 3;  // 0: whole, 1: cut short, 2: bytes after the stream
  const std::size_t cut_at = static_cast<std::size_t>(data[1]) << 8 | data[2];
  const std::string text(reinterpret_cast<const char*>(data + 3), size - 3);

  std::vector<std::string> plain;
  try {
    const headscan::fuzz::MemoryFile file(text);
    read_lines(file.path(), plain);
  } catch (const headscan::InputError&) {
    return 0;  // not a text corpus (binary): the compressed copy says nothing more
  }
  std::string stream = compress(text, filter);
  if (damage == 1) stream.resize(cut_at % stream.size());
  // Cut within its magic number, the file is no longer compressed data but a (short) text.
  const std::size_t magic = filter == ARCHIVE_FILTER_GZIP ? 2 : filter == ARCHIVE_FILTER_ZSTD ? 4 : 6;
  if (stream.size() < magic) return 0;
  if (damage == 2) stream += "not compressed data\n";
  const headscan::fuzz::MemoryFile file(stream);
  std::vector<std::string> given;
  try {
    read_lines(file.path(), given);
    HEADSCAN_FUZZ_CHECK(damage != 2);
    if (damage == 0) HEADSCAN_FUZZ_CHECK(given == plain);
  } catch (const headscan::InputError&) {
    HEADSCAN_FUZZ_CHECK(damage != 0);
  }
  // Whatever was given before the damage was found is the plain text's.
  HEADSCAN_FUZZ_CHECK(given.size() <= plain.size());
  for (std::size_t i = 0; i < given.size(); ++i) HEADSCAN_FUZZ_CHECK(given[i] == plain[i]);
  return 0;
}
