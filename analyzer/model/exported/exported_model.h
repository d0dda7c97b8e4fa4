#pragma once
// The exported-program loader: a .pt2 archive (torch.export's package, as `headscan export` writes
// it), checked (pt2_archive.h) and run op by op by NativeRT, PyTorch's C++ runtime for exported
// programs (torch/nativert/ModelRunnerHandle.h), or by headscan's interpreter of the program where
// NativeRT cannot (program_interpreter.h). The program carries headscan's observers itself:
// headscan::observe after each attention softmax and headscan::attention for each
// scaled_dot_product_attention (capture.cpp registers both), which hand the probabilities to the
// same CaptureScope as a TorchScript graph's.

#include <memory>
#include <string>

#include "analyzer/model/model.h"

namespace headscan {

// InstrumentedModel::load for an exported program; the same contract. NativeRT runs the program
// in inference mode, in the dtype and on the device it was exported for; headscan's interpreter
// of the program (program_interpreter.h) runs it in another `dtype`, or on another `device` when
// `exact_device` (without it, --device auto, the program runs where it was exported), and every
// call from the first that needs a gradient in the head scales (the importance pass) on.
std::unique_ptr<InstrumentedModel> load_exported_program(const std::string& path, const std::string& dtype,
                                                         const c10::Device& device, bool exact_device);

}  // namespace headscan
