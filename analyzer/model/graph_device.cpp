#include "analyzer/model/graph_device.h"

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
  return placement;
}

}  // namespace headscan
