#include "analyzer/tokenizers/pre_tokenizers/pre_tokenizers.h"

#include <nlohmann/json.hpp>

#include "analyzer/tokenizers/pre_tokenizers/byte_level.h"
#include "analyzer/errors.h"
#include "analyzer/tokenizers/tokenizer_json.h"

namespace headscan {
namespace {

constexpr const char* kSupportedPreTokenizers =
    "ByteLevel, Whitespace, WhitespaceSplit, Metaspace, BertPreTokenizer, Split, Digits, Punctuation, "
    "CharDelimiterSplit, Sequence (of supported ones), null";

bool bool_option(const nlohmann::json& spec, const char* name, bool fallback, const std::string& origin,
                 const std::string& where) {
  const auto field = spec.find(name);
  if (field == spec.end() || field->is_null()) return fallback;
  if (!field->is_boolean()) throw_bad_field(origin, where + "." + name, "true or false", &*field);
  return field->get<bool>();
}

// A field that must hold exactly one character, such as Metaspace's replacement "▁".
std::string character_option(const nlohmann::json& spec, const char* name, const std::string& fallback,
                             const std::string& origin, const std::string& where) {
  const auto field = spec.find(name);
  if (field == spec.end() || field->is_null()) return fallback;
  if (field->is_string()) {
    const std::string text = field->get<std::string>();
    if (!text.empty()) {
      const Utf8Char character = decode_utf8(text, 0);
      if (character.valid && character.length == text.size()) return text;
    }
  }
  throw_bad_field(origin, where + "." + name, "a string of one character", &*field);
}

MetaspacePreTokenizer::Prepend prepend_scheme(const nlohmann::json& spec, const std::string& origin,
                                              const std::string& where) {
  // Files written before prepend_scheme existed say add_prefix_space: true/false.
  using Prepend = MetaspacePreTokenizer::Prepend;
  const bool add_prefix_space = bool_option(spec, "add_prefix_space", true, origin, where);
  const auto field = spec.find("prepend_scheme");
  if (field == spec.end() || field->is_null()) return add_prefix_space ? Prepend::always : Prepend::never;
  const std::string scheme = field->is_string() ? field->get<std::string>() : "";
  Prepend prepend = Prepend::always;
  if (scheme == "always") {
    prepend = Prepend::always;
  } else if (scheme == "first") {
    prepend = Prepend::first;
  } else if (scheme == "never") {
    prepend = Prepend::never;
  } else {
    throw_bad_field(origin, where + ".prepend_scheme", "\"always\", \"first\" or \"never\"", &*field);
  }
  if (!add_prefix_space && prepend != Prepend::never) {
    throw InputError(origin + ": " + where + ": add_prefix_space false contradicts prepend_scheme \"" + scheme +
                     "\" (the tokenizers library refuses this file too); remove add_prefix_space");
  }
  return prepend;
}

}  // namespace

void WhitespaceSplitPreTokenizer::split(const NormalizedString& text, std::vector<NormalizedString>& words) const {
  const std::string& bytes = text.text();
  std::size_t word_begin = 0;
  for (std::size_t pos = 0; pos < bytes.size();) {
    const Utf8Char character = decode_utf8(bytes, pos);
    if (character.valid && is_unicode_whitespace(character.code_point)) {
      if (pos > word_begin) words.push_back(text.slice(word_begin, pos));
      word_begin = pos + character.length;
    }
    pos += character.length;
  }
  if (bytes.size() > word_begin) words.push_back(text.slice(word_begin, bytes.size()));
}

// The pattern of Hugging Face's Whitespace pre-tokenizer (pre_tokenizers/whitespace.rs),
// \w+|[^\w\s]+, with \w and \s as Rust's regex crate defines them (UTS #18): \w is Alphabetic,
// marks, decimal digits, connector punctuation and the joiners (so "नमस्ते", "Ⅻz" and U+200D are
// words), \s is White_Space. PCRE2's own \w leaves out marks and the joiners before 10.43.
WhitespacePreTokenizer::WhitespacePreTokenizer()
    : word_or_punctuation_(
          R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]+|[^\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}\p{White_Space}]+)") {}

void WhitespacePreTokenizer::split(const NormalizedString& text, std::vector<NormalizedString>& words) const {
  for (const ByteSpan& match : word_or_punctuation_.find_all(text.text())) {
    if (match.end > match.begin) words.push_back(text.slice(match.begin, match.end));
  }
}

MetaspacePreTokenizer::MetaspacePreTokenizer(std::string replacement, Prepend prepend, bool split)
    : replacement_(std::move(replacement)), prepend_(prepend), split_(split) {}

void MetaspacePreTokenizer::split(const NormalizedString& text, std::vector<NormalizedString>& words) const {
  const std::string& bytes = text.text();
  NormalizedString::Builder builder(text);
  std::size_t copied = 0;
  for (std::size_t pos = bytes.find(' '); pos != std::string::npos; pos = bytes.find(' ', pos + 1)) {
    builder.copy(copied, pos);
    builder.append(replacement_, pos, pos + 1);
    copied = pos + 1;
  }
  builder.copy(copied, bytes.size());
  NormalizedString replaced = builder.finish();

  const bool starts_with_replacement = replaced.text().compare(0, replacement_.size(), replacement_) == 0;
  if (!starts_with_replacement &&
      (prepend_ == Prepend::always || (prepend_ == Prepend::first && replaced.original_begin() == 0))) {
    replaced.prepend(replacement_);
  }
  if (!split_) {
    if (!replaced.empty()) words.push_back(std::move(replaced));
    return;
  }
  const char32_t delimiter = decode_utf8(replacement_, 0).code_point;
  split_on_matches(replaced, find_character_matches(replaced.text(), [delimiter](char32_t c) { return c == delimiter; }),
                   SplitBehavior::merged_with_next, words);
}

void BertPreTokenizer::split(const NormalizedString& text, std::vector<NormalizedString>& words) const {
  std::vector<NormalizedString> pieces;
  split_on_matches(text, find_character_matches(text.text(), is_unicode_whitespace), SplitBehavior::removed, pieces);
  for (const NormalizedString& piece : pieces) {
    split_on_matches(piece, find_character_matches(piece.text(), is_bert_punctuation), SplitBehavior::isolated, words);
  }
}

void SplitPreTokenizer::split(const NormalizedString& text, std::vector<NormalizedString>& words) const {
  std::vector<PatternMatch> matches = pattern_.find_matches(text.text());
  if (invert_) invert_matches(matches);
  split_on_matches(text, matches, behavior_, words);
}

void DigitsPreTokenizer::split(const NormalizedString& text, std::vector<NormalizedString>& words) const {
  split_on_matches(text, find_character_matches(text.text(), is_unicode_numeric),
                   individual_digits_ ? SplitBehavior::isolated : SplitBehavior::contiguous, words);
}

void PunctuationPreTokenizer::split(const NormalizedString& text, std::vector<NormalizedString>& words) const {
  split_on_matches(text, find_character_matches(text.text(), is_bert_punctuation), behavior_, words);
}

void CharDelimiterPreTokenizer::split(const NormalizedString& text, std::vector<NormalizedString>& words) const {
  const char32_t delimiter = delimiter_;
  split_on_matches(text, find_character_matches(text.text(), [delimiter](char32_t c) { return c == delimiter; }),
                   SplitBehavior::removed, words);
}

void SequencePreTokenizer::split(const NormalizedString& text, std::vector<NormalizedString>& words) const {
  std::vector<NormalizedString> current{text};
  for (const auto& pre_tokenizer : pre_tokenizers_) {
    std::vector<NormalizedString> next;
    for (const NormalizedString& word : current) pre_tokenizer->split(word, next);
    current = std::move(next);
  }
  for (NormalizedString& word : current) {
    if (!word.empty()) words.push_back(std::move(word));
  }
}

std::unique_ptr<PreTokenizer> pre_tokenizer_from_json(const nlohmann::json& spec, const std::string& origin,
                                                      const std::string& where) {
  if (spec.is_null()) return nullptr;
  const std::string type = component_type(spec, origin, where);
  if (type == "ByteLevel") {
    // trim_offsets only matters to post-processing (offsets without the leading space).
    return std::make_unique<ByteLevelPreTokenizer>(bool_option(spec, "add_prefix_space", true, origin, where),
                                                   bool_option(spec, "use_regex", true, origin, where));
  }
  if (type == "WhitespaceSplit") return std::make_unique<WhitespaceSplitPreTokenizer>();
  if (type == "Whitespace") return std::make_unique<WhitespacePreTokenizer>();
  if (type == "Metaspace") {
    return std::make_unique<MetaspacePreTokenizer>(character_option(spec, "replacement", "\u2581", origin, where),
                                                   prepend_scheme(spec, origin, where),
                                                   bool_option(spec, "split", true, origin, where));
  }
  if (type == "BertPreTokenizer") return std::make_unique<BertPreTokenizer>();
  if (type == "Split") {
    const auto pattern = spec.find("pattern");
    if (pattern == spec.end()) throw_bad_field(origin, where + ".pattern", "a pattern", nullptr);
    const auto behavior = spec.find("behavior");
    return std::make_unique<SplitPreTokenizer>(
        TextPattern::from_json(*pattern, origin, where + ".pattern"),
        split_behavior_from_json(behavior == spec.end() ? nullptr : &*behavior, origin, where + ".behavior"),
        bool_option(spec, "invert", false, origin, where));
  }
  if (type == "Digits") {
    return std::make_unique<DigitsPreTokenizer>(bool_option(spec, "individual_digits", false, origin, where));
  }
  if (type == "Punctuation") {
    const auto behavior = spec.find("behavior");
    const SplitBehavior split = behavior == spec.end() || behavior->is_null()
                                    ? SplitBehavior::isolated
                                    : split_behavior_from_json(&*behavior, origin, where + ".behavior");
    return std::make_unique<PunctuationPreTokenizer>(split);
  }
  if (type == "CharDelimiterSplit") {
    const std::string delimiter = character_option(spec, "delimiter", "", origin, where);
    if (delimiter.empty()) throw_bad_field(origin, where + ".delimiter", "a string of one character", nullptr);
    return std::make_unique<CharDelimiterPreTokenizer>(decode_utf8(delimiter, 0).code_point);
  }
  if (type == "Sequence") {
    const auto list = spec.find("pretokenizers");
    if (list == spec.end() || !list->is_array()) {
      throw_bad_field(origin, where + ".pretokenizers", "a list of pre-tokenizers",
                      list == spec.end() ? nullptr : &*list);
    }
    std::vector<std::unique_ptr<PreTokenizer>> pre_tokenizers;
    for (std::size_t i = 0; i < list->size(); ++i) {
      auto pre_tokenizer =
          pre_tokenizer_from_json((*list)[i], origin, where + ".pretokenizers[" + std::to_string(i) + "]");
      if (pre_tokenizer) pre_tokenizers.push_back(std::move(pre_tokenizer));
    }
    return std::make_unique<SequencePreTokenizer>(std::move(pre_tokenizers));
  }
  throw_unsupported_type(origin, where, "pre-tokenizer", type, kSupportedPreTokenizers);
}

}  // namespace headscan
