#pragma once
// The exported-program loader: a .pt2 archive (torch.export's package, as `headscan export` writes
// it), checked (pt2_archive.h) and run op by op by NativeRT, PyTorch's C++ runtime for exported
// programs (torch/nativert/ModelRunnerHandle.h). The program carries headscan's observers itself:
// headscan::observe after each attention softmax and headscan::attention for each
// scaled_dot_product_attention (capture.cpp registers both), which hand the probabilities to the
// same CaptureScope as a TorchScript graph's.

#include <memory>
#include <string>

#include "analyzer/model/model.h"

namespace headscan {

// InstrumentedModel::load for an exported program; the same contract, except that the program
// runs in the dtype and on the device it was exported for (another --dtype, or another --device
// when `exact_device`, is InputError saying how to export for it; without `exact_device` it runs
// where it is) and that no gradient flows through it (NativeRT runs in inference mode:
// gradient_limit() says so).
std::unique_ptr<InstrumentedModel> load_exported_program(const std::string& path, const std::string& dtype,
                                                         const c10::Device& device, bool exact_device);

}  // namespace headscan
