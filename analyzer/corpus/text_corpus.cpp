// TextCorpusReader (text_lines.h): the documents of a text corpus, one per line, or of a JSON Lines
// corpus, one object's field per line; and the extensions that tell a corpus's format.
#include "analyzer/corpus/text_lines.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/corpus/growing_file.h"
#include "analyzer/errors.h"
#include "analyzer/json_limits.h"

namespace headscan {
namespace {

constexpr const char* kExpected = "expected a UTF-8 text corpus (one document per line)";
constexpr const char* kExpectedJsonLines = "expected a UTF-8 JSON Lines corpus (one object per line)";

}  // namespace

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
