#include "analyzer/model/torchscript/graph_device.h"

#include <vector>

#include <torch/csrc/jit/ir/constants.h>

namespace headscan {
namespace {

void collect_constants(torch::jit::Block* block, std::vector<torch::jit::Node*>& constants) {
  for (torch::jit::Node* node : block->nodes()) {
    if (node->kind() == c10::prim::Constant && node->outputs().size() == 1) constants.push_back(node);
    for (torch::jit::Block* inner : node->blocks()) collect_constants(inner, constants);
  }
}

void collect_nodes(torch::jit::Block* block, std::vector<torch::jit::Node*>& nodes) {
  for (torch::jit::Node* node : block->nodes()) {
    nodes.push_back(node);
    for (torch::jit::Block* inner : node->blocks()) collect_nodes(inner, nodes);
  }
}

// The index of a factory's `device` argument: an operator that takes a device and no tensor
// (arange, zeros, full, tensor, ...), where no device means the CPU. An operator that takes a
// tensor (to, zeros_like, new_zeros) reads no device as that tensor's: left alone.
std::optional<std::size_t> factory_device_argument(const torch::jit::Node& node) {
  const c10::FunctionSchema* schema = node.maybeSchema();
  if (schema == nullptr) return std::nullopt;
  std::optional<std::size_t> device;
  const auto& arguments = schema->arguments();
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const c10::TypePtr& type = arguments[i].type();
    if (type->isSubtypeOf(*c10::TensorType::get()) ||
        type->isSubtypeOf(*c10::OptionalType::create(c10::TensorType::get())) ||
        type->isSubtypeOf(*c10::ListType::ofTensors())) {
      return std::nullopt;
    }
    if (arguments[i].name() == "device") device = i;
  }
  return device;
}

}  // namespace

DevicePlacement place_graph_on_device(torch::jit::Graph& graph, const c10::Device& device) {
  DevicePlacement placement;
  if (device.is_cpu()) return placement;
  std::vector<torch::jit::Node*> constants;
  collect_constants(graph.block(), constants);
  for (torch::jit::Node* node : constants) {
    torch::jit::Value* output = node->output();
    const std::optional<c10::IValue> value = torch::jit::toIValue(output);
    if (!value) continue;
    std::optional<c10::IValue> moved;
    if (value->isDevice() && value->toDevice().is_cpu()) {
      moved = c10::IValue(device);
      ++placement.device_constants;
    } else if (value->isTensor() && value->toTensor().defined() && value->toTensor().device().is_cpu() &&
               value->toTensor().dim() > 0) {
      moved = c10::IValue(value->toTensor().to(device));
      ++placement.tensor_constants;
    }
    if (!moved) continue;
    torch::jit::WithInsertPoint point(node);
    torch::jit::Value* replacement = graph.insertConstant(*moved);
    output->replaceAllUsesWith(replacement);
    node->destroy();
  }
  // A scripted forward's torch.arange(T) names no device: LibTorch makes it on the CPU.
  std::vector<torch::jit::Node*> nodes;
  collect_nodes(graph.block(), nodes);
  for (torch::jit::Node* node : nodes) {
    const std::optional<std::size_t> argument = factory_device_argument(*node);
    if (!argument || *argument >= node->inputs().size()) continue;
    if (node->input(*argument)->type()->kind() != c10::TypeKind::NoneType) continue;
    torch::jit::WithInsertPoint point(node);
    node->replaceInput(*argument, graph.insertConstant(c10::IValue(device)));
    ++placement.factory_devices;
  }
  return placement;
}

}  // namespace headscan
