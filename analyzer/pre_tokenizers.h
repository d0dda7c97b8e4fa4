#pragma once
// Pre-tokenizers of Hugging Face tokenizer.json files: they cut normalized text into the words
// the model tokenizes. Each word stays a NormalizedString, so its alignment to the original line
// travels with it. One class per "type".

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analyzer/normalized_string.h"
#include "analyzer/regex.h"

namespace headscan {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Appends the words of `text` to `words`, left to right. Empty words are never appended.
  // (Later types such as ByteLevel or Metaspace also rewrite the words they produce.)
  virtual void split(const NormalizedString& text, std::vector<NormalizedString>& words) const = 0;
};

// "WhitespaceSplit": words are the runs of non-White_Space characters.
class WhitespaceSplitPreTokenizer : public PreTokenizer {
 public:
  void split(const NormalizedString& text, std::vector<NormalizedString>& words) const override;
};

// "Whitespace": words are the matches of \w+|[^\w\s]+ (Unicode classes), whitespace dropped.
class WhitespacePreTokenizer : public PreTokenizer {
 public:
  WhitespacePreTokenizer();
  void split(const NormalizedString& text, std::vector<NormalizedString>& words) const override;

 private:
  Regex word_or_punctuation_;
};

// "Sequence": each pre-tokenizer in turn splits every word the previous one produced.
class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> pre_tokenizers)
      : pre_tokenizers_(std::move(pre_tokenizers)) {}
  void split(const NormalizedString& text, std::vector<NormalizedString>& words) const override;

 private:
  std::vector<std::unique_ptr<PreTokenizer>> pre_tokenizers_;
};

// Builds the pre-tokenizer described by `spec` (the "pre_tokenizer" field); nullptr for JSON null
// (the whole text is one word). Throws InputError on an unsupported type, listing the supported.
std::unique_ptr<PreTokenizer> pre_tokenizer_from_json(const nlohmann::json& spec, const std::string& origin,
                                                      const std::string& where = "pre_tokenizer");

}  // namespace headscan
