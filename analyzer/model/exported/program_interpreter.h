#pragma once
// An exported program's graph (models/NAME.json of a .pt2 archive, torch.export's serialized
// program) run node by node through LibTorch's dispatcher, for what NativeRT's public runner
// cannot do: it runs in inference mode, so no gradient reaches the head scales (--ablation), and
// it runs the program in the dtype and on the device it was exported for (--dtype, --device).
// Each node's operator is looked up by its name and overload and called boxed with its arguments
// matched to the operator's schema by name (defaults filled in), so any registered operator runs,
// headscan's own among them; the autograd of every call is LibTorch's (and headscan's Autograd
// kernels, capture.cpp), under the caller's grad mode. A value is released after its last use,
// as NativeRT does.
//
// Another dtype D (float32, bfloat16, float16) follows what a Hugging Face model loaded in D
// computes: the parameters and persistent buffers (the checkpoint's tensors) are cast to D; the
// non-persistent buffers and constants the module computed itself (RoPE's inv_freq) and the
// dtypes the program names (positions converted to float32, softmax in float32) stay as exported;
// and where an operator's floating inputs meet in the export's dtype and in D, those in the
// export's dtype are cast to D (the `.to(x.dtype)` a float32 export records as nothing). A float32
// export holds no other trace of those casts; TorchScript's --dtype, which casts the module and
// keeps the graph's dtypes, fails on such a mix instead. The program's dtype assertions
// (aten::_assert_tensor_metadata) check the export's dtypes, so they are skipped when casting.
// Another device: the weights move there, and every device the program names that is the
// export's is the run's.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

namespace headscan {

class ModelZip;

class ProgramInterpreter {
 public:
  // Reads program `name` ("model", "attention") of the archive, which check_pt2_archive has
  // checked, and its weights and constants, cast to `dtype` (nullopt: as exported) and placed on
  // `device`. Throws InputError naming the node for what it cannot run: a Python callable or
  // higher-order operator it does not know, an argument kind it does not read.
  ProgramInterpreter(const ModelZip& zip, const std::string& name, std::optional<at::ScalarType> dtype,
                     const c10::Device& device);
  ~ProgramInterpreter();
  ProgramInterpreter(const ProgramInterpreter&) = delete;
  ProgramInterpreter& operator=(const ProgramInterpreter&) = delete;

  // Runs the program on its user inputs, in order (input_ids [B, T], ...): its one output, or a
  // tuple of its outputs. Errors of an operator pass through as LibTorch raised them.
  c10::IValue run(const std::vector<at::Tensor>& inputs) const;

  struct Impl;  // the program's steps and weights (program_interpreter.cpp)

 private:
  std::unique_ptr<Impl> impl_;
};

// Why ProgramInterpreter cannot run program `name` of the archive (the InputError's message its
// constructor would throw), or empty when it can; reads the program's nodes, no weight.
std::string interpreter_limit(const ModelZip& zip, const std::string& name);

}  // namespace headscan
