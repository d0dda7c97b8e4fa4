#include "analyzer/tokenizers/normalizers/normalizers.h"

#include <nlohmann/json.hpp>

#include "analyzer/tokenizers/pre_tokenizers/byte_level.h"
#include "analyzer/tokenizers/tokenizer_json.h"

namespace headscan {
namespace {

constexpr const char* kSupportedNormalizers =
    "NFC, NFD, NFKC, NFKD, Lowercase, StripAccents, Strip, Replace, Prepend, BertNormalizer, ByteLevel, "
    "Sequence (of supported ones), null";

// BERT's "Chinese character": the CJK Unified Ideographs blocks and their extensions and
// compatibility blocks, as listed in Hugging Face normalizers/bert.rs (from Google's BERT).
bool is_chinese_character(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// Keeps the characters for which `keep` holds (Hugging Face's NormalizedString::filter).
template <typename Keep>
void filter_characters(NormalizedString& text, Keep&& keep) {
  text.rewrite_characters([&](const Utf8Char& character, std::string_view bytes, std::string& out) {
    if (!character.valid || keep(character.code_point)) out.append(bytes);
  });
}

bool bool_option(const nlohmann::json& spec, const char* name, bool fallback, const std::string& origin,
                 const std::string& where) {
  const auto field = spec.find(name);
  if (field == spec.end() || field->is_null()) return fallback;
  if (!field->is_boolean()) throw_bad_field(origin, where + "." + name, "true or false", &*field);
  return field->get<bool>();
}

std::string string_option(const nlohmann::json& spec, const char* name, const std::string& origin,
                          const std::string& where) {
  const auto field = spec.find(name);
  if (field == spec.end() || !field->is_string()) {
    throw_bad_field(origin, where + "." + name, "a string", field == spec.end() ? nullptr : &*field);
  }
  return field->get<std::string>();
}

}  // namespace

void LowercaseNormalizer::normalize(NormalizedString& text) const {
  text.rewrite_characters([](const Utf8Char& character, std::string_view bytes, std::string& out) {
    if (character.valid) {
      append_lowercase(out, character.code_point);
    } else {
      out.append(bytes);  // invalid bytes pass through untouched
    }
  });
}

void StripAccentsNormalizer::normalize(NormalizedString& text) const {
  filter_characters(text, [](char32_t c) { return !is_unicode_mark(c); });
}

void StripNormalizer::normalize(NormalizedString& text) const {
  const std::string& bytes = text.text();
  std::size_t begin = 0;
  std::size_t end = bytes.size();
  if (left_) {
    while (begin < end) {
      const Utf8Char character = decode_utf8(bytes, begin);
      if (!character.valid || !is_unicode_whitespace(character.code_point)) break;
      begin += character.length;
    }
  }
  if (right_) {
    while (end > begin) {
      std::size_t start = end - 1;
      while (start > begin && (static_cast<unsigned char>(bytes[start]) & 0xC0) == 0x80) --start;
      const Utf8Char character = decode_utf8(bytes, start);
      if (!character.valid || start + character.length != end || !is_unicode_whitespace(character.code_point)) break;
      end = start;
    }
  }
  if (begin != 0 || end != bytes.size()) text = text.slice(begin, end);
}

void ReplaceNormalizer::normalize(NormalizedString& text) const {
  const std::vector<PatternMatch> matches = pattern_.find_matches(text.text());
  if (matches.size() == 1 && !matches.front().is_match) return;
  NormalizedString::Builder builder(text);
  for (const PatternMatch& match : matches) {
    if (!match.is_match) {
      builder.copy(match.span.begin, match.span.end);
    } else if (match.span.end > match.span.begin) {
      builder.append(content_, match.span.begin, match.span.end);
    }
  }
  text = builder.finish();
}

void BertNormalizer::normalize(NormalizedString& text) const {
  if (clean_text_) {
    text.rewrite_characters([](const Utf8Char& character, std::string_view bytes, std::string& out) {
      const char32_t c = character.code_point;
      if (!character.valid) {
        out.append(bytes);
      } else if (c == '\t' || c == '\n' || c == '\r' || is_unicode_whitespace(c)) {
        out += ' ';
      } else if (c != 0 && c != 0xFFFD && !is_unicode_other(c)) {
        out.append(bytes);
      }
    });
  }
  if (handle_chinese_chars_) {
    text.rewrite_characters([](const Utf8Char& character, std::string_view bytes, std::string& out) {
      const bool spaced = character.valid && is_chinese_character(character.code_point);
      if (spaced) out += ' ';
      out.append(bytes);
      if (spaced) out += ' ';
    });
  }
  if (strip_accents_) {
    UnicodeNormalizer(UnicodeNormalizer::Form::nfd).normalize(text);
    filter_characters(text, [](char32_t c) { return !is_nonspacing_mark(c); });
  }
  if (lowercase_) LowercaseNormalizer().normalize(text);
}

void ByteLevelNormalizer::normalize(NormalizedString& text) const { text = to_byte_level(text); }

void SequenceNormalizer::normalize(NormalizedString& text) const {
  for (const auto& normalizer : normalizers_) normalizer->normalize(text);
}

std::unique_ptr<Normalizer> normalizer_from_json(const nlohmann::json& spec, const std::string& origin,
                                                 const std::string& where) {
  if (spec.is_null()) return nullptr;
  const std::string type = component_type(spec, origin, where);
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(UnicodeNormalizer::Form::nfc);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(UnicodeNormalizer::Form::nfd);
  if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(UnicodeNormalizer::Form::nfkc);
  if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(UnicodeNormalizer::Form::nfkd);
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (type == "StripAccents") return std::make_unique<StripAccentsNormalizer>();
  if (type == "Strip") {
    return std::make_unique<StripNormalizer>(bool_option(spec, "strip_left", true, origin, where),
                                             bool_option(spec, "strip_right", true, origin, where));
  }
  if (type == "Replace") {
    const auto pattern = spec.find("pattern");
    if (pattern == spec.end()) throw_bad_field(origin, where + ".pattern", "a pattern", nullptr);
    return std::make_unique<ReplaceNormalizer>(TextPattern::from_json(*pattern, origin, where + ".pattern"),
                                               string_option(spec, "content", origin, where));
  }
  if (type == "Prepend") return std::make_unique<PrependNormalizer>(string_option(spec, "prepend", origin, where));
  if (type == "BertNormalizer") {
    const bool lowercase = bool_option(spec, "lowercase", true, origin, where);
    return std::make_unique<BertNormalizer>(bool_option(spec, "clean_text", true, origin, where),
                                            bool_option(spec, "handle_chinese_chars", true, origin, where),
                                            bool_option(spec, "strip_accents", lowercase, origin, where), lowercase);
  }
  if (type == "ByteLevel") return std::make_unique<ByteLevelNormalizer>();
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
  throw_unsupported_type(origin, where, "normalizer", type, kSupportedNormalizers);
}

}  // namespace headscan
