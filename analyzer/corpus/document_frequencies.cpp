#include "analyzer/corpus/document_frequencies.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/errors.h"

namespace headscan {

namespace {

constexpr const char* kMagic = "headscan-idf 1";

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
  auto malformed = [&](std::size_t line_number, const std::string& found) {
    return InputError(fmt::format("{}:{}: expected \"{}\", then \"documents N\", then lines \"<df> <token as JSON "
                                  "string>\", found {}",
                                  path, line_number, kMagic, found));
  };
  std::string line;
  if (!std::getline(in, line) || line != kMagic) throw malformed(1, "\"" + line + "\"");
  std::int64_t documents = -1;
  std::string word;
  if (!std::getline(in, line) || !(std::istringstream(line) >> word >> documents) || word != "documents" ||
      documents < 0) {
    throw malformed(2, "\"" + line + "\"");
  }
  DocumentFrequencies frequencies(tokenizer.vocab_size());
  frequencies.documents_ = documents;
  for (std::size_t line_number = 3; std::getline(in, line); ++line_number) {
    if (line.empty()) continue;
    const auto space = line.find(' ');
    std::int64_t df = -1;
    std::string piece;
    try {
      df = std::stoll(line.substr(0, space));
      piece = nlohmann::json::parse(line.substr(space + 1)).get<std::string>();
    } catch (const std::exception&) {
      throw malformed(line_number, "\"" + line + "\"");
    }
    if (space == std::string::npos || df < 0 || df > documents) throw malformed(line_number, "\"" + line + "\"");
    if (auto id = tokenizer.token_to_id(piece); id && *id < static_cast<std::int64_t>(frequencies.frequencies_.size())) {
      frequencies.frequencies_[*id] = df;
    }
  }
  return frequencies;
}

void DocumentFrequencies::save(const std::string& path, const Tokenizer& tokenizer) const {
  std::ofstream out(path);
  out << kMagic << "\ndocuments " << documents_ << '\n';
  for (std::size_t id = 0; id < frequencies_.size(); ++id) {
    if (frequencies_[id] > 0) {
      out << frequencies_[id] << ' ' << nlohmann::json(tokenizer.id_to_piece(static_cast<std::int64_t>(id)))
                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
          << '\n';
    }
  }
  if (!out) throw std::runtime_error(fmt::format("{}: cannot write", path));
}

}  // namespace headscan
