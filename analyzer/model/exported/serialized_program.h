#pragma once
// torch.export's serialized program (torch/_export/serde/schema.py), as headscan's interpreter of
// exported programs reads it (program_interpreter.h): the enums, floats and unions of its JSON,
// and the Python arithmetic on sizes its graphs call (operator.add on SymInts and the like), which
// NativeRT also runs itself. Internal to analyzer/model/exported.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>
#include <c10/core/Layout.h>
#include <c10/core/MemoryFormat.h>
#include <c10/core/ScalarType.h>

namespace headscan {

// The serialized enums ScalarType, Layout and MemoryFormat; std::invalid_argument for a code
// LibTorch has no value for.
at::ScalarType serialized_scalar_type(std::int64_t code);
at::Layout serialized_layout(std::int64_t code);
at::MemoryFormat serialized_memory_format(std::int64_t code);

// A serialized float: a number, or "Infinity", "-Infinity", "NaN" (JSON has no literal for them).
double serialized_float(const nlohmann::json& value);

// The one entry of a serialized union ({"as_tensor": {...}}): its kind and its value.
std::pair<std::string, const nlohmann::json&> union_entry(const nlohmann::json& value);

// A serialized device {"type": "cuda", "index": 0}.
c10::Device serialized_device(const nlohmann::json& device);

// The Python callables on sizes an exported program calls: "_operator.add", "torch.sym_max", ...
enum class Arithmetic { kNone, kAdd, kSub, kMul, kFloorDiv, kTrueDiv, kMod, kNeg, kEq, kNe, kLt, kLe, kGt, kGe,
                        kMax, kMin, kNot };
// kNone for a target that is not one of them.
Arithmetic arithmetic(const std::string& target);
// Python's semantics on ints (floor division and modulo round toward −∞), bools and floats.
c10::IValue compute(Arithmetic op, const std::vector<c10::IValue>& operands);

}  // namespace headscan
