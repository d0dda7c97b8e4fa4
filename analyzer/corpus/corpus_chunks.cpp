// A plain corpus file's chunks (CorpusSlice, text_lines.h): their size, the first document start
// at or after a byte offset, and how a TextLineReader enters the byte range of its shard.
#include "analyzer/corpus/text_lines.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "analyzer/corpus/line_text.h"

namespace headscan {
namespace {

// Whether the bytes of `file` before `end`, back to the previous line break (or the file's start),
// are blank as is_blank_line() says: spaces and tabs, and a carriage return only as the line's last
// byte, which the byte before `end` is when `line_ends` (a line break is at `end`).
bool blank_before(std::ifstream& file, std::uint64_t end, bool line_ends) {
  constexpr std::uint64_t kChunk = 4096;
  const std::uint64_t last = end;
  std::string chunk;
  while (end > 0) {
    const std::uint64_t begin = end > kChunk ? end - kChunk : 0;
    chunk.resize(end - begin);
    file.clear();
    file.seekg(static_cast<std::streamoff>(begin));
    file.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    for (std::size_t i = chunk.size(); i-- > 0;) {
      if (chunk[i] == '\n') return true;
      const bool trailing_return = line_ends && chunk[i] == '\r' && begin + i + 1 == last;
      if (chunk[i] != ' ' && chunk[i] != '\t' && !trailing_return) return false;
    }
    end = begin;
  }
  return true;
}

// The first document start at or after `offset` in the plain file at `path` of `size` bytes: a line
// start (or, for blocks, a line start after a blank line); `size` when there is none.
std::uint64_t document_start_from(const std::string& path, std::uint64_t size, std::uint64_t offset, SliceUnits units) {
  if (offset == 0) return 0;
  if (offset >= size) return size;
  std::ifstream file(path, std::ios::binary);
  file.seekg(static_cast<std::streamoff>(offset - 1));
  std::string rest;
  // The rest of the line holding byte offset - 1: the next line starts after it.
  if (!std::getline(file, rest) || file.eof()) return size;
  std::uint64_t start = offset + rest.size();
  if (units == SliceUnits::lines) return start;
  bool blank = is_blank_line(rest) && blank_before(file, offset - 1, rest.empty());
  file.clear();
  file.seekg(static_cast<std::streamoff>(start));
  while (!blank) {
    if (!std::getline(file, rest) || file.eof()) return size;
    start += rest.size() + 1;
    blank = is_blank_line(rest);
  }
  return start;
}

}  // namespace

std::uint64_t chunk_bytes(std::uint64_t size) {
  return std::max(kMinChunkBytes, size / kMaxChunks + (size % kMaxChunks != 0 ? 1 : 0));
}

void TextLineReader::enter_byte_range(CorpusSlice slice, SliceUnits units) {
  // Whole chunks: the first of shard `index` is floor(C · index / count), C ≤ kMaxChunks.
  const std::uint64_t chunks = total_bytes_ / chunk_bytes_ + (total_bytes_ % chunk_bytes_ != 0 ? 1 : 0);
  const auto bound = [&](std::uint64_t index) { return chunks * index / slice.count * chunk_bytes_; };
  const std::uint64_t begin = bound(slice.index);
  range_end_ = bound(slice.index + 1);
  range_start_ = document_start_from(path_, total_bytes_, begin, units);
  position_ = range_start_;
  if (range_start_ > 0) {
    in_.seekg(static_cast<std::streamoff>(range_start_));
    where_ = fmt::format("{} (shard {}/{}, lines counted from byte {})", path_, slice.index, slice.count, range_start_);
  }
  total_bytes_ = range_end_ > range_start_ ? range_end_ - range_start_ : 0;
  slice_mode_ = "bytes";
}

}  // namespace headscan
