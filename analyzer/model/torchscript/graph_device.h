#pragma once
// Moves the device constants of an inlined forward graph to the device the run uses. A traced
// graph records the device every tensor was created on (torch.arange(T, device=ids.device) becomes
// a constant "cpu") and keeps tensor constants where tracing found them; a scripted graph's
// torch.arange(T) names no device, which means the CPU. A model traced or scripted on the CPU and
// run on a GPU would mix devices without this. Internal to analyzer/model (LibTorch's IR).

#include <c10/core/Device.h>
#include <torch/csrc/jit/ir/ir.h>

namespace headscan {

struct DevicePlacement {
  int device_constants = 0;  // prim::Constant devices rewritten
  int tensor_constants = 0;  // tensor constants copied to the device
  int factory_devices = 0;   // factories (arange, zeros, full, ...) given the device where they named none
};

// Rewrites every CPU device constant to `device` and copies every CPU tensor constant with at
// least one dimension there (a 0-dim tensor is a scalar any device takes), and gives `device` to
// every factory operator that takes no tensor and names no device, in every block. Nothing changes
// when `device` is the CPU.
DevicePlacement place_graph_on_device(torch::jit::Graph& graph, const c10::Device& device);

}  // namespace headscan
