#include "reports/model_layers_json.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/errors.h"
#include "analyzer/json_limits.h"
#include "analyzer/model/model_metadata.h"

namespace headscan {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::int64_t kMaxDocumentMaps = std::int64_t{1} << 20;

void renumber(Json& entry, const LayerNumbering& numbering) {
  if (entry.is_object() && entry.contains("layer") && entry["layer"].is_number_integer()) {
    entry["layer"] = numbering.model_index(entry["layer"].get<int>());
  }
}

[[noreturn]] void throw_bad_layers(const std::string& origin, const std::string& what, const Json& found) {
  throw InputError(fmt::format("{}: model.layers {}, found {}; give heads.json as headscan wrote it", origin, what,
                               quote_json(nlohmann::json(found))));
}

}  // namespace

void number_layers(Json& document, const LayerNumbering& numbering, int maps) {
  Json& model = document["model"];
  if (!numbering.known() || static_cast<int>(numbering.attention_layers.size()) != maps) {
    const std::string why =
        numbering.known()
            ? fmt::format("the model's layers list {} attention layers, but a forward call gives {} attention maps",
                          numbering.attention_layers.size(), maps)
            : numbering.note;
    model["layers_note"] = "layers are numbered by the order of the attention maps, because the model's own "
                           "numbering is unknown" + (why.empty() ? std::string() : ": " + why);
    return;
  }
  Json layers = Json::array();
  for (const ModelLayer& layer : numbering.layers) {
    layers.push_back({{"index", layer.index}, {"path", layer.path}, {"kind", layer.kind}});
  }
  model["layers"] = std::move(layers);
  number_heads(document["heads"], numbering);
}

void number_heads(Json& heads, const LayerNumbering& numbering) {
  for (Json& head : heads) {
    renumber(head, numbering);
    if (!head.contains("circuit") || !head["circuit"].is_object()) continue;
    Json& circuit = head["circuit"];
    if (!circuit.contains("depends_on") || !circuit["depends_on"].is_array()) continue;
    for (Json& link : circuit["depends_on"]) renumber(link, numbering);
  }
}

DocumentLayers document_layers(const Json& model, const std::string& origin) {
  DocumentLayers result;
  const auto found = model.find("layers");
  if (found == model.end()) throw InputError(fmt::format("{}: model has no \"layers\"; give heads.json as headscan wrote it", origin));
  const Json& layers = *found;
  if (layers.is_number_unsigned() || layers.is_number_integer()) {
    const std::int64_t maps = layers.get<std::int64_t>();
    if (maps < 0 || maps > kMaxDocumentMaps) {
      throw_bad_layers(origin, fmt::format("must be a whole number from 0 to {} or the list of the model's layers",
                                           kMaxDocumentMaps), layers);
    }
    result.maps = static_cast<int>(maps);
    const auto note = model.find("layers_note");
    if (note != model.end() && note->is_string()) result.numbering.note = note->get<std::string>();
    return result;
  }
  if (!layers.is_array() || layers.size() > static_cast<std::size_t>(kMaxMetadataLayers)) {
    throw_bad_layers(origin, fmt::format("must be the number of attention layers or the list of the model's layers "
                                         "(at most {})", kMaxMetadataLayers), layers);
  }
  for (const Json& entry : layers) {
    const int expected = static_cast<int>(result.numbering.layers.size());
    if (!entry.is_object() || !entry.contains("index") || !entry["index"].is_number_integer() ||
        entry["index"].get<std::int64_t>() != expected || !entry.contains("kind") || !entry["kind"].is_string() ||
        !is_layer_kind(entry["kind"].get<std::string>()) || !entry.contains("path") || !entry["path"].is_string()) {
      throw_bad_layers(origin, fmt::format("must list {{\"index\", \"path\", \"kind\"}} for every layer in index order "
                                           "from 0 (entry {} is not layer {} with a path and a known kind)",
                                           expected, expected), entry);
    }
    ModelLayer layer{expected, entry["path"].get<std::string>(), entry["kind"].get<std::string>()};
    if (layer.kind == kAttentionLayer) result.numbering.attention_layers.push_back(expected);
    result.numbering.layers.push_back(std::move(layer));
  }
  if (result.numbering.attention_layers.empty()) throw_bad_layers(origin, "lists no layer of kind \"attention\"", layers);
  result.maps = static_cast<int>(result.numbering.attention_layers.size());
  return result;
}

std::string layer_label(const ModelLayer& layer) {
  return layer.kind == kAttentionLayer ? std::to_string(layer.index) : fmt::format("{} {}", layer.index, layer.kind);
}

}  // namespace headscan
