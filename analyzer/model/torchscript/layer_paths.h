#pragma once
// The model's own layer numbering of a TorchScript module (model_layers.h), read off the module
// paths of the instrumented graph's attention sites: a traced or scripted module keeps, in each
// inlined node's call stack, the instance names of the modules it ran in ("model", "3",
// "self_attn"), from which the path "model.layers.3.self_attn" and the layer, the integer segment
// after the module list holding the layers, follow.

#include "analyzer/model/model_layers.h"

namespace torch::jit {
struct Graph;
struct Module;
}  // namespace torch::jit

namespace headscan {

// For every attention site of `inlined_graph` (headscan::observe_softmax and
// headscan::eager_attention nodes, in graph order: instrument_graph() must have run), the layer of
// `module` it belongs to; every child of the module list holding those layers, with its kind
// ("attention" when it has a site, else from the class names of its submodules). When a site has
// no module path, or the sites are not one per layer of a single module list, the numbering is
// empty and its note says why.
LayerNumbering torchscript_layer_numbering(const torch::jit::Module& module, const torch::jit::Graph& inlined_graph);

}  // namespace headscan
