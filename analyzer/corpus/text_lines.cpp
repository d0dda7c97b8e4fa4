#include "analyzer/corpus/text_lines.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string_view>

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

TextLineReader::TextLineReader(const std::string& path, const std::string& expected, const std::string& kind)
    : path_(path) {
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
  in_.open(path, std::ios::binary);
  if (!in_) {
    throw InputError(path + ": " + expected + ", found it cannot be opened (" + std::strerror(errno) +
                     "); check its permissions");
  }
  total_bytes_ = fs::is_regular_file(status) ? fs::file_size(path, error) : 0;
  if (error) total_bytes_ = 0;

  std::string sample(kSniffBytes, '\0');
  in_.read(sample.data(), static_cast<std::streamsize>(sample.size()));
  sample.resize(static_cast<std::size_t>(in_.gcount()));
  const bool more_follows = sample.size() == kSniffBytes && in_.peek() != std::char_traits<char>::eof();
  reject_binary(path, expected, sample, more_follows);

  in_.clear();
  in_.seekg(0);
  if (!in_) {
    throw InputError(path + ": " + expected + ", found a pipe or device that cannot be read twice; " +
                     "write it to a file first");
  }
}

bool TextLineReader::next(std::string& line) {
  if (!std::getline(in_, line)) {
    if (in_.bad()) {
      throw std::runtime_error(path_ + ": reading failed after line " + std::to_string(lines_read_) + " (" +
                               std::strerror(errno) + ")");
    }
    return false;
  }
  const bool ended_with_newline = !in_.eof();  // the last line may lack its '\n'
  bytes_read_ += line.size() + (ended_with_newline ? 1 : 0);
  ++lines_read_;
  if (lines_read_ == 1 && std::string_view(line).substr(0, 3) == kUtf8ByteOrderMark) line.erase(0, 3);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  const std::size_t replaced = repair_utf8(line);
  if (replaced > 0) {
    ++invalid_lines_;
    replacements_ += replaced;
  }
  return true;
}

TextCorpusReader::TextCorpusReader(const std::string& path, std::optional<std::string> json_field)
    : lines_(path, json_field ? kExpectedJsonLines : kExpected, "text file"), json_field_(std::move(json_field)) {}

bool TextCorpusReader::next(CorpusLine& line) {
  while (lines_.next(line.text)) {
    if (line.text.empty()) continue;
    line.line_number = lines_.lines_read();
    if (json_field_ && !document_of_json_line(line)) continue;
    ++documents_read_;
    return true;
  }
  return false;
}

bool TextCorpusReader::document_of_json_line(CorpusLine& line) const {
  const std::string where = fmt::format("{}:{}", path(), line.line_number);
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

bool is_jsonl_path(const std::string& path) {
  std::string extension = std::filesystem::path(path).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return extension == ".jsonl";
}

}  // namespace headscan
