#include "analyzer/model/model_layers.h"

#include <fmt/format.h>

#include "analyzer/errors.h"

namespace headscan {

bool is_layer_kind(const std::string& kind) {
  return kind == kAttentionLayer || kind == kLinearAttentionLayer || kind == kStateSpaceLayer ||
         kind == kConvolutionLayer || kind == kNoAttentionLayer;
}

int LayerNumbering::model_index(int map) const {
  if (attention_layers.empty()) return map;
  return map >= 0 && map < static_cast<int>(attention_layers.size()) ? attention_layers[static_cast<std::size_t>(map)]
                                                                      : map;
}

int LayerNumbering::map_of(int index) const {
  if (attention_layers.empty()) return index;
  for (std::size_t map = 0; map < attention_layers.size(); ++map) {
    if (attention_layers[map] == index) return static_cast<int>(map);
  }
  return -1;
}

void check_layer_numbering(const LayerNumbering& numbering, const std::string& origin) {
  std::vector<int> attention;
  for (std::size_t i = 0; i < numbering.layers.size(); ++i) {
    const ModelLayer& layer = numbering.layers[i];
    if (layer.index != static_cast<int>(i)) {
      throw InputError(fmt::format("{}: expected layer {} at position {} of \"layers\", found index {}; the layers "
                                   "must be listed in index order from 0; export the model again",
                                   origin, i, i, layer.index));
    }
    if (!is_layer_kind(layer.kind)) {
      throw InputError(fmt::format("{}: layer {} has kind \"{}\"; expected \"attention\", \"linear attention\", "
                                   "\"state space\", \"convolution\" or \"none\"; export the model again",
                                   origin, layer.index, layer.kind));
    }
    if (layer.kind == kAttentionLayer) attention.push_back(layer.index);
  }
  if (attention != numbering.attention_layers) {
    throw InputError(fmt::format("{}: the attention layers ({}) are not the layers of kind \"attention\" ({}); "
                                 "export the model again",
                                 origin, fmt::join(numbering.attention_layers, ", "), fmt::join(attention, ", ")));
  }
}

}  // namespace headscan
