#pragma once
// Normalizers of Hugging Face tokenizer.json files: they rewrite text before pre-tokenization
// while keeping its alignment to the original line. One class per "type".

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analyzer/tokenizers/normalized_string.h"
#include "analyzer/tokenizers/text_pattern.h"

namespace headscan {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(NormalizedString& text) const = 0;
};

// "NFC", "NFD", "NFKC", "NFKD": Unicode normalization forms through utf8proc. Each run of
// characters that normalizes together (a starter and what combines with it) is rewritten as a
// unit; its output aligns to that run's original bytes, or character by character when the run
// is the concatenation of its characters' own normal forms.
class UnicodeNormalizer : public Normalizer {
 public:
  enum class Form { nfc, nfd, nfkc, nfkd };
  explicit UnicodeNormalizer(Form form) : form_(form) {}
  void normalize(NormalizedString& text) const override;

 private:
  Form form_;
};

// "Lowercase": Unicode full lowercase per character (Rust char::to_lowercase).
class LowercaseNormalizer : public Normalizer {
 public:
  void normalize(NormalizedString& text) const override;
};

// "StripAccents": removes every combining mark (general category M), without decomposing first:
// Hugging Face tokenizers put NFD or NFKD before it.
class StripAccentsNormalizer : public Normalizer {
 public:
  void normalize(NormalizedString& text) const override;
};

// "Strip": removes White_Space characters at the start and/or the end.
class StripNormalizer : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void normalize(NormalizedString& text) const override;

 private:
  bool left_;
  bool right_;
};

// "Replace": every match of the pattern becomes `content`, aligned to the match.
class ReplaceNormalizer : public Normalizer {
 public:
  ReplaceNormalizer(TextPattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void normalize(NormalizedString& text) const override;

 private:
  TextPattern pattern_;
  std::string content_;
};

// "Prepend": puts a string in front of a non-empty text (SentencePiece's "▁" dummy prefix).
class PrependNormalizer : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(NormalizedString& text) const override { text.prepend(prefix_); }

 private:
  std::string prefix_;
};

// "BertNormalizer" (Hugging Face normalizers/bert.rs): clean_text drops NUL, U+FFFD and control
// characters and turns whitespace into " "; handle_chinese_chars puts spaces around CJK
// ideographs; strip_accents (default: as lowercase) is NFD then removal of Mn marks; lowercase.
class BertNormalizer : public Normalizer {
 public:
  BertNormalizer(bool clean_text, bool handle_chinese_chars, bool strip_accents, bool lowercase)
      : clean_text_(clean_text),
        handle_chinese_chars_(handle_chinese_chars),
        strip_accents_(strip_accents),
        lowercase_(lowercase) {}
  void normalize(NormalizedString& text) const override;

 private:
  bool clean_text_;
  bool handle_chinese_chars_;
  bool strip_accents_;
  bool lowercase_;
};

// "ByteLevel" normalizer: every byte becomes its GPT-2 byte-level character (see byte_level.h).
class ByteLevelNormalizer : public Normalizer {
 public:
  void normalize(NormalizedString& text) const override;
};

// "Sequence": each normalizer in turn.
class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> normalizers)
      : normalizers_(std::move(normalizers)) {}
  void normalize(NormalizedString& text) const override;

 private:
  std::vector<std::unique_ptr<Normalizer>> normalizers_;
};

// Builds the normalizer described by `spec` (the "normalizer" field); nullptr for JSON null.
// `origin` names the file and `where` the field in error messages. Throws InputError on an
// unsupported type, listing the supported ones.
std::unique_ptr<Normalizer> normalizer_from_json(const nlohmann::json& spec, const std::string& origin,
                                                 const std::string& where = "normalizer");

}  // namespace headscan
