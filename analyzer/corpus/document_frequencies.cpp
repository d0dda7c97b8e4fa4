#include "analyzer/corpus/document_frequencies.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/checked_file.h"
#include "analyzer/corpus/text_lines.h"
#include "analyzer/errors.h"

namespace headscan {

namespace {

constexpr const char* kMagic = "headscan-idf 1";

// A count written in decimal digits only (no sign, fraction, exponent or space), that fits 63 bits.
std::optional<std::int64_t> parse_count(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || text.front() == '-' || error != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

// A line of the file in a message: quoted, and cut when long.
std::string quote_line(const std::string& line) {
  constexpr std::size_t kShown = 80;
  std::string shown = line.size() > kShown ? line.substr(0, kShown) : line;
  repair_utf8(shown);
  return "\"" + shown + (line.size() > kShown ? "...\"" : "\"");
}

}  // namespace

DocumentFrequencies::DocumentFrequencies(std::int64_t vocab_size)
    : frequencies_(static_cast<std::size_t>(vocab_size), 0), seen_in_(static_cast<std::size_t>(vocab_size), -1) {}

void DocumentFrequencies::add_document(const std::vector<Token>& tokens, const Tokenizer& tokenizer) {
  add_tokens(tokens, tokenizer);
  end_document();
}

void DocumentFrequencies::add_tokens(const std::vector<Token>& tokens, const Tokenizer& tokenizer) {
  for (const Token& token : tokens) {
    if (token.id < 0 || token.id >= static_cast<std::int64_t>(frequencies_.size())) continue;
    if (tokenizer.is_special(token.id) || seen_in_[token.id] == documents_) continue;
    seen_in_[token.id] = documents_;
    ++frequencies_[token.id];
  }
}

std::vector<float> DocumentFrequencies::idf_table() const {
  std::vector<float> table(frequencies_.size());
  const double documents = static_cast<double>(documents_);
  for (std::size_t id = 0; id < table.size(); ++id) {
    table[id] = static_cast<float>(std::log((documents + 1) / (static_cast<double>(frequencies_[id]) + 1)) + 1);
  }
  return table;
}

DocumentFrequencies DocumentFrequencies::load(const std::string& path, const Tokenizer& tokenizer) {
  reject_pipe_or_device(path, "expected a document-frequency file");
  std::ifstream in(path);
  if (!in) {
    throw InputError(fmt::format("{}: cannot read the document-frequency file; give a file written by headscan "
                                 "(idf.txt in a report directory) or in its format",
                                 path));
  }
  auto malformed = [&](std::size_t line_number, const std::string& line, const std::string& problem = {}) {
    return InputError(fmt::format("{}:{}: expected \"{}\", then \"documents N\", then lines \"<df> <token as JSON "
                                  "string>\" with a whole number 0 <= df <= N, found {}{}; give a file written by "
                                  "headscan (idf.txt in a report directory) or in its format",
                                  path, line_number, kMagic, quote_line(line), problem));
  };
  std::string line;
  if (!std::getline(in, line) || line != kMagic) throw malformed(1, line);
  std::optional<std::int64_t> documents;
  if (!std::getline(in, line) || line.rfind("documents ", 0) != 0 ||
      !(documents = parse_count(std::string_view(line).substr(10)))) {
    throw malformed(2, line);
  }
  DocumentFrequencies frequencies(tokenizer.vocab_size());
  frequencies.documents_ = *documents;
  std::vector<std::size_t> line_of(frequencies.frequencies_.size(), 0);  // where each id was given
  for (std::size_t line_number = 3; std::getline(in, line); ++line_number) {
    if (line.empty()) continue;
    const auto space = line.find(' ');
    if (space == std::string::npos) throw malformed(line_number, line, " (no space between df and token)");
    const std::optional<std::int64_t> df = parse_count(std::string_view(line).substr(0, space));
    if (!df || *df > *documents) throw malformed(line_number, line);
    std::string piece;
    try {
      const std::string_view token = std::string_view(line).substr(space + 1);
      if (token.empty() || token.front() != '"') throw std::invalid_argument("not a JSON string");
      piece = nlohmann::json::parse(token).get<std::string>();
    } catch (const std::exception&) {
      throw malformed(line_number, line);
    }
    const std::optional<std::int64_t> id = tokenizer.token_to_id(piece);
    if (!id || *id < 0 || *id >= static_cast<std::int64_t>(frequencies.frequencies_.size())) continue;
    std::size_t& first = line_of[static_cast<std::size_t>(*id)];
    if (first != 0) {
      throw malformed(line_number, line, fmt::format(" (the token was given already on line {})", first));
    }
    first = line_number;
    frequencies.frequencies_[static_cast<std::size_t>(*id)] = *df;
  }
  return frequencies;
}

bool DocumentFrequencies::is_frequency_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  // getline() meets the end of the file only on a last line without its line break.
  if (!std::getline(in, line) || in.eof() || line != kMagic) return false;
  std::optional<std::int64_t> documents;
  if (!std::getline(in, line) || in.eof() || line.rfind("documents ", 0) != 0 ||
      !(documents = parse_count(std::string_view(line).substr(10)))) {
    return false;
  }
  while (std::getline(in, line)) {
    const auto space = line.find(' ');
    if (in.eof() || space == std::string::npos) return false;
    const std::optional<std::int64_t> df = parse_count(std::string_view(line).substr(0, space));
    if (!df || *df < 1 || *df > *documents) return false;
    const std::string token = line.substr(space + 1);
    try {
      const nlohmann::json piece = nlohmann::json::parse(token);
      const auto replace = nlohmann::json::error_handler_t::replace;
      if (!piece.is_string() || piece.dump(-1, ' ', false, replace) != token) return false;
    } catch (const nlohmann::json::exception&) {
      return false;
    }
  }
  return in.eof() && !in.bad();
}

std::string DocumentFrequencies::text(const Tokenizer& tokenizer) const {
  std::ostringstream out;
  out << kMagic << "\ndocuments " << documents_ << '\n';
  for (std::size_t id = 0; id < frequencies_.size(); ++id) {
    if (frequencies_[id] > 0) {
      out << frequencies_[id] << ' ' << nlohmann::json(tokenizer.id_to_piece(static_cast<std::int64_t>(id)))
                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
          << '\n';
    }
  }
  return out.str();
}

void DocumentFrequencies::save(const std::string& path, const Tokenizer& tokenizer) const {
  write_checked_file(path, text(tokenizer));
}

}  // namespace headscan
