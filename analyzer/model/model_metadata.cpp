#include "analyzer/model/model_metadata.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/errors.h"
#include "analyzer/json_limits.h"

namespace headscan {
namespace {

constexpr const char* kExpected =
    "{\"name\": string, \"bos_token\": string, \"max_length\": integer, \"causal\": bool, \"n_kv_heads\": integer, \"step\": integer, \"min_length\": integer, "
    "\"checked_length\": integer, \"logits\": bool, "
    "\"layers\": [{\"index\": integer, \"path\": string, \"kind\": string}]}";
constexpr const char* kWhatToDo = "fix headscan.json inside the archive (torch.jit.save's _extra_files, or extra/ of a .pt2)";

[[noreturn]] void throw_bad_field(const std::string& origin, const char* name, const std::string& expected,
                                  const nlohmann::json& found) {
  throw InputError(fmt::format("{}: expected {} to be {}, found {} {}; {}", origin, name, expected, found.type_name(),
                               quote_json(found), kWhatToDo));
}

const nlohmann::json* field(const nlohmann::json& doc, const char* name) {
  const auto found = doc.find(name);
  return found == doc.end() || found->is_null() ? nullptr : &*found;
}

std::string string_field(const nlohmann::json& doc, const char* name, const std::string& origin) {
  const nlohmann::json* value = field(doc, name);
  if (value == nullptr) return {};
  if (!value->is_string()) throw_bad_field(origin, name, "a string", *value);
  return value->get<std::string>();
}

// An integer in [minimum, maximum]. A JSON number with a fraction or an exponent, or one beyond
// 64 bits (which nlohmann reads as a double), is reported as written, never converted.
std::optional<std::int64_t> integer_field(const nlohmann::json& doc, const char* name, std::int64_t minimum,
                                          std::int64_t maximum, const std::string& origin) {
  const nlohmann::json* value = field(doc, name);
  if (value == nullptr) return std::nullopt;
  const std::string expected = fmt::format("an integer from {} to {}", minimum, maximum);
  if (!value->is_number_integer()) throw_bad_field(origin, name, expected, *value);
  const bool in_range = value->is_number_unsigned()
                            ? value->get<std::uint64_t>() <= static_cast<std::uint64_t>(maximum) &&
                                  value->get<std::int64_t>() >= minimum
                            : value->get<std::int64_t>() >= minimum && value->get<std::int64_t>() <= maximum;
  if (!in_range) throw_bad_field(origin, name, expected, *value);
  return value->get<std::int64_t>();
}

LayerNumbering layers_field(const nlohmann::json& value, const std::string& origin) {
  const std::string expected = fmt::format("a list of at most {} objects {{\"index\": integer, \"path\": string, "
                                           "\"kind\": string}}", kMaxMetadataLayers);
  if (!value.is_array() || value.size() > static_cast<std::size_t>(kMaxMetadataLayers)) {
    throw_bad_field(origin, "layers", expected, value);
  }
  LayerNumbering numbering;
  for (const nlohmann::json& entry : value) {
    if (!entry.is_object()) throw_bad_field(origin, "layers", expected, value);
    const auto index = integer_field(entry, "index", 0, kMaxMetadataLayers - 1, origin);
    if (!index) throw_bad_field(origin, "layers", expected, entry);
    ModelLayer layer;
    layer.index = static_cast<int>(*index);
    layer.path = string_field(entry, "path", origin);
    layer.kind = string_field(entry, "kind", origin);
    if (layer.kind == kAttentionLayer) numbering.attention_layers.push_back(layer.index);
    numbering.layers.push_back(std::move(layer));
  }
  check_layer_numbering(numbering, origin);
  if (numbering.attention_layers.empty() && !numbering.layers.empty()) {
    throw InputError(fmt::format("{}: \"layers\" lists no layer of kind \"attention\": the model has no attention "
                                 "map to analyse; {}", origin, kWhatToDo));
  }
  return numbering;
}

}  // namespace

ModelMetadata parse_model_metadata(const std::string& text, const std::string& origin) {
  ModelMetadata metadata;
  if (text.empty()) return metadata;
  if (text.size() > kMaxMetadataBytes) {
    throw InputError(fmt::format("{}: expected a small JSON object {}, found {} bytes (the limit is {}); {}", origin,
                                 kExpected, text.size(), kMaxMetadataBytes, kWhatToDo));
  }
  check_json_depth(text, origin);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: expected {}, found invalid JSON ({}); {}", origin, kExpected, e.what(),
                                 kWhatToDo));
  }
  if (!doc.is_object()) {
    throw InputError(fmt::format("{}: expected {}, found {} {}; {}", origin, kExpected, doc.type_name(),
                                 quote_json(doc), kWhatToDo));
  }
  metadata.name = string_field(doc, "name", origin);
  metadata.bos_token = string_field(doc, "bos_token", origin);
  metadata.max_length = integer_field(doc, "max_length", 2, kMaxMetadataLength, origin);
  metadata.min_length = integer_field(doc, "min_length", 2, kMaxMetadataLength, origin);
  metadata.checked_length = integer_field(doc, "checked_length", 2, kMaxMetadataLength, origin);
  if (metadata.min_length && metadata.max_length && *metadata.min_length > *metadata.max_length) {
    throw InputError(fmt::format("{}: min_length {} is above max_length {}; {}", origin, *metadata.min_length,
                                 *metadata.max_length, kWhatToDo));
  }
  if (const nlohmann::json* causal = field(doc, "causal")) {
    if (!causal->is_boolean()) throw_bad_field(origin, "causal", "true or false", *causal);
    metadata.causal = causal->get<bool>();
  }
  if (const nlohmann::json* logits = field(doc, "logits")) {
    if (!logits->is_boolean()) throw_bad_field(origin, "logits", "true or false", *logits);
    metadata.logits = logits->get<bool>();
  }
  if (auto kv_heads = integer_field(doc, "n_kv_heads", 1, kMaxMetadataKvHeads, origin)) {
    metadata.n_kv_heads = static_cast<int>(*kv_heads);
  }
  metadata.step = integer_field(doc, "step", 0, kMaxMetadataStep, origin);
  if (const nlohmann::json* layers = field(doc, "layers")) metadata.layers = layers_field(*layers, origin);
  return metadata;
}

}  // namespace headscan
