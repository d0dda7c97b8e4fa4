#include "analyzer/tokenizers/processors/post_processors.h"

#include <nlohmann/json.hpp>

#include "analyzer/tokenizers/tokenizer_json.h"

namespace headscan {
namespace {

constexpr const char* kSupportedPostProcessors =
    "TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence (of supported ones), null";

// {"SpecialToken": {"id": "<s>", …}} pieces before the first {"Sequence": …} of "single"; each
// names an entry of "special_tokens", whose "tokens" are what it adds.
std::vector<std::string> template_processing_prefix(const nlohmann::json& spec, const std::string& origin,
                                                    const std::string& where) {
  const auto single = spec.find("single");
  if (single == spec.end() || !single->is_array()) {
    throw_bad_field(origin, where + ".single", "a list of template pieces", single == spec.end() ? nullptr : &*single);
  }
  const auto special_tokens = spec.find("special_tokens");
  std::vector<std::string> prefix;
  for (std::size_t i = 0; i < single->size(); ++i) {
    const nlohmann::json& piece = (*single)[i];
    const std::string piece_where = where + ".single[" + std::to_string(i) + "]";
    if (piece.is_object() && piece.contains("Sequence")) break;
    const auto special = piece.is_object() ? piece.find("SpecialToken") : piece.end();
    if (!piece.is_object() || special == piece.end() || !special->is_object() || !special->contains("id") ||
        !(*special)["id"].is_string()) {
      throw_bad_field(origin, piece_where, "{\"SpecialToken\": {\"id\": …}} or {\"Sequence\": …}", &piece);
    }
    const std::string name = (*special)["id"].get<std::string>();
    const nlohmann::json* entry = nullptr;
    if (special_tokens != spec.end() && special_tokens->is_object() && special_tokens->contains(name)) {
      entry = &(*special_tokens)[name];
    }
    const std::string entry_where = where + ".special_tokens[\"" + name + "\"]";
    if (entry == nullptr || !entry->is_object() || !entry->contains("tokens") || !(*entry)["tokens"].is_array()) {
      throw_bad_field(origin, entry_where, "an object with the \"tokens\" the template adds", entry);
    }
    for (const nlohmann::json& token : (*entry)["tokens"]) {
      if (!token.is_string()) throw_bad_field(origin, entry_where + ".tokens", "a list of strings", &token);
      prefix.push_back(token.get<std::string>());
    }
  }
  return prefix;
}

// BertProcessing and RobertaProcessing: "cls": ["[CLS]", 101].
std::vector<std::string> cls_prefix(const nlohmann::json& spec, const std::string& origin, const std::string& where) {
  const auto cls = spec.find("cls");
  if (cls == spec.end() || !cls->is_array() || cls->size() != 2 || !(*cls)[0].is_string()) {
    throw_bad_field(origin, where + ".cls", "a [token, id] pair", cls == spec.end() ? nullptr : &*cls);
  }
  return {(*cls)[0].get<std::string>()};
}

}  // namespace

std::vector<std::string> template_prefix_from_json(const nlohmann::json* spec, const std::string& origin,
                                                   const std::string& where) {
  if (spec == nullptr || spec->is_null()) return {};
  const std::string type = component_type(*spec, origin, where);
  if (type == "TemplateProcessing") return template_processing_prefix(*spec, origin, where);
  if (type == "BertProcessing" || type == "RobertaProcessing") return cls_prefix(*spec, origin, where);
  if (type == "ByteLevel") return {};
  if (type == "Sequence") {
    const auto list = spec->find("processors");
    if (list == spec->end() || !list->is_array()) {
      throw_bad_field(origin, where + ".processors", "a list of post-processors",
                      list == spec->end() ? nullptr : &*list);
    }
    std::vector<std::string> prefix;
    for (std::size_t i = 0; i < list->size(); ++i) {
      std::vector<std::string> inner =
          template_prefix_from_json(&(*list)[i], origin, where + ".processors[" + std::to_string(i) + "]");
      inner.insert(inner.end(), prefix.begin(), prefix.end());
      prefix = std::move(inner);
    }
    return prefix;
  }
  throw_unsupported_type(origin, where, "post-processor", type, kSupportedPostProcessors);
}

}  // namespace headscan
