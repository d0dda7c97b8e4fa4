// A graph traced on the CPU names the CPU in its device constants; a run on a GPU rewrites them
// (analyzer/model/torchscript/graph_device.h). Rewriting the IR needs no GPU: only running it would.
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/torch.h>
// LibTorch's glog defines CHECK as an abort; the tests mean Catch's.
#undef CHECK
#include <catch2/catch.hpp>

#include "analyzer/model/torchscript/graph_device.h"

namespace {

// What a trace of `torch.arange(T, device=ids.device)` and a dtype cast records.
constexpr const char* kTracedGraph = R"IR(
graph(%ids : Tensor):
  %length : int = prim::Constant[value=5]()
  %long : int = prim::Constant[value=4]()
  %none : NoneType = prim::Constant()
  %cpu : Device = prim::Constant[value="cpu"]()
  %no : bool = prim::Constant[value=0]()
  %positions : Tensor = aten::arange(%length, %long, %none, %cpu, %no)
  %out : Tensor = aten::add(%ids, %positions, %length)
  return (%out)
)IR";

// What torch.jit.script makes of `torch.arange(T)` (no device: the CPU) and `torch.zeros_like(ids)`
// (no device: the device of ids).
constexpr const char* kScriptedGraph = R"IR(
graph(%ids : Tensor):
  %length : int = prim::Constant[value=5]()
  %long : int = prim::Constant[value=4]()
  %none : NoneType = prim::Constant()
  %no : bool = prim::Constant[value=0]()
  %positions : Tensor = aten::arange(%length, %long, %none, %none, %no)
  %zeros : Tensor = aten::zeros_like(%ids, %none, %none, %none, %no, %none)
  %one : int = prim::Constant[value=1]()
  %sum : Tensor = aten::add(%zeros, %positions, %one)
  return (%sum)
)IR";

std::vector<c10::Device> device_constants(torch::jit::Graph& graph) {
  std::vector<c10::Device> devices;
  for (torch::jit::Node* node : graph.nodes()) {
    if (node->kind() != c10::prim::Constant) continue;
    const auto value = torch::jit::toIValue(node->output());
    if (value && value->isDevice()) devices.push_back(value->toDevice());
  }
  return devices;
}

}  // namespace

TEST_CASE("graph device: CPU device constants move to the run's device", "[model][device]") {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(kTracedGraph, graph.get());
  SECTION("a GPU") {
    const headscan::DevicePlacement placement = headscan::place_graph_on_device(*graph, c10::Device(c10::kCUDA, 1));
    CHECK(placement.device_constants == 1);
    CHECK(placement.tensor_constants == 0);
    CHECK((device_constants(*graph) == std::vector<c10::Device>{c10::Device(c10::kCUDA, 1)}));
    graph->lint();  // the arange still takes a device, now cuda:1
  }
  SECTION("the CPU: nothing changes") {
    const headscan::DevicePlacement placement = headscan::place_graph_on_device(*graph, c10::Device(c10::kCPU));
    CHECK(placement.device_constants == 0);
    CHECK((device_constants(*graph) == std::vector<c10::Device>{c10::Device(c10::kCPU)}));
  }
}

TEST_CASE("graph device: factories that name no device get the run's; tensor-based ones keep theirs", "[model][device]") {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(kScriptedGraph, graph.get());
  const headscan::DevicePlacement placement = headscan::place_graph_on_device(*graph, c10::Device(c10::kCUDA, 1));
  CHECK(placement.factory_devices == 1);
  for (torch::jit::Node* node : graph->nodes()) {
    if (node->kind() == c10::aten::arange) {
      const auto device = torch::jit::toIValue(node->input(3));
      REQUIRE(device.has_value());
      REQUIRE(device->isDevice());
      CHECK(device->toDevice() == c10::Device(c10::kCUDA, 1));
    }
    if (node->kind() == c10::aten::zeros_like) CHECK(node->input(3)->type()->kind() == c10::TypeKind::NoneType);
  }
  graph->lint();
  CHECK(headscan::place_graph_on_device(*graph, c10::Device(c10::kCPU)).factory_devices == 0);
}
