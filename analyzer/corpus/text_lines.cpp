#include "analyzer/corpus/text_lines.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <archive.h>
#include <archive_entry.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/errors.h"
#include "analyzer/json_limits.h"
#include "analyzer/tokenizers/unicode.h"

namespace headscan {
namespace {

constexpr std::size_t kSniffBytes = 64 * 1024;
constexpr double kMaxInvalidShare = 0.30;  // more invalid UTF-8 than this in the sample: binary
constexpr std::string_view kUtf8ByteOrderMark = "\xEF\xBB\xBF";
constexpr const char* kExpected = "expected a UTF-8 text corpus (one document per line)";
constexpr const char* kExpectedJsonLines = "expected a UTF-8 JSON Lines corpus (one object per line)";

bool starts_with_utf16_byte_order_mark(std::string_view sample) {
  return sample.substr(0, 2) == "\xFF\xFE" || sample.substr(0, 2) == "\xFE\xFF";
}

// Rejects files that are not text, judged on their first bytes; `more_follows` says whether the
// file goes on past `sample` (then a character cut by the sample's end is not an error).
void reject_binary(const std::string& path, const std::string& expected, std::string_view sample,
                   bool more_follows) {
  if (starts_with_utf16_byte_order_mark(sample)) {
    throw InputError(path + ": " + expected + ", found UTF-16 text (byte order mark at offset 0); " +
                     "convert it to UTF-8, e.g. iconv -f UTF-16 -t UTF-8");
  }
  const std::size_t nul = sample.find('\0');
  if (nul != std::string_view::npos) {
    throw InputError(path + ": " + expected + ", found binary data (NUL byte at offset " + std::to_string(nul) +
                     "); give a text file");
  }
  std::size_t invalid_bytes = 0;
  for (std::size_t pos = 0; pos < sample.size();) {
    const Utf8Char character = decode_utf8(sample, pos);
    if (!character.valid && !(character.truncated && more_follows)) invalid_bytes += character.length;
    pos += character.length;
  }
  if (static_cast<double>(invalid_bytes) > kMaxInvalidShare * static_cast<double>(sample.size())) {
    throw InputError(path + ": " + expected + ", found binary data (" + std::to_string(invalid_bytes) +
                     " of the first " + std::to_string(sample.size()) + " bytes are not valid UTF-8); " +
                     "give a text file, or convert it to UTF-8 first (e.g. iconv -f LATIN1 -t UTF-8)");
  }
}

// The compression a file's first bytes announce, or "none".
const char* compression_of(std::string_view start) {
  if (start.substr(0, 2) == "\x1F\x8B") return "gzip";
  if (start.substr(0, 4) == "\x28\xB5\x2F\xFD") return "zstd";
  if (start.substr(0, 6) == std::string_view("\xFD" "7zXZ\0", 6)) return "xz";
  return "none";
}

// The decompressed bytes of a gzip, zstd or xz file, through libarchive's raw format. A damaged
// stream ends the input early; error() then says why.
class DecompressingBuffer : public std::streambuf {
 public:
  DecompressingBuffer(const std::string& path, const std::string& expected, std::string_view compression)
      : archive_(archive_read_new()) {
    if (archive_ == nullptr) throw std::bad_alloc();
    archive_read_support_filter_gzip(archive_);
    archive_read_support_filter_zstd(archive_);
    archive_read_support_filter_xz(archive_);
    archive_read_support_format_raw(archive_);
    archive_read_support_format_empty(archive_);  // compressed nothing: an empty corpus, not damage
    archive_entry* entry = nullptr;
    const int opened = archive_read_open_filename(archive_, path.c_str(), kBlockBytes);
    const int header = opened == ARCHIVE_OK ? archive_read_next_header(archive_, &entry) : opened;
    empty_ = header == ARCHIVE_EOF;
    if (header != ARCHIVE_OK && !empty_) {
      const std::string why = archive_error_string(archive_) != nullptr ? archive_error_string(archive_) : "unknown";
      archive_read_free(archive_);
      throw InputError(fmt::format("{}: {}, compressed, but it cannot be decompressed ({}); check the file", path,
                                   expected, why));
    }
    // A file that only starts like a compressed one is read by the raw format as it is: refuse it.
    const int filter = archive_filter_code(archive_, 0);
    const int wanted = compression == "gzip" ? ARCHIVE_FILTER_GZIP
                       : compression == "zstd" ? ARCHIVE_FILTER_ZSTD
                                               : ARCHIVE_FILTER_XZ;
    if (filter != wanted) {
      archive_read_free(archive_);
      throw InputError(fmt::format("{}: {}; its first bytes are those of {} data, but it is not {} (damaged, or not "
                                   "compressed); check the file",
                                   path, expected, compression, compression));
    }
  }
  ~DecompressingBuffer() override { archive_read_free(archive_); }
  DecompressingBuffer(const DecompressingBuffer&) = delete;
  DecompressingBuffer& operator=(const DecompressingBuffer&) = delete;

  const std::string& error() const { return error_; }
  std::uint64_t compressed_bytes_read() const {
    return static_cast<std::uint64_t>(std::max<la_int64_t>(0, archive_filter_bytes(archive_, -1)));
  }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (!error_.empty() || empty_) return traits_type::eof();
    const la_ssize_t count = archive_read_data(archive_, data_.data(), data_.size());
    if (count < 0) {
      error_ = archive_error_string(archive_) != nullptr ? archive_error_string(archive_) : "unknown error";
      return traits_type::eof();
    }
    if (count == 0) return traits_type::eof();
    setg(data_.data(), data_.data(), data_.data() + count);
    return traits_type::to_int_type(*gptr());
  }

 private:
  static constexpr std::size_t kBlockBytes = 1 << 16;
  archive* archive_;
  std::vector<char> data_ = std::vector<char>(1 << 18);
  std::string error_;
  bool empty_ = false;
};

}  // namespace

std::size_t repair_utf8(std::string& text) {
  std::size_t pos = 0;
  while (pos < text.size()) {  // fast path: most lines are valid and are not copied
    const Utf8Char character = decode_utf8(text, pos);
    if (!character.valid) break;
    pos += character.length;
  }
  if (pos == text.size()) return 0;

  std::string repaired(text, 0, pos);
  std::size_t replacements = 0;
  while (pos < text.size()) {
    const Utf8Char character = decode_utf8(text, pos);
    if (character.valid) {
      repaired.append(text, pos, character.length);
    } else {
      repaired += "\xEF\xBF\xBD";  // U+FFFD for one maximal invalid subpart
      ++replacements;
    }
    pos += character.length;
  }
  text = std::move(repaired);
  return replacements;
}

TextLineReader::TextLineReader(const std::string& path, const std::string& expected, const std::string& kind,
                               CorpusSlice slice, SliceUnits units)
    : path_(path), where_(path), slice_(slice), units_(units) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (!fs::exists(status)) {
    throw InputError(path + ": " + expected + ", found nothing at this path; check the path");
  }
  if (fs::is_directory(status)) {
    throw InputError(path + ": " + expected + ", found a directory; give a " + kind + " inside it");
  }
  reject_pipe_or_device(path, expected);
  expected_ = expected;
  {
    std::ifstream start(path, std::ios::binary);
    if (!start) {
      throw InputError(path + ": " + expected + ", found it cannot be opened (" + std::strerror(errno) +
                       "); check its permissions");
    }
    std::string magic(6, '\0');
    start.read(magic.data(), static_cast<std::streamsize>(magic.size()));
    magic.resize(static_cast<std::size_t>(start.gcount()));
    compression_ = compression_of(magic);
  }
  total_bytes_ = fs::is_regular_file(status) ? fs::file_size(path, error) : 0;
  if (error) total_bytes_ = 0;
  open();
  std::string sample(kSniffBytes, '\0');
  in_.read(sample.data(), static_cast<std::streamsize>(sample.size()));
  sample.resize(static_cast<std::size_t>(in_.gcount()));
  const bool more_follows = sample.size() == kSniffBytes && in_.peek() != std::char_traits<char>::eof();
  reject_binary(path, expected, sample, more_follows);
  open();
  chunks_by_bytes_ = std::string_view(compression_) == "none" && total_bytes_ > 0;
  chunk_bytes_ = chunk_bytes(total_bytes_);
  if (slice.whole()) return;
  if (chunks_by_bytes_) {
    enter_byte_range(slice, units);
  } else {
    slice_mode_ = "documents";
  }
}

std::uint64_t chunk_bytes(std::uint64_t size) {
  return std::max(kMinChunkBytes, size / kMaxChunks + (size % kMaxChunks != 0 ? 1 : 0));
}

namespace {

bool is_blank_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line.find_first_not_of(" \t") == std::string_view::npos;
}

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

void TextLineReader::open() {
  in_.rdbuf(nullptr);
  if (std::string_view(compression_) != "none") {
    buffer_ = std::make_unique<DecompressingBuffer>(path_, expected_, compression_);
  } else {
    auto file = std::make_unique<std::filebuf>();
    if (file->open(path_, std::ios::in | std::ios::binary) == nullptr) {
      throw InputError(path_ + ": " + expected_ + ", found it cannot be opened (" + std::strerror(errno) +
                       "); check its permissions");
    }
    buffer_ = std::move(file);
  }
  in_.rdbuf(buffer_.get());
  in_.clear();
}

std::uint64_t TextLineReader::bytes_read() const {
  if (const auto* decompressing = dynamic_cast<const DecompressingBuffer*>(buffer_.get())) {
    return decompressing->compressed_bytes_read();
  }
  return position_ - range_start_;
}

bool TextLineReader::next(std::string& line) {
  const std::string_view mode(slice_mode_);
  for (;;) {
    const bool starts_document = at_document_start_;
    if (mode == "bytes" && starts_document && position_ >= range_end_) return false;
    const std::uint64_t line_start = position_;
    if (!read_line(line)) return false;
    ++line_number_;
    if (units_ == SliceUnits::blocks) at_document_start_ = is_blank_line(line);
    if (starts_document) {
      ++document_index_;
      chunk_ = chunks_by_bytes_ ? line_start / chunk_bytes_ : (document_index_ - 1) / kChunkDocuments;
    }
    if (mode == "documents" && chunk_ % slice_.count != slice_.index) continue;
    ++lines_read_;
    if (line_start == 0 && std::string_view(line).substr(0, 3) == kUtf8ByteOrderMark) line.erase(0, 3);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::size_t replaced = repair_utf8(line);
    if (replaced > 0) {
      ++invalid_lines_;
      replacements_ += replaced;
    }
    return true;
  }
}

bool TextLineReader::read_line(std::string& line) {
  if (!std::getline(in_, line)) {
    const auto* decompressing = dynamic_cast<const DecompressingBuffer*>(buffer_.get());
    if (decompressing != nullptr && !decompressing->error().empty()) {
      throw InputError(fmt::format("{}: the {} data is damaged after line {} ({}); check or recreate the file",
                                   path_, compression_, line_number_, decompressing->error()));
    }
    if (in_.bad()) {
      throw std::runtime_error(where_ + ": reading failed after line " + std::to_string(line_number_) + " (" +
                               std::strerror(errno) + ")");
    }
    return false;
  }
  const bool ended_with_newline = !in_.eof();  // the last line may lack its '\n'
  position_ += line.size() + (ended_with_newline ? 1 : 0);
  return true;
}

TextCorpusReader::TextCorpusReader(const std::string& path, std::optional<std::string> json_field, CorpusSlice slice)
    : lines_(path, json_field ? kExpectedJsonLines : kExpected, "text file", slice), json_field_(std::move(json_field)) {}

bool TextCorpusReader::next(CorpusLine& line) {
  while (lines_.next(line.text)) {
    if (line.text.empty()) continue;
    line.line_number = lines_.line_number();
    line.chunk = lines_.chunk();
    if (json_field_ && !document_of_json_line(line)) continue;
    ++documents_read_;
    return true;
  }
  return false;
}

bool TextCorpusReader::document_of_json_line(CorpusLine& line) const {
  const std::string where = fmt::format("{}:{}", lines_.where(), line.line_number);
  check_json_depth(line.text, where);
  const nlohmann::json object = nlohmann::json::parse(line.text, nullptr, /*allow_exceptions=*/false);
  const char* found = object.is_discarded() ? "a line that is not JSON"
                      : !object.is_object() ? "a JSON value that is not an object"
                      : !object.contains(*json_field_) ? "an object without it"
                      : !object.at(*json_field_).is_string() ? "an object whose field is not a string"
                                                               : nullptr;
  if (found != nullptr) {
    throw InputError(fmt::format("{}: expected JSON Lines, one object per line with the document in its string field "
                                 "\"{}\", found {} ({}); fix the line, or name the field with --text-field",
                                 where, *json_field_, found, quote_json(object.is_discarded() ? nlohmann::json(line.text.substr(0, 60)) : object)));
  }
  // Valid UTF-8: the line was repaired before parsing, and the parser refuses lone surrogates.
  line.text = object.at(*json_field_).get<std::string>();
  return !line.text.empty();
}

std::string corpus_extension(const std::string& path) {
  auto lowered = [](std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return text;
  };
  std::filesystem::path name = std::filesystem::path(path).filename();
  std::string extension = lowered(name.extension().string());
  if (extension == ".gz" || extension == ".zst" || extension == ".xz") extension = lowered(name.stem().extension().string());
  return extension;
}

bool is_jsonl_path(const std::string& path) { return corpus_extension(path) == ".jsonl"; }

}  // namespace headscan
