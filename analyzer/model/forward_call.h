#pragma once
// What both loaders share about a forward call: the dtype names, how its failures read (model.h,
// InstrumentedModel::forward), and the logits of its output. Internal to analyzer/model.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>

namespace headscan {

class CaptureScope;

// How a model runs, for the messages of a failed forward call.
struct ForwardSetting {
  std::string dtype;  // the dtype it runs in
  c10::Device device{c10::kCPU};
  bool cast = false;        // --dtype cast its parameters
  bool takes_mask = false;  // forward takes an attention mask
  std::string schema;       // forward's signature
  std::string dtype_remedy; // what to do when a cast model fails on mixed dtypes
};

// The last input of a forward that computes its logits at the rows it is given only (int64 [K], the
// positions shared by the batch): headscan export and scripts/export_hf.py give it to models with
// transformers' logits_to_keep.
inline constexpr const char* kLogitsRowsInput = "logits_rows";

// --dtype's names ("float32", "bfloat16", "float16"; InputError for others), and back.
at::ScalarType dtype_of(const std::string& name);
std::string dtype_name(at::ScalarType type);

// The line of an error that names the allocation, without the interpreter's traceback.
std::string memory_line(const std::string& what);
// A LibTorch message with control characters escaped and cut to a readable length.
std::string printable(const std::string& message);

// The operator named in LibTorch's "Unknown builtin op: aten::_grouped_mm." message, if any.
std::optional<std::string> unknown_operator(const std::string& message);
// What to tell a user whose archive at `path` calls an operator `op` ("aten::_grouped_mm") this
// LibTorch does not know: an extension library's (fused attention or other) or a newer PyTorch's.
std::string unknown_operator_message(const std::string& path, const std::string& op);

// Runs `call` while `scope` is alive and maps its failures: an error an observer raised rethrown
// with its own type, running out of memory std::runtime_error naming what to lower, anything else
// InputError naming the input and the forward.
c10::IValue run_forward(const ForwardSetting& setting, const CaptureScope& scope, std::int64_t batch,
                        std::int64_t length, const std::function<c10::IValue()>& call);

// The logits of a forward's output: a [batch, length, V] floating tensor, alone or first in a tuple;
// null otherwise.
std::shared_ptr<at::Tensor> logits_of(const c10::IValue& output, std::int64_t batch, std::int64_t length);

// The rows `rows` (int64 [K]; null: all) of the logits [B, T, V] of a model that computes them all.
std::shared_ptr<at::Tensor> logits_at(std::shared_ptr<at::Tensor> logits, const at::Tensor* rows);

}  // namespace headscan
