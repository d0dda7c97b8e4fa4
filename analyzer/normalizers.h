#pragma once
// Normalizers of Hugging Face tokenizer.json files: they rewrite text before pre-tokenization
// while keeping its alignment to the original line. One class per "type".

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analyzer/normalized_string.h"

namespace headscan {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(NormalizedString& text) const = 0;
};

// "Lowercase": Unicode full lowercase per character (Rust char::to_lowercase).
class LowercaseNormalizer : public Normalizer {
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
