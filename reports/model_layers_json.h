#pragma once
// heads.json's layer numbering (README, "heads.json"): "model.layers" lists every layer of the
// model as it numbers them ({"index", "path", "kind"}) when the numbering is known, and every
// head's "layer" is the model's index; when it is not known, "model.layers" is the number of
// attention maps, heads are numbered by the order of the maps, and "model.layers_note" says why.
// Inside a run the statistics are indexed by attention map (capture order); these functions turn
// a document from one numbering into the other and read it back. No LibTorch.

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "analyzer/model/model_layers.h"

namespace headscan {

// Writes `numbering` into a document whose heads are numbered by attention map (`maps` of them):
// model.layers and model.layers_note, every head's "layer" and every circuit link's "layer" become
// the model's index. A numbering whose attention layers are not `maps` many is not used: the note
// says so.
void number_layers(nlohmann::ordered_json& document, const LayerNumbering& numbering, int maps);

// The heads of a "heads" array numbered by attention map, and their circuits' links, renumbered by
// the model's index (number_layers() without the "model" part).
void number_heads(nlohmann::ordered_json& heads, const LayerNumbering& numbering);

// The attention maps and numbering of heads.json's "model": "layers" a whole number (the maps;
// numbering unknown, its note from "layers_note") or the list number_layers() writes. Throws
// InputError naming `origin` when it is neither, or the list is not every layer in index order
// with known kinds and at least one attention layer.
struct DocumentLayers {
  int maps = 0;
  LayerNumbering numbering;
};
DocumentLayers document_layers(const nlohmann::ordered_json& model, const std::string& origin);

// How the reports name a layer: "3" for an attention layer, "3 linear attention" for layer 3 of
// kind "linear attention".
std::string layer_label(const ModelLayer& layer);

}  // namespace headscan
