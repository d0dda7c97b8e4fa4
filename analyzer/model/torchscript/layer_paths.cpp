#include "analyzer/model/torchscript/layer_paths.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/scope.h>

namespace headscan {
namespace {

struct Site {
  std::string path;   // module path of the module the site ran in: "model.layers.3.self_attn"
  std::string stack;  // the module list holding the layers: "model.layers"
  int layer = -1;     // the integer segment after it
};

// Whether an observed softmax can be attention as far as the graph's types tell: a traced graph
// records the shapes of its example, and a softmax over something other than [.., T, T] (a router's
// [B, T, experts]) never gives an attention map. A graph without shapes (scripted) tells nothing.
bool may_be_attention(const torch::jit::Node* observer) {
  const auto type = observer->input(0)->type()->cast<c10::TensorType>();
  if (!type) return true;
  const auto sizes = type->sizes().concrete_sizes();
  if (!sizes) return true;
  return sizes->size() >= 3 && (*sizes)[sizes->size() - 1] == (*sizes)[sizes->size() - 2];
}

// The attention sites of `block` and of the blocks nested in it, in graph order; `nested` is set
// when one is inside a loop or a branch.
void collect_sites(const torch::jit::Block* block, bool inside, std::vector<const torch::jit::Node*>& sites,
                   bool& nested) {
  static const auto observe = c10::Symbol::fromQualString("headscan::observe_softmax");
  static const auto eager = c10::Symbol::fromQualString("headscan::eager_attention");
  for (const torch::jit::Node* node : block->nodes()) {
    if (node->kind() == eager || (node->kind() == observe && may_be_attention(node))) {
      sites.push_back(node);
      nested = nested || inside;
    }
    for (const torch::jit::Block* sub : node->blocks()) collect_sites(sub, true, sites, nested);
  }
}

// The call stack of a site: the node's own, else that of the node producing its first input (the
// observer follows the softmax it observes; the eager attention replaces the scaled dot product).
std::optional<torch::jit::InlinedCallStackPtr> site_call_stack(const torch::jit::Node* node) {
  if (node->callstack()) return node->callstack();
  if (!node->inputs().empty() && node->input(0)->node()->callstack()) return node->input(0)->node()->callstack();
  return std::nullopt;
}

std::string last_segment(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

// The module path, from `root`, of the module a call stack ends in. Each entry names the instance
// it called (the attribute's name, "3") and its class; the modules in between that were not called
// (a ModuleList) are found by searching the descendants for the shallowest one of that name and
// class. Empty when an entry's module is unnamed or ambiguous.
std::optional<std::string> module_path(const torch::jit::Module& root, const torch::jit::InlinedCallStackPtr& stack) {
  torch::jit::Module current = root;
  std::string path;
  for (const auto& entry : stack->vec()) {
    const std::optional<torch::jit::ModuleInstanceInfo>& info = std::get<torch::jit::kModuleInstanceInfo>(entry);
    if (!info) return std::nullopt;
    const std::string name = info->instance_name();
    if (name == "SELF" && info->class_type() == current.type()) continue;  // a method of the same module
    std::optional<torch::jit::NameModule> found;
    std::size_t found_depth = 0;
    bool ambiguous = false;
    for (const torch::jit::NameModule& named : current.named_modules()) {
      if (named.name.empty() || last_segment(named.name) != name || named.value.type() != info->class_type()) continue;
      const auto depth = static_cast<std::size_t>(std::count(named.name.begin(), named.name.end(), '.'));
      if (!found || depth < found_depth) {
        found = named;
        found_depth = depth;
        ambiguous = false;
      } else if (depth == found_depth) {
        ambiguous = true;
      }
    }
    if (!found || ambiguous) return std::nullopt;
    path = path.empty() ? found->name : path + "." + found->name;
    current = found->value;
  }
  if (path.empty()) return std::nullopt;
  return path;
}

// Whether a module path has a segment naming attention ("self_attn", "attention").
bool in_attention_module(const std::string& path) {
  std::string lower = path;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("attn") != std::string::npos || lower.find("attention") != std::string::npos;
}

bool is_index(const std::string& segment) {
  return !segment.empty() && segment.size() <= 6 &&
         std::all_of(segment.begin(), segment.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

// The site's layer: the first integer segment of its path, and the module list before it.
std::optional<Site> site_of(const std::string& path) {
  std::string prefix;
  std::size_t start = 0;
  while (start <= path.size()) {
    const auto dot = path.find('.', start);
    const std::string segment = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (is_index(segment) && !prefix.empty()) return Site{path, prefix, std::stoi(segment)};
    prefix = prefix.empty() ? segment : prefix + "." + segment;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return std::nullopt;
}

// Whether the class name `name` (lower case) contains one of `parts`.
bool names_any(const std::string& name, std::initializer_list<const char*> parts) {
  return std::any_of(parts.begin(), parts.end(), [&name](const char* part) { return name.find(part) != std::string::npos; });
}

// A layer without attention map: its kind from the class names of its modules (itself included),
// by the same names as `headscan export` (headscan/_export/layers.py).
std::string layer_kind(const torch::jit::Module& layer) {
  bool linear = false;
  bool state_space = false;
  bool convolution = false;
  for (const torch::jit::NameModule& named : layer.named_modules()) {
    const auto& type_name = named.value.type()->name();
    if (!type_name) continue;
    std::string name = type_name->name();  // the class's own name, without its module
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    linear = linear || names_any(name, {"deltanet", "linearattention", "linearattn", "lightning", "retention", "rwkv",
                                        "gatedlinear"});
    state_space = state_space || names_any(name, {"mamba", "ssm", "statespace"});
    convolution = convolution || names_any(name, {"conv", "hyena"});
  }
  if (linear) return kLinearAttentionLayer;
  if (state_space) return kStateSpaceLayer;
  if (convolution) return kConvolutionLayer;
  return kNoAttentionLayer;
}

// The attribute path of the model inside wrappers: a root module whose only content is one
// module (as export_hf.py's wrapper, whose "model" is the model) adds nothing to the paths, which
// are then the model's own ("model.layers.3", as `headscan export` writes them).
std::string wrapper_prefix(const torch::jit::Module& module) {
  std::string prefix;
  torch::jit::Module root = module;
  for (;;) {
    const auto children = root.named_children();
    if (children.size() != 1 || root.named_parameters(false).size() != 0 || root.named_buffers(false).size() != 0) {
      return prefix;
    }
    const torch::jit::NameModule child = *children.begin();
    prefix += child.name + ".";
    root = child.value;
  }
}

LayerNumbering unknown(std::string note) {
  LayerNumbering numbering;
  numbering.note = std::move(note);
  return numbering;
}

}  // namespace

LayerNumbering torchscript_layer_numbering(const torch::jit::Module& module, const torch::jit::Graph& inlined_graph) {
  std::vector<const torch::jit::Node*> nodes;
  bool nested = false;
  collect_sites(inlined_graph.block(), false, nodes, nested);
  if (nodes.empty()) return unknown("the model's graph has no attention softmax (its attention is read from its outputs)");
  if (nested) {
    return unknown("an attention softmax of the graph is inside a loop or a branch (scripted control flow), so which "
                   "layer each attention map belongs to cannot be read off the graph");
  }
  std::vector<std::optional<std::string>> found;
  for (const torch::jit::Node* node : nodes) {
    const auto stack = site_call_stack(node);
    found.push_back(stack ? module_path(module, *stack) : std::nullopt);
  }
  // Softmaxes that are not attention (a mixture of experts' router) are observed too, and only
  // the run tells them apart by shape. When the model names its attention modules so ("attn",
  // "attention"), the softmaxes elsewhere are taken for what they are.
  const auto named_attention = [](const std::optional<std::string>& path) { return path && in_attention_module(*path); };
  const bool by_name = std::any_of(found.begin(), found.end(), named_attention);
  std::vector<std::string> paths;
  for (const std::optional<std::string>& path : found) {
    if (by_name && !named_attention(path)) continue;
    if (!path) {
      return unknown("an attention softmax of the graph has no module path (the archive's graph does not keep the "
                     "names of the modules it ran in)");
    }
    paths.push_back(*path);
  }
  std::vector<Site> sites;
  for (const std::string& path : paths) {
    const std::optional<Site> site = site_of(path);
    if (!site) {
      return unknown(fmt::format("the attention softmax of module {} is in no numbered layer (no integer segment in "
                                 "its module path)", path));
    }
    if (!sites.empty() && site->stack != sites.front().stack) {
      return unknown(fmt::format("the attention softmaxes are in layers of two module lists ({} and {})",
                                 sites.front().stack, site->stack));
    }
    if (!sites.empty() && site->layer <= sites.back().layer) {
      return unknown(fmt::format(site->layer == sites.back().layer
                                     ? "layer {}.{} has more than one attention softmax ({} and {})"
                                     : "the attention softmaxes of {}.{} do not follow the order of the layers ({} "
                                       "runs after {})",
                                 site->stack, site->layer, site->path, sites.back().path));
    }
    sites.push_back(*site);
  }

  torch::jit::Module stack = module;
  for (std::size_t start = 0;;) {
    const auto dot = sites.front().stack.find('.', start);
    const std::string segment = sites.front().stack.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!stack.hasattr(segment) || !stack.attr(segment).isModule()) {
      return unknown(fmt::format("the module list {} holding the attention layers is not a module of the model",
                                 sites.front().stack));
    }
    stack = stack.attr(segment).toModule();
    if (dot == std::string::npos) break;
    start = dot + 1;
  }

  const std::string layer_path = sites.front().stack + ".";
  std::string prefix = wrapper_prefix(module);
  if (prefix.size() >= layer_path.size() || layer_path.compare(0, prefix.size(), prefix) != 0) prefix.clear();
  LayerNumbering numbering;
  std::size_t next_site = 0;
  for (const torch::jit::NameModule& child : stack.named_children()) {
    const int index = static_cast<int>(numbering.layers.size());
    if (child.name != std::to_string(index)) {
      return unknown(fmt::format("the module list {} holding the attention layers has a child named {} where layer "
                                 "{} was expected", sites.front().stack, child.name, index));
    }
    ModelLayer layer{index, layer_path.substr(prefix.size()) + child.name, kNoAttentionLayer};
    if (next_site < sites.size() && sites[next_site].layer == index) {
      layer.kind = kAttentionLayer;
      numbering.attention_layers.push_back(index);
      ++next_site;
    } else {
      layer.kind = layer_kind(child.value);
    }
    numbering.layers.push_back(std::move(layer));
  }
  if (next_site != sites.size()) {
    return unknown(fmt::format("the attention softmax of {} is in no layer of the module list {}",
                               sites[next_site].path, sites.front().stack));
  }
  return numbering;
}

}  // namespace headscan
