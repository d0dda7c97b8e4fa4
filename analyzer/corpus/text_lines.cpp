#include "analyzer/corpus/text_lines.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/corpus/decompressing_buffer.h"
#include "analyzer/corpus/growing_file.h"
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

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

bool is_continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// Where `raw` (a line's bytes read so far, more to come) can be cut so that repairing its invalid
// UTF-8 in two halves gives what repairing it whole would: before its last byte that is not a
// continuation byte, when that byte is among the last four (it may start a character that the
// next bytes complete); else anywhere (a character has at most three continuation bytes).
std::size_t repairable_prefix(std::string_view raw) {
  for (std::size_t back = 1; back <= 4 && back <= raw.size(); ++back) {
    if (!is_continuation_byte(raw[raw.size() - back])) return raw.size() - back;
  }
  return raw.size();
}

}  // namespace

std::size_t line_part_end(std::string_view text, std::size_t begin) {
  const std::size_t limit = begin + kLinePartBytes;
  if (limit >= text.size()) return text.size();
  for (std::size_t end = limit; end > begin + 1; --end) {
    if (is_space(text[end]) && !is_space(text[end - 1])) return end;
  }
  std::size_t end = limit;
  while (end > begin + 1 && is_continuation_byte(text[end])) --end;
  return end;
}

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
    throw InputError(shown_path(path) + ": " + expected + ", found nothing at this path; check the path");
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
  // A growing file's size is what is written so far, and its writer writes text: sniffing it
  // would pull more of its source than the analysis reads.
  const bool growing = is_growing_file(path);
  if (growing) total_bytes_ = 0;
  open();
  if (!growing) {
    std::string sample(kSniffBytes, '\0');
    in_.read(sample.data(), static_cast<std::streamsize>(sample.size()));
    sample.resize(static_cast<std::size_t>(in_.gcount()));
    const bool more_follows = sample.size() == kSniffBytes && in_.peek() != std::char_traits<char>::eof();
    reject_binary(path, expected, sample, more_follows);
    open();
  }
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
    buffer_ = std::make_unique<DecompressingBuffer>(path_, expected_, compression_, total_bytes_);
  } else if (auto growing = open_growing_file(path_)) {
    buffer_ = std::move(growing);
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

std::string TextLineReader::expansion_warning() const {
  const auto* decompressing = dynamic_cast<const DecompressingBuffer*>(buffer_.get());
  if (decompressing == nullptr || decompressing->early_ratio() <= 1000) return {};
  return fmt::format("{}: its first 100 MB of {} data expand {:.0f}-fold, far more than text compresses; a small "
                     "file that expands to gigabytes is more likely a decompression bomb than a corpus: check where it "
                     "came from",
                     path_, compression_, decompressing->early_ratio());
}

bool TextLineReader::next(std::string& line) {
  if (!start_line(kMaxWholeLineBytes)) return false;
  if (text_.size() > kMaxWholeLineBytes) {
    throw InputError(fmt::format("{}:{}: {}, found a line longer than {} MiB, which headscan reads whole only up to "
                                 "that size; split the line, or check that the file is what you meant to give",
                                 where_, line_number_, expected_, kMaxWholeLineBytes >> 20));
  }
  line = std::move(text_);
  text_.clear();
  return true;
}

bool TextLineReader::next_in_parts(std::string& part, bool& more) {
  if (!start_line(kLongLineBytes)) return false;
  more = text_.size() > kLongLineBytes;
  if (more) {
    part = take_part();
  } else {
    part = std::move(text_);
    text_.clear();
  }
  return true;
}

bool TextLineReader::next_part(std::string& part) {
  fill(kLinePartBytes + 1);
  if (text_.empty()) return false;
  part = take_part();
  return true;
}

bool TextLineReader::start_line(std::size_t limit) {
  skip_rest_of_line();
  const std::string_view mode(slice_mode_);
  for (;;) {
    const bool starts_document = at_document_start_;
    if (mode == "bytes" && starts_document && position_ >= range_end_) return false;
    const std::uint64_t line_start = position_;
    std::size_t extracted = 0;
    end_ = read_raw(raw_, kLinePartBytes, extracted);
    if (extracted == 0) return false;
    ++line_number_;
    line_at_file_start_ = line_start == 0;
    counting_ = false;
    line_replacements_ = 0;
    fill(limit);
    if (units_ == SliceUnits::blocks) at_document_start_ = end_ != LineEnd::open && is_blank_line(text_);
    if (starts_document) {
      ++document_index_;
      chunk_ = chunks_by_bytes_ ? line_start / chunk_bytes_ : (document_index_ - 1) / kChunkDocuments;
    }
    if (mode == "documents" && chunk_ % slice_.count != slice_.index) {
      skip_rest_of_line();
      continue;
    }
    ++lines_read_;
    counting_ = true;
    if (line_replacements_ > 0) {
      ++invalid_lines_;
      replacements_ += line_replacements_;
    }
    return true;
  }
}

void TextLineReader::fill(std::size_t want) {
  for (;;) {
    if (line_at_file_start_ && raw_.size() >= kUtf8ByteOrderMark.size() && text_.empty() &&
        std::string_view(raw_).substr(0, 3) == kUtf8ByteOrderMark) {
      raw_.erase(0, 3);
    }
    const bool ended = end_ != LineEnd::open;
    if (ended && !raw_.empty() && raw_.back() == '\r') raw_.pop_back();
    const std::size_t cut = ended ? raw_.size() : repairable_prefix(raw_);
    if (cut > 0) {
      line_at_file_start_ = false;
      std::string repaired = raw_.substr(0, cut);
      const std::size_t replaced = repair_utf8(repaired);
      raw_.erase(0, cut);
      text_ += repaired;
      if (replaced > 0 && counting_) {
        if (line_replacements_ == 0) ++invalid_lines_;
        replacements_ += replaced;
      }
      line_replacements_ += replaced;
    }
    if (ended || text_.size() > want) return;
    std::size_t extracted = 0;
    end_ = read_raw(raw_, kLinePartBytes, extracted);
  }
}

std::string TextLineReader::take_part() {
  const std::size_t end = line_part_end(text_, 0);
  std::string part = text_.substr(0, end);
  text_.erase(0, end);
  return part;
}

void TextLineReader::skip_rest_of_line() {
  text_.clear();
  while (end_ == LineEnd::open) {
    raw_.clear();
    std::size_t extracted = 0;
    end_ = read_raw(raw_, kLinePartBytes, extracted);
  }
  raw_.clear();
}

TextLineReader::LineEnd TextLineReader::read_raw(std::string& out, std::size_t max, std::size_t& extracted) {
  const std::size_t old_size = out.size();
  out.resize(old_size + max + 1);
  in_.getline(out.data() + old_size, static_cast<std::streamsize>(max + 1));
  extracted = static_cast<std::size_t>(in_.gcount());
  position_ += extracted;
  LineEnd end = LineEnd::open;
  std::size_t stored = extracted;
  if (in_.eof()) {
    end = LineEnd::file_end;
  } else if (!in_.fail()) {
    end = LineEnd::newline;
    stored = extracted - 1;  // the line break, taken but not stored
  }
  out.resize(old_size + stored);
  if (end == LineEnd::file_end) {
    const auto* decompressing = dynamic_cast<const DecompressingBuffer*>(buffer_.get());
    if (decompressing != nullptr && !decompressing->error().empty()) {
      throw InputError(fmt::format("{}: the {} data is damaged after line {} ({}); check or recreate the file",
                                   path_, compression_, line_number_, decompressing->error()));
    }
    if (in_.bad()) {
      throw std::runtime_error(where_ + ": reading failed after line " + std::to_string(line_number_) + " (" +
                               std::strerror(errno) + ")");
    }
  }
  if (end == LineEnd::open) in_.clear();  // `max` bytes stored: the line goes on
  return end;
}

TextCorpusReader::TextCorpusReader(const std::string& path, std::optional<std::string> json_field, CorpusSlice slice)
    : lines_(path, json_field ? kExpectedJsonLines : kExpected, "text file", slice), json_field_(std::move(json_field)) {}

bool TextCorpusReader::next(CorpusLine& line) {
  for (;;) {
    line.more = false;
    const bool found = json_field_ ? lines_.next(line.text) : lines_.next_in_parts(line.text, line.more);
    if (!found) return false;
    if (line.text.empty()) continue;
    line.line_number = lines_.line_number();
    line.chunk = lines_.chunk();
    if (json_field_ && !document_of_json_line(line)) continue;
    ++documents_read_;
    return true;
  }
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

void reject_nul_bytes(const std::string& path, const std::string& option, const std::string& expected) {
  TextLineReader lines(path, expected, "text file");
  for (std::string line; lines.next(line);) {
    const std::size_t nul = line.find('\0');
    if (nul != std::string::npos) {
      throw InputError(fmt::format("{} {}:{}: {}, found binary data (a NUL byte at column {}); give plain text", option,
                                   path, lines.line_number(), expected, nul + 1));
    }
  }
}

std::string corpus_extension(const std::string& path) {
  auto lowered = [](std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return text;
  };
  const std::string growing = growing_file_name(path);
  std::filesystem::path name = std::filesystem::path(growing.empty() ? path : growing).filename();
  std::string extension = lowered(name.extension().string());
  if (extension == ".gz" || extension == ".zst" || extension == ".xz") extension = lowered(name.stem().extension().string());
  return extension;
}

bool is_jsonl_path(const std::string& path) { return corpus_extension(path) == ".jsonl"; }

}  // namespace headscan
