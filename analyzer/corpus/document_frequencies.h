#pragma once
// Document frequencies of tokens, for idf (DESIGN.md, rare_word): counted over the analysed
// corpus, or read from a file made from a larger reference corpus (--idf FILE).
//
// File format (UTF-8 text):
//   headscan-idf 1
//   documents <N>
//   <df> <token as a JSON string>      one line per token with df > 0, e.g. 17 "Ġthe"
// Tokens are written as vocabulary pieces so that the file does not depend on ids. N and df are
// whole numbers in decimal digits, df ≤ N; a token appears at most once.

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/tokenizers/tokenizer.h"

namespace headscan {

class DocumentFrequencies {
 public:
  explicit DocumentFrequencies(std::int64_t vocab_size);

  // Counts each distinct non-special token of one document once.
  void add_document(const std::vector<Token>& tokens, const Tokenizer& tokenizer);
  // A document given in parts (a long line tokenized piece by piece): each part's tokens, then
  // end_document(). add_document(tokens) is add_tokens(tokens) then end_document().
  void add_tokens(const std::vector<Token>& tokens, const Tokenizer& tokenizer);
  void end_document() { ++documents_; }

  std::int64_t documents() const { return documents_; }
  std::int64_t frequency(std::int64_t id) const { return frequencies_.at(id); }
  // idf(t) = ln((N + 1) / (df(t) + 1)) + 1, for every id (special tokens included; callers mask them).
  std::vector<float> idf_table() const;

  // Reads a file in the format above; pieces the tokenizer does not know are ignored. Throws
  // InputError naming the file and line on a malformed file.
  static DocumentFrequencies load(const std::string& path, const Tokenizer& tokenizer);
  void save(const std::string& path, const Tokenizer& tokenizer) const;
  // The text save() writes.
  std::string text(const Tokenizer& tokenizer) const;

  // Whether the file at `path` is whole in the format save() writes (the header, every line a
  // frequency 1 … N and a token as save() quotes it, each line ended): one that `headscan idf
  // --force` may replace. A file of the user's that only starts like one is not.
  static bool is_frequency_file(const std::string& path);

 private:
  std::int64_t documents_ = 0;
  std::vector<std::int64_t> frequencies_;  // by token id
  std::vector<std::int64_t> seen_in_;      // last document each id was counted for
};

}  // namespace headscan
