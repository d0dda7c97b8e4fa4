#include "analyzer/pre_tokenizers.h"

#include <nlohmann/json.hpp>

#include "analyzer/tokenizer_json.h"

namespace headscan {

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

// The pattern of Hugging Face's Whitespace pre-tokenizer (pre_tokenizers/whitespace.rs).
WhitespacePreTokenizer::WhitespacePreTokenizer() : word_or_punctuation_(R"(\w+|[^\w\s]+)") {}

void WhitespacePreTokenizer::split(const NormalizedString& text, std::vector<NormalizedString>& words) const {
  for (const ByteSpan& match : word_or_punctuation_.find_all(text.text())) {
    if (match.end > match.begin) words.push_back(text.slice(match.begin, match.end));
  }
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
  if (type == "WhitespaceSplit") return std::make_unique<WhitespaceSplitPreTokenizer>();
  if (type == "Whitespace") return std::make_unique<WhitespacePreTokenizer>();
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
  throw_unsupported_type(origin, where, "pre-tokenizer", type,
                         "Whitespace, WhitespaceSplit, Sequence (of supported ones), null");
}

}  // namespace headscan
