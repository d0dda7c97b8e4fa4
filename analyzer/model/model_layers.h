#pragma once
// The model's layers as the model numbers them (README, "Layers as the model numbers them"): every
// layer of its stack with its index, module path and kind, and which layer each captured attention
// map belongs to. A hybrid model (linear-attention or state-space layers between softmax-attention
// layers) has layers without an attention map; heads.json and the reports name heads by the
// model's index, not by the order of the maps. No LibTorch.

#include <string>
#include <vector>

namespace headscan {

// The kinds a layer can have; only "attention" layers have attention maps to analyse.
inline constexpr const char* kAttentionLayer = "attention";
inline constexpr const char* kLinearAttentionLayer = "linear attention";
inline constexpr const char* kStateSpaceLayer = "state space";
inline constexpr const char* kConvolutionLayer = "convolution";
inline constexpr const char* kNoAttentionLayer = "none";

// True for the five kinds above.
bool is_layer_kind(const std::string& kind);

struct ModelLayer {
  int index = 0;     // the model's own index (model.layers.3 → 3)
  std::string path;  // module path, "model.layers.3"
  std::string kind;  // one of the kinds above
};

struct LayerNumbering {
  // Every layer of the model's stack, in index order; empty when not known.
  std::vector<ModelLayer> layers;
  // The model's index of each captured attention map, in capture order (map m is layer
  // attention_layers[m]); empty when not known, and then map m is called layer m.
  std::vector<int> attention_layers;
  // Why the numbering is not known (empty when it is), for heads.json's notes.
  std::string note;

  bool known() const { return !attention_layers.empty(); }
  // The model's index of map `map`: attention_layers[map], or `map` itself when not known.
  int model_index(int map) const;
  // The map of the model's layer `index`, or -1 when that layer has no attention map.
  int map_of(int index) const;
};

// Checks a numbering read from a file: indexes ascending from 0 without gaps, known kinds, each
// attention layer once in attention_layers (in index order), the others never. Throws InputError
// naming `origin` and what is wrong.
void check_layer_numbering(const LayerNumbering& numbering, const std::string& origin);

}  // namespace headscan
