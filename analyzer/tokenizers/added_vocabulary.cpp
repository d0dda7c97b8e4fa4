#include "analyzer/tokenizers/added_vocabulary.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "analyzer/tokenizers/normalizers/normalizers.h"
#include "analyzer/tokenizers/tokenizer_json.h"

namespace headscan {
namespace {

bool bool_field(const nlohmann::json& entry, const char* name, bool fallback, const std::string& origin,
                const std::string& where) {
  const auto field = entry.find(name);
  if (field == entry.end() || field->is_null()) return fallback;
  if (!field->is_boolean()) throw_bad_field(origin, where + "." + name, "true or false", &*field);
  return field->get<bool>();
}

// The character that ends at byte `end` (> 0), and where it starts.
Utf8Char character_before(std::string_view text, std::size_t end, std::size_t& start) {
  start = end - 1;
  while (start > 0 && end - start < 4 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
  Utf8Char character = decode_utf8(text, start);
  if (start + character.length != end) {  // not a whole character: a stray byte of invalid text
    start = end - 1;
    character = Utf8Char{0xFFFD, 1, false, false};
  }
  return character;
}

}  // namespace

std::vector<AddedToken> added_tokens_from_json(const nlohmann::json* spec, const std::string& origin) {
  std::vector<AddedToken> tokens;
  if (spec == nullptr || spec->is_null()) return tokens;
  if (!spec->is_array()) throw_bad_field(origin, "added_tokens", "a list of token objects", spec);
  for (std::size_t i = 0; i < spec->size(); ++i) {
    const nlohmann::json& entry = (*spec)[i];
    const std::string where = "added_tokens[" + std::to_string(i) + "]";
    if (!entry.is_object()) throw_bad_field(origin, where, "an object with id and content", &entry);
    const auto id = entry.find("id");
    if (id == entry.end()) throw_bad_field(origin, where + ".id", "a non-negative integer", nullptr);
    const auto content = entry.find("content");
    if (content == entry.end() || !content->is_string() || content->get<std::string>().empty()) {
      throw_bad_field(origin, where + ".content", "a non-empty string", content == entry.end() ? nullptr : &*content);
    }
    AddedToken token;
    token.id = token_id(*id, origin, where + ".id");
    token.content = content->get<std::string>();
    token.special = bool_field(entry, "special", false, origin, where);
    token.single_word = bool_field(entry, "single_word", false, origin, where);
    token.lstrip = bool_field(entry, "lstrip", false, origin, where);
    token.rstrip = bool_field(entry, "rstrip", false, origin, where);
    // The tokenizers library's default: special tokens are matched raw, others normalized.
    token.normalized = bool_field(entry, "normalized", !token.special, origin, where);
    tokens.push_back(std::move(token));
  }
  return tokens;
}

AddedVocabulary::AddedVocabulary(std::vector<AddedToken> tokens, const Normalizer* normalizer)
    : tokens_(std::move(tokens)), word_character_(R"(\w)") {
  for (const AddedToken& token : tokens_) {
    std::string pattern = token.content;
    if (token.normalized && normalizer != nullptr) {
      NormalizedString normalized = NormalizedString::from_original(pattern, 0, pattern.size());
      normalizer->normalize(normalized);
      pattern = normalized.text();
    }
    if (pattern.empty()) continue;
    PatternTable& table = token.normalized ? normalized_patterns_ : raw_patterns_;
    table[static_cast<unsigned char>(pattern[0])].push_back({std::move(pattern), &token});
  }
  // Longest first gives leftmost-longest matching; stable keeps the file's order among equals.
  for (PatternTable* table : {&raw_patterns_, &normalized_patterns_}) {
    for (auto& bucket : *table) {
      std::stable_sort(bucket.begin(), bucket.end(),
                       [](const Pattern& a, const Pattern& b) { return a.text.size() > b.text.size(); });
    }
  }
}

bool AddedVocabulary::is_word_character_at(std::string_view text, std::size_t pos) const {
  const Utf8Char character = decode_utf8(text, pos);
  return character.valid && word_character_.find(text.substr(pos, character.length)).has_value();
}

bool AddedVocabulary::ends_with_word_character(std::string_view text, std::size_t end) const {
  std::size_t start = 0;
  const Utf8Char character = character_before(text, end, start);
  return character.valid && word_character_.find(text.substr(start, end - start)).has_value();
}

const AddedVocabulary::Pattern* AddedVocabulary::match_at(std::string_view text, std::size_t pos,
                                                          const PatternTable& table) const {
  for (const Pattern& pattern : table[static_cast<unsigned char>(text[pos])]) {
    if (text.compare(pos, pattern.text.size(), pattern.text) != 0) continue;
    const std::size_t end = pos + pattern.text.size();
    if (pattern.token->single_word &&
        ((pos > 0 && ends_with_word_character(text, pos)) || (end < text.size() && is_word_character_at(text, end)))) {
      continue;
    }
    return &pattern;
  }
  return nullptr;
}

std::vector<AddedTokenSplit> AddedVocabulary::split(std::string_view text, bool normalized) const {
  const PatternTable& table = normalized ? normalized_patterns_ : raw_patterns_;
  std::vector<AddedTokenSplit> splits;
  std::size_t plain_begin = 0;  // start of the text not yet covered by a split
  for (std::size_t pos = 0; pos < text.size();) {
    // Most bytes start no pattern: skip them without a call (this runs over every byte of a corpus).
    if (table[static_cast<unsigned char>(text[pos])].empty()) {
      ++pos;
      continue;
    }
    const Pattern* pattern = match_at(text, pos, table);
    if (pattern == nullptr) {
      ++pos;  // patterns are valid UTF-8, so they never start on a continuation byte
      continue;
    }
    std::size_t begin = pos;
    std::size_t end = pos + pattern->text.size();
    if (pattern->token->lstrip) {
      while (begin > plain_begin) {
        std::size_t start = 0;
        const Utf8Char before = character_before(text, begin, start);
        if (!before.valid || !is_unicode_whitespace(before.code_point) || start < plain_begin) break;
        begin = start;
      }
    }
    if (pattern->token->rstrip) {
      while (end < text.size()) {
        const Utf8Char after = decode_utf8(text, end);
        if (!after.valid || !is_unicode_whitespace(after.code_point)) break;
        end += after.length;
      }
    }
    if (begin > plain_begin) splits.push_back({{plain_begin, begin}, nullptr});
    splits.push_back({{begin, end}, pattern->token});
    plain_begin = pos = end;
  }
  if (text.size() > plain_begin) splits.push_back({{plain_begin, text.size()}, nullptr});
  return splits;
}

}  // namespace headscan
