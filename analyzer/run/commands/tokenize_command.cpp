#include "analyzer/run/commands/tokenize_command.h"

#include <algorithm>
#include <istream>
#include <memory>
#include <ostream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "analyzer/corpus/text_lines.h"
#include "analyzer/model/model_archive.h"
#include "analyzer/run/sequences/sequences.h"
#include "analyzer/run/sequences/text_setup.h"
#include "analyzer/tokenizers/tokenizer.h"

namespace headscan {
namespace {

// The non-empty lines of the input, valid UTF-8, with their 1-based line numbers.
class LineSource {
 public:
  LineSource(const TokenizeOptions& options, std::istream& standard_input) : standard_input_(standard_input) {
    if (options.text) {
      text_ = *options.text;
    } else if (!options.input_path.empty() && options.input_path != "-") {
      file_ = std::make_unique<TextCorpusReader>(options.input_path);
    }
  }

  bool next(CorpusLine& line) {
    if (file_) return file_->next(line);
    std::string raw;
    while (read_raw(raw)) {
      ++line_number_;
      if (!raw.empty() && raw.back() == '\r') raw.pop_back();
      if (raw.empty()) continue;
      if (repair_utf8(raw) > 0) ++invalid_lines_;
      line.text = std::move(raw);
      line.line_number = line_number_;
      return true;
    }
    return false;
  }

  // The next part of a line that came with `more` (from a file only).
  bool next_part(std::string& part) { return file_ && file_->next_part(part); }

  std::size_t invalid_lines() const { return file_ ? file_->lines_with_invalid_utf8() : invalid_lines_; }

 private:
  bool read_raw(std::string& raw) {
    if (!text_) return static_cast<bool>(std::getline(standard_input_, raw));
    if (text_position_ > text_->size()) return false;
    const std::size_t end = std::min(text_->find('\n', text_position_), text_->size());
    raw = text_->substr(text_position_, end - text_position_);
    text_position_ = end + 1;
    return true;
  }

  std::istream& standard_input_;
  std::unique_ptr<TextCorpusReader> file_;
  std::optional<std::string> text_;
  std::size_t text_position_ = 0;
  std::size_t line_number_ = 0;
  std::size_t invalid_lines_ = 0;
};

}  // namespace

std::vector<std::size_t> code_points_before(std::string_view text) {
  std::vector<std::size_t> before(text.size() + 1, 0);
  std::size_t count = 0;
  for (std::size_t pos = 0; pos < text.size(); ++pos) {
    before[pos] = count;
    if ((static_cast<unsigned char>(text[pos]) & 0xC0) != 0x80) ++count;
  }
  before[text.size()] = count;
  return before;
}

TokenizeSummary run_tokenize(const TokenizeOptions& options, std::istream& standard_input, std::ostream& out) {
  const TextSetup setup = load_text_setup(options.model_path, options.tokenizer_path, options.max_length);
  const Tokenizer& tokenizer = *setup.tokenizer;
  const SequenceShape& shape = setup.shape;
  const std::optional<BosChoice>& bos = setup.bos;
  TokenizeSummary summary;
  summary.tokenizer = setup.tokenizer_description;
  summary.bos = bos ? fmt::format("{} (id {}, from {})", bos->token, bos->id, bos->source) : "none";
  summary.max_length = shape.max_length;
  const std::vector<std::string> suffix = tokenizer.template_suffix();
  summary.suffix = suffix.empty() ? "none" : fmt::format("{} (from tokenizer template)", fmt::join(suffix, " "));

  // A token with its span in code points of the line.
  struct SpannedToken {
    Token token;
    std::size_t begin = 0;
    std::size_t end = 0;
  };
  const std::size_t room = shape.room();
  LineSource lines(options, standard_input);
  CorpusLine line;
  while (lines.next(line)) {
    ++summary.documents;
    std::vector<SpannedToken> pending;  // tokens not yet in a window
    std::size_t window = 0;
    // Writes the windows that `pending` fills (all of them, the last one short, when `line_ends`).
    auto write_windows = [&](bool line_ends) {
      std::size_t start = 0;
      for (; start < pending.size() && (line_ends || pending.size() - start >= room); start += room) {
        const std::size_t stop = std::min(pending.size(), start + room);
        std::vector<Token> tokens;
        for (std::size_t i = start; i < stop; ++i) tokens.push_back(pending[i].token);
        const Sequence sequence = make_sequences(tokens, tokenizer, shape, line.line_number).front();
        nlohmann::ordered_json ids = nlohmann::ordered_json::array();
        nlohmann::ordered_json pieces = nlohmann::ordered_json::array();
        nlohmann::ordered_json spans = nlohmann::ordered_json::array();
        if (shape.bos_id) {
          ids.push_back(*shape.bos_id);
          pieces.push_back(bos->token);
          spans.push_back({0, 0});
        }
        for (std::size_t i = start; i < stop; ++i) {
          ids.push_back(pending[i].token.id);
          pieces.push_back(pending[i].token.piece);
          spans.push_back({pending[i].begin, pending[i].end});
        }
        for (std::size_t k = 0; k < sequence.suffix_length; ++k) {
          ids.push_back(shape.suffix_ids[k]);
          pieces.push_back(suffix[k]);
          spans.push_back({0, 0});  // as the tokenizers library gives special tokens
        }
        const nlohmann::ordered_json object = {{"line", line.line_number}, {"window", window++},
                                               {"ids", ids},                {"tokens", pieces},
                                               {"spans", spans}};
        out << object.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
        ++summary.windows;
        summary.tokens += sequence.ids.size();
      }
      pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(std::min(start, pending.size())));
    };
    // A line over kLongLineBytes is tokenized in its parts, as the analysis tokenizes it, and its
    // windows are written as the parts fill them: such a line is never held whole.
    std::size_t characters_before = 0;  // code points of the line's earlier parts
    std::string part = std::move(line.text);
    for (bool more = true; more; more = line.more && lines.next_part(part)) {
      const std::vector<std::size_t> before = code_points_before(part);
      auto begin_of = [&](std::size_t byte) {  // the character that contains `byte`
        const bool inside = byte < part.size() && (static_cast<unsigned char>(part[byte]) & 0xC0) == 0x80;
        return before[byte] - (inside ? 1 : 0);
      };
      for (Token& token : tokenizer.encode(part)) {
        const std::size_t begin = characters_before + begin_of(token.begin);
        const std::size_t end = characters_before + before[token.end];
        pending.push_back({std::move(token), begin, end});
      }
      characters_before += before.back();
      write_windows(/*line_ends=*/false);
    }
    write_windows(/*line_ends=*/true);
  }
  if (lines.invalid_lines() > 0) {
    summary.warnings.push_back(fmt::format("{} line(s) had invalid UTF-8, replaced by U+FFFD before tokenizing",
                                           lines.invalid_lines()));
  }
  return summary;
}

}  // namespace headscan
