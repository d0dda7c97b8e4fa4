#pragma once
// A compiled PCRE2 pattern over UTF-8 with Unicode properties (\w, \s, \p{L} are Unicode-aware),
// for pre-tokenizers that split by regex. Keeps <pcre2.h> out of headers.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/tokenizers/unicode.h"

namespace headscan {

class Regex {
 public:
  // Throws std::invalid_argument with PCRE2's message if the pattern does not compile. `source`
  // says where the pattern comes from ("tokenizer.json: pre_tokenizer.pattern") for errors while
  // matching; empty for the patterns headscan itself defines.
  explicit Regex(const std::string& pattern, std::string source = {});
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  // The first match at or after byte `start`, or none. Invalid UTF-8 in `text` never matches but
  // is not an error. Safe to call from several threads at once. Throws InputError, naming the
  // source and the pattern, when the search hits one of PCRE2's limits (10 million backtracking
  // steps by default): a pattern that backtracks catastrophically on this text.
  std::optional<ByteSpan> find(std::string_view text, std::size_t start = 0) const;

  // All non-overlapping matches, left to right. After an empty match the search resumes one
  // character later, so an empty-matching pattern cannot loop forever.
  std::vector<ByteSpan> find_all(std::string_view text) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Compiled;
  std::string pattern_;
  std::string source_;
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace headscan
