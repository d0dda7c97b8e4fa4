#include "analyzer/tokenizers/processors/post_processors.h"

#include <nlohmann/json.hpp>

#include "analyzer/errors.h"
#include "analyzer/tokenizers/tokenizer_json.h"

namespace headscan {
namespace {

constexpr const char* kSupportedPostProcessors =
    "TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence (of supported ones), null";

// {"SpecialToken": {"id": "<s>", …}} pieces before (prefix) and after (suffix) the one
// {"Sequence": {"id": "A", …}} of "single"; each names an entry of "special_tokens", whose
// "tokens" are what it adds.
SingleTemplate template_processing(const nlohmann::json& spec, const std::string& origin, const std::string& where) {
  const auto single = spec.find("single");
  if (single == spec.end() || !single->is_array()) {
    throw_bad_field(origin, where + ".single", "a list of template pieces", single == spec.end() ? nullptr : &*single);
  }
  const auto special_tokens = spec.find("special_tokens");
  SingleTemplate result;
  bool after_text = false;
  for (std::size_t i = 0; i < single->size(); ++i) {
    const nlohmann::json& piece = (*single)[i];
    const std::string piece_where = where + ".single[" + std::to_string(i) + "]";
    if (piece.is_object() && piece.contains("Sequence")) {
      if (after_text) throw_bad_field(origin, piece_where, "one {\"Sequence\": …} (the text) in a single template", &piece);
      after_text = true;
      continue;
    }
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
    std::vector<std::string>& side = after_text ? result.suffix : result.prefix;
    for (const nlohmann::json& token : (*entry)["tokens"]) {
      if (!token.is_string()) throw_bad_field(origin, entry_where + ".tokens", "a list of strings", &token);
      side.push_back(token.get<std::string>());
    }
  }
  return result;
}

// BertProcessing and RobertaProcessing: "cls": ["[CLS]", 101] before, "sep": ["[SEP]", 102] after.
std::string pair_token(const nlohmann::json& spec, const char* name, const std::string& origin,
                       const std::string& where) {
  const auto pair = spec.find(name);
  if (pair == spec.end() || !pair->is_array() || pair->size() != 2 || !(*pair)[0].is_string()) {
    throw_bad_field(origin, where + "." + name, "a [token, id] pair", pair == spec.end() ? nullptr : &*pair);
  }
  return (*pair)[0].get<std::string>();
}

}  // namespace

SingleTemplate single_template_from_json(const nlohmann::json* spec, const std::string& origin,
                                         const std::string& where) {
  if (spec == nullptr || spec->is_null()) return {};
  const std::string type = component_type(*spec, origin, where);
  if (type == "TemplateProcessing") return template_processing(*spec, origin, where);
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    return {{pair_token(*spec, "cls", origin, where)}, {pair_token(*spec, "sep", origin, where)}};
  }
  if (type == "ByteLevel") return {};
  if (type == "Sequence") {
    const auto list = spec->find("processors");
    if (list == spec->end() || !list->is_array()) {
      throw_bad_field(origin, where + ".processors", "a list of post-processors",
                      list == spec->end() ? nullptr : &*list);
    }
    SingleTemplate result;
    std::string template_where;  // the TemplateProcessing seen so far, if any
    for (std::size_t i = 0; i < list->size(); ++i) {
      const std::string inner_where = where + ".processors[" + std::to_string(i) + "]";
      SingleTemplate outer = single_template_from_json(&(*list)[i], origin, inner_where);
      const bool adds = !outer.prefix.empty() || !outer.suffix.empty();
      // TemplateProcessing leaves one encoding per piece, which the library merges only at the
      // end: a later processor that adds tokens panics (another template) or treats the pieces
      // as a pair of texts (BertProcessing), so no framing of one text can be read from it.
      if (adds && !template_where.empty()) {
        throw InputError(origin + ": " + inner_where + ": expected no post-processor that adds tokens after the " +
                         "TemplateProcessing at " + template_where +
                         ", found one; the tokenizers library does not frame a single text this way either. "
                         "Keep one TemplateProcessing, last among those that add tokens");
      }
      if (component_type((*list)[i], origin, inner_where) == "TemplateProcessing") template_where = inner_where;
      outer.prefix.insert(outer.prefix.end(), result.prefix.begin(), result.prefix.end());
      result.prefix = std::move(outer.prefix);
      result.suffix.insert(result.suffix.end(), outer.suffix.begin(), outer.suffix.end());
    }
    return result;
  }
  throw_unsupported_type(origin, where, "post-processor", type, kSupportedPostProcessors);
}

}  // namespace headscan
