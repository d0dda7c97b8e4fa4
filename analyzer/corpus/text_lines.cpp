// TextLineReader (text_lines.h): a text file opened (checked, sniffed for binary data, decompressed
// when compressed) and read line by line, or in parts, in bounded memory, its invalid UTF-8 repaired
// and counted; and reject_nul_bytes().
#include "analyzer/corpus/text_lines.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "analyzer/corpus/decompressing_buffer.h"
#include "analyzer/corpus/growing_file.h"
#include "analyzer/corpus/line_text.h"
#include "analyzer/errors.h"
#include "analyzer/tokenizers/unicode.h"

namespace headscan {
namespace {

constexpr std::size_t kSniffBytes = 64 * 1024;
constexpr double kMaxInvalidShare = 0.30;  // more invalid UTF-8 than this in the sample: binary
constexpr std::string_view kUtf8ByteOrderMark = "\xEF\xBB\xBF";

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

}  // namespace

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

}  // namespace headscan
