#pragma once
// Pre-tokenizers of Hugging Face tokenizer.json files: they cut normalized text into the words
// the model tokenizes. Each word stays a NormalizedString, so its alignment to the original line
// travels with it. One class per "type".

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analyzer/tokenizers/normalized_string.h"
#include "analyzer/tokenizers/regex.h"
#include "analyzer/tokenizers/text_pattern.h"

namespace headscan {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Appends the words of `text` to `words`, left to right. Empty words are never appended. Some
  // types (ByteLevel, Metaspace) also rewrite the words they produce.
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

// "Metaspace" (SentencePiece style): spaces become `replacement` ("▁"), which is put in front of
// the text as the prepend scheme says ("always"; "first": only for text at the start of the line;
// "never"); with `split` the text is cut before each replacement character.
class MetaspacePreTokenizer : public PreTokenizer {
 public:
  enum class Prepend { always, first, never };
  MetaspacePreTokenizer(std::string replacement, Prepend prepend, bool split);
  void split(const NormalizedString& text, std::vector<NormalizedString>& words) const override;

 private:
  std::string replacement_;  // one character, UTF-8
  Prepend prepend_;
  bool split_;
};

// "BertPreTokenizer": split on whitespace (removed), then every BERT punctuation character
// (ASCII punctuation or P*) is a word of its own.
class BertPreTokenizer : public PreTokenizer {
 public:
  void split(const NormalizedString& text, std::vector<NormalizedString>& words) const override;
};

// "Split": cut at the matches of a pattern (or, inverted, at what lies between them), keeping or
// merging the matches as `behavior` says.
class SplitPreTokenizer : public PreTokenizer {
 public:
  SplitPreTokenizer(TextPattern pattern, SplitBehavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  void split(const NormalizedString& text, std::vector<NormalizedString>& words) const override;

 private:
  TextPattern pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

// "Digits": numeric characters (Nd, Nl, No) apart from the rest, each on its own with
// individual_digits, else in runs.
class DigitsPreTokenizer : public PreTokenizer {
 public:
  explicit DigitsPreTokenizer(bool individual_digits) : individual_digits_(individual_digits) {}
  void split(const NormalizedString& text, std::vector<NormalizedString>& words) const override;

 private:
  bool individual_digits_;
};

// "Punctuation": BERT punctuation characters split off as `behavior` says (default Isolated).
class PunctuationPreTokenizer : public PreTokenizer {
 public:
  explicit PunctuationPreTokenizer(SplitBehavior behavior) : behavior_(behavior) {}
  void split(const NormalizedString& text, std::vector<NormalizedString>& words) const override;

 private:
  SplitBehavior behavior_;
};

// "CharDelimiterSplit": cut at one character, which is removed.
class CharDelimiterPreTokenizer : public PreTokenizer {
 public:
  explicit CharDelimiterPreTokenizer(char32_t delimiter) : delimiter_(delimiter) {}
  void split(const NormalizedString& text, std::vector<NormalizedString>& words) const override;

 private:
  char32_t delimiter_;
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
