#include "analyzer/normalizers.h"

#include <nlohmann/json.hpp>

#include "analyzer/tokenizer_json.h"

namespace headscan {

void LowercaseNormalizer::normalize(NormalizedString& text) const {
  text.rewrite_characters([](const Utf8Char& character, std::string_view bytes, std::string& out) {
    if (character.valid) {
      append_lowercase(out, character.code_point);
    } else {
      out.append(bytes);  // invalid bytes pass through untouched
    }
  });
}

void SequenceNormalizer::normalize(NormalizedString& text) const {
  for (const auto& normalizer : normalizers_) normalizer->normalize(text);
}

std::unique_ptr<Normalizer> normalizer_from_json(const nlohmann::json& spec, const std::string& origin,
                                                 const std::string& where) {
  if (spec.is_null()) return nullptr;
  const std::string type = component_type(spec, origin, where);
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (type == "Sequence") {
    const auto list = spec.find("normalizers");
    if (list == spec.end() || !list->is_array()) {
      throw_bad_field(origin, where + ".normalizers", "a list of normalizers", list == spec.end() ? nullptr : &*list);
    }
    std::vector<std::unique_ptr<Normalizer>> normalizers;
    for (std::size_t i = 0; i < list->size(); ++i) {
      auto normalizer = normalizer_from_json((*list)[i], origin, where + ".normalizers[" + std::to_string(i) + "]");
      if (normalizer) normalizers.push_back(std::move(normalizer));
    }
    return std::make_unique<SequenceNormalizer>(std::move(normalizers));
  }
  throw_unsupported_type(origin, where, "normalizer", type, "Lowercase, Sequence (of supported ones), null");
}

}  // namespace headscan
