#pragma once
// The TorchScript loader (README, "Model contract"): a torch.jit.save archive, checked
// (torchscript_archive.h), loaded by LibTorch, its forward graph inlined, placed on the device
// (graph_device.h) and instrumented (graph_capture.h).

#include <memory>
#include <string>

#include "analyzer/model/model.h"

namespace headscan {

// InstrumentedModel::load for a TorchScript archive; the same contract.
std::unique_ptr<InstrumentedModel> load_torchscript_model(const std::string& path, const std::string& dtype,
                                                          const c10::Device& device);

}  // namespace headscan
