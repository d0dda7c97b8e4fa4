#include "analyzer/model/forward_call.h"

#include <cctype>
#include <new>
#include <optional>
#include <string_view>
#include <stdexcept>

#include <fmt/format.h>
#include <ATen/ATen.h>
#include <torch/version.h>

#include "analyzer/errors.h"
#include "analyzer/model/capture.h"
#include "analyzer/model/device.h"

namespace headscan {
namespace {

// An allocation failed in the forward or in the statistics of its attention: a failure while
// running (exit 1), not bad input. What to lower: the batch, the sequences, or the dtype.
std::string out_of_memory_message(const ForwardSetting& setting, std::int64_t batch, std::int64_t length,
                                  const std::string& what) {
  const std::string where =
      setting.device.is_cpu() ? "memory" : fmt::format("memory on {}", setting.device.str());
  const std::string dtype = setting.dtype == "float32" || setting.dtype == "float64"
                                ? fmt::format(", or run the model in --dtype bfloat16 (it runs in {})", setting.dtype)
                                : "";
  return fmt::format("out of {} in the model's forward or its attention statistics, on a batch of {} sequence(s) "
                     "of {} tokens ({}); lower --batch-size or --max-length{}{}",
                     where, batch, length, what, dtype,
                     setting.device.is_cpu() ? ", or run on a machine with more memory" : "");
}

// A forward that fails on mixed dtypes after --dtype cast the parameters: a traced graph keeps the
// dtypes it was traced in (its constants and casts).
bool is_dtype_mismatch(const std::string& what) {
  return what.find("dtype") != std::string::npos || what.find("scalar type") != std::string::npos ||
         what.find("BFloat16") != std::string::npos || what.find("Half") != std::string::npos;
}

bool names_attention(const std::string& op) {
  std::string lower;
  for (const char c : op) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("attn") != std::string::npos || lower.find("attention") != std::string::npos;
}

}  // namespace

// The operator named in LibTorch's "Unknown builtin op: aten::_grouped_mm." message, if any.
std::optional<std::string> unknown_operator(const std::string& message) {
  constexpr std::string_view kMarker = "Unknown builtin op: ";
  const std::size_t at = message.find(kMarker);
  if (at == std::string::npos) return std::nullopt;
  const std::size_t begin = at + kMarker.size();
  std::size_t end = begin;
  while (end < message.size() && (std::isalnum(static_cast<unsigned char>(message[end])) != 0 ||
                                  message[end] == '_' || message[end] == ':' || message[end] == '.')) {
    ++end;
  }
  while (end > begin && message[end - 1] == '.') --end;  // the sentence's full stop
  if (end == begin) return std::nullopt;
  return message.substr(begin, end - begin);
}

// What to tell a user whose archive calls an operator this LibTorch does not know.
std::string unknown_operator_message(const std::string& path, const std::string& op) {
  const std::string space = op.substr(0, op.find("::"));
  if (space != "aten" && space != "prim" && names_attention(op)) {
    return fmt::format("{}: the model calls {}, a fused attention operator of the extension library \"{}\": it "
                       "never materializes the attention probabilities, and headscan cannot rewrite it into "
                       "its eager form; export the model with eager attention (Hugging Face: "
                       "attn_implementation=\"eager\", or \"sdpa\", whose "
                       "aten::scaled_dot_product_attention headscan rewrites)",
                       path, op, space);
  }
  if (space != "aten" && space != "prim") {
    return fmt::format("{}: the model calls {}, an operator of the extension library \"{}\", which LibTorch does "
                       "not have and headscan does not load; export the model without it",
                       path, op, space);
  }
  return fmt::format("{}: the model calls the operator {}, which LibTorch {} (the one this headscan is built "
                     "with) does not have: the archive was written by a newer PyTorch. Exporting it again "
                     "will not help; build headscan against a LibTorch that has {} (the version of the torch "
                     "that exported it, or newer: README, \"LibTorch: versions and your own\")",
                     path, op, TORCH_VERSION, op);
}

at::ScalarType dtype_of(const std::string& name) {
  if (name == "float32") return at::kFloat;
  if (name == "bfloat16") return at::kBFloat16;
  if (name == "float16") return at::kHalf;
  throw InputError(fmt::format("--dtype {}: expected float32, bfloat16 or float16", name));
}

std::string dtype_name(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return "float32";
    case at::kBFloat16: return "bfloat16";
    case at::kHalf: return "float16";
    case at::kDouble: return "float64";
    default: return c10::toString(type);
  }
}

std::string memory_line(const std::string& what) {
  std::size_t end = what.size();
  while (end > 0) {
    const std::size_t begin = what.rfind('\n', end - 1);
    const std::size_t start = begin == std::string::npos ? 0 : begin + 1;
    const std::string line = what.substr(start, end - start);
    if (names_out_of_memory(line)) return line;
    if (begin == std::string::npos) break;
    end = begin;
  }
  return what.substr(0, what.find('\n'));
}

std::string printable(const std::string& message) {
  constexpr std::size_t kLimit = 2000;
  std::string text;
  for (const char c : message.substr(0, kLimit)) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\n' && c != '\t') || byte == 0x7f) {
      text += fmt::format("\\x{:02x}", byte);
    } else {
      text += c;
    }
  }
  if (message.size() > kLimit) text += "…";
  return text;
}

c10::IValue run_forward(const ForwardSetting& setting, const CaptureScope& scope, std::int64_t batch,
                        std::int64_t length, const std::function<c10::IValue()>& call) {
  try {
    return call();
  } catch (const std::bad_alloc&) {
    throw std::runtime_error(out_of_memory_message(setting, batch, length, "std::bad_alloc"));
  } catch (const std::exception& e) {
    try {
      scope.rethrow_captured_error();
    } catch (const std::exception& captured) {
      // The statistics of a layer's attention ran out of memory inside the graph's observer.
      if (!is_out_of_memory(captured)) throw;
      const auto* error = dynamic_cast<const c10::Error*>(&captured);
      throw std::runtime_error(out_of_memory_message(
          setting, batch, length, memory_line(error != nullptr ? error->what_without_backtrace() : captured.what())));
    }
    const auto* error = dynamic_cast<const c10::Error*>(&e);
    const std::string what = error != nullptr ? error->what_without_backtrace() : e.what();
    if (is_out_of_memory(e) || names_out_of_memory(what)) {
      throw std::runtime_error(out_of_memory_message(setting, batch, length, memory_line(what)));
    }
    if (what.find("index out of range") != std::string::npos) {
      throw InputError(fmt::format(
          "the model failed on the input ids with 'index out of range': a token id is beyond the "
          "model's embedding (the tokenizer does not match the model: use its own tokenizer with "
          "--tokenizer) or the sequence is longer than its position table (lower --max-length)"));
    }
    if (setting.cast && is_dtype_mismatch(what)) {
      throw InputError(fmt::format("the model's forward failed in {} ({}): {}", setting.dtype,
                                   what.substr(0, what.find('\n')), setting.dtype_remedy));
    }
    throw InputError(fmt::format(
        "the model's forward failed on int64 input ids of shape [{}, {}]{}: {}; headscan calls {} "
        "with token ids (and a 1/0 attention mask when forward takes a second tensor)",
        batch, length, setting.takes_mask ? " with an attention mask" : "", what, setting.schema));
  }
}

std::shared_ptr<at::Tensor> logits_of(const c10::IValue& output, std::int64_t batch, std::int64_t length) {
  const c10::IValue* first = &output;
  if (output.isTuple() && !output.toTupleRef().elements().empty()) first = &output.toTupleRef().elements()[0];
  if (!first->isTensor()) return nullptr;
  const at::Tensor& tensor = first->toTensor();
  if (tensor.dim() != 3 || tensor.size(0) != batch || tensor.size(1) != length || !tensor.is_floating_point()) {
    return nullptr;
  }
  return std::make_shared<at::Tensor>(tensor);
}

std::shared_ptr<at::Tensor> logits_at(std::shared_ptr<at::Tensor> logits, const at::Tensor* rows) {
  if (!logits || rows == nullptr) return logits;
  return std::make_shared<at::Tensor>(logits->index_select(/*dim=*/1, rows->to(logits->device())));
}

}  // namespace headscan
