#include "analyzer/model/torchscript/torchscript_model.h"

#include <map>
#include <optional>
#include <sstream>
#include <string_view>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/script.h>
#include <torch/version.h>

#include "analyzer/errors.h"
#include "analyzer/model/capture.h"
#include "analyzer/model/device.h"
#include "analyzer/model/forward_call.h"
#include "analyzer/model/torchscript/graph_capture.h"
#include "analyzer/model/torchscript/graph_device.h"
#include "analyzer/model/torchscript/layer_paths.h"
#include "analyzer/model/torchscript/torchscript_archive.h"

namespace headscan {
namespace {

constexpr ArchiveKind kTorchScriptFile = {
    "a TorchScript archive", "saved with torch.jit.save", "a zip file written by torch.jit.save",
    "export the model with torch.jit.trace or torch.jit.script and save it with torch.jit.save"};

// The forward signature as declared in Python, e.g. forward(self, pixels: List[Tensor]) -> Tensor.
std::string python_signature(const c10::FunctionSchema& schema) {
  std::vector<std::string> arguments;
  for (const c10::Argument& argument : schema.arguments()) {
    arguments.push_back(arguments.empty() ? argument.name()
                                          : fmt::format("{}: {}", argument.name(), argument.type()->annotation_str()));
  }
  std::vector<std::string> returns;
  for (const c10::Argument& value : schema.returns()) returns.push_back(value.type()->annotation_str());
  const std::string result =
      returns.size() == 1 ? returns.front() : fmt::format("Tuple[{}]", fmt::join(returns, ", "));
  return fmt::format("{}({}) -> {}", schema.name(), fmt::join(arguments, ", "), result);
}

struct TorchScriptState {
  std::string path;
  torch::jit::Module module;
  ModelMetadata metadata;
  LayerNumbering layers;
  std::string tokenizer_json;
  std::string schema;
  bool takes_mask = false;
  bool takes_rows = false;  // forward's last input is logits_rows (kLogitsRowsInput)
  InstrumentationSummary instrumentation;
  ForwardSetting setting;  // dtype, device, cast
};

// forward(self, input_ids[, attention_mask][, logits_rows]): anything else cannot be driven by
// token ids.
void read_forward_schema(TorchScriptState& impl) {
  const c10::FunctionSchema& schema = impl.module.get_method("forward").function().getSchema();
  std::ostringstream text;
  text << schema;
  impl.schema = text.str();
  auto accepts_tensor = [](const c10::Argument& arg) {
    return c10::TensorType::get()->isSubtypeOf(*arg.type()) || arg.type()->kind() == c10::TypeKind::AnyType;
  };
  const auto& all = schema.arguments();
  impl.takes_rows = all.size() >= 3 && all.back().name() == kLogitsRowsInput && accepts_tensor(all.back()) &&
                    !all.back().default_value();
  const auto args = c10::ArrayRef<c10::Argument>(all).slice(0, all.size() - (impl.takes_rows ? 1 : 0));
  const size_t inputs = args.empty() ? 0 : args.size() - 1;  // without self
  size_t required = 0;
  for (size_t i = 1; i < args.size(); ++i) {
    if (!args[i].default_value()) ++required;
  }
  const bool ids_ok = inputs >= 1 && accepts_tensor(args[1]);
  const bool mask_ok = inputs < 2 || accepts_tensor(args[2]);
  if (!ids_ok || required > 2 || (required == 2 && !mask_ok)) {
    throw InputError(fmt::format(
        "{}: expected forward(input_ids) or forward(input_ids, attention_mask) taking int64 [batch, "
        "tokens] tensors, found {}; export a wrapper module whose forward takes the token ids",
        impl.path, python_signature(schema)));
  }
  impl.takes_mask = inputs >= 2 && accepts_tensor(args[2]);
}

// LibTorch's message when the archive's format is newer than it reads.
bool is_newer_format(const std::string& message) {
  return message.find("maximum supported version for reading") != std::string::npos;
}

torch::jit::Module load_module(const std::string& path, torch::jit::ExtraFilesMap& extra) {
  check_archive_file(path, kTorchScriptFile);
  TorchScriptArchive(path).check();
  try {
    return torch::jit::load(path, torch::kCPU, extra);
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    // c10::Error from the reader and unpickler, torch::jit::ErrorReport from the TorchScript parser.
    const auto* error = dynamic_cast<const c10::Error*>(&e);
    const std::string what = error != nullptr ? error->what_without_backtrace() : e.what();
    if (const std::optional<std::string> op = unknown_operator(what)) {
      throw InputError(unknown_operator_message(path, *op));
    }
    if (is_newer_format(what)) {
      throw InputError(fmt::format("{}: the archive was written by a newer PyTorch than LibTorch {}, the one this "
                                   "headscan is built with ({}); exporting it again will not help: build headscan "
                                   "against a newer LibTorch (README, \"LibTorch: versions and your own\")",
                                   path, TORCH_VERSION, printable(what.substr(0, what.find('\n')))));
    }
    throw InputError(fmt::format("{}: expected a TorchScript archive written by torch.jit.save, but "
                                 "LibTorch {} cannot load it ({}); the archive is damaged: copy it again, or "
                                 "export the model again with torch.jit.trace or torch.jit.script and "
                                 "torch.jit.save",
                                 path, TORCH_VERSION, printable(what)));
  }
}

// The floating-point dtype that holds most of the module's parameter elements (float32 when it
// has none).
std::string parameter_dtype(const torch::jit::Module& module) {
  std::map<at::ScalarType, std::int64_t> elements;
  for (const at::Tensor& parameter : module.parameters()) {
    if (parameter.is_floating_point()) elements[parameter.scalar_type()] += parameter.numel();
  }
  at::ScalarType most = at::kFloat;
  std::int64_t count = -1;
  for (const auto& [type, numel] : elements) {
    if (numel > count) std::tie(most, count) = std::make_pair(type, numel);
  }
  return dtype_name(most);
}

// HF-style models return their attention: offer every tensor of the output, in order.
void offer_returned_attention(const c10::IValue& value, CaptureScope& scope) {
  if (value.isTensor()) {
    scope.offer(value.toTensor());
  } else if (value.isTuple()) {
    for (const auto& element : value.toTupleRef().elements()) offer_returned_attention(element, scope);
  } else if (value.isList()) {
    for (const c10::IValue& element : value.toListRef()) offer_returned_attention(element, scope);
  } else if (value.isGenericDict()) {
    for (const auto& entry : value.toGenericDict()) offer_returned_attention(entry.value(), scope);
  }
}

class TorchScriptModel final : public InstrumentedModel {
 public:
  explicit TorchScriptModel(TorchScriptState state) : state_(std::move(state)) {}

  const std::string& path() const override { return state_.path; }
  std::string format() const override { return "torchscript"; }
  const ModelMetadata& metadata() const override { return state_.metadata; }
  const LayerNumbering& layer_numbering() const override { return state_.layers; }
  const std::string& embedded_tokenizer() const override { return state_.tokenizer_json; }
  bool takes_attention_mask() const override { return state_.takes_mask; }
  bool selects_logits_rows() const override { return state_.takes_rows; }
  std::string forward_schema() const override { return state_.schema; }
  int softmax_count() const override {
    return state_.instrumentation.softmax_nodes + state_.instrumentation.rewritten_attention;
  }
  int blockwise_attention_count() const override { return state_.instrumentation.rewritten_attention; }
  bool attention_runs_once() const override { return state_.instrumentation.nested_attention == 0; }
  std::string dtype() const override { return state_.setting.dtype; }
  const c10::Device& device() const override { return state_.setting.device; }
  std::string gradient_limit() const override { return ""; }

  ForwardOutput forward(const at::Tensor& ids, const at::Tensor* mask, const AttentionCallback& on_attention,
                        const HeadScales* scales, const AttentionEdit* edit, const at::Tensor* logits_rows) override {
    TORCH_CHECK(ids.dim() == 2, "input ids must be [B,T], got ", ids.sizes());
    const std::int64_t batch = ids.size(0);
    const std::int64_t length = ids.size(1);
    const at::Tensor device_ids = ids.to(state_.setting.device);
    std::vector<c10::IValue> inputs{device_ids};
    if (state_.takes_mask) {
      inputs.emplace_back(mask != nullptr ? mask->to(state_.setting.device) : torch::ones_like(device_ids));
    }
    std::int64_t rows = length;
    if (state_.takes_rows) {
      const at::Tensor wanted = logits_rows != nullptr ? logits_rows->to(torch::kLong) : torch::arange(length);
      rows = wanted.size(0);
      inputs.emplace_back(wanted.to(state_.setting.device));
    }
    CaptureScope scope(batch, length, on_attention, scales, edit, attention_block());
    const c10::IValue output =
        run_forward(state_.setting, scope, batch, length, [&] { return state_.module.forward(inputs); });
    note_attention_block_use(scope.block_use());
    if (softmax_count() == 0) offer_returned_attention(output, scope);
    if (state_.takes_rows) return ForwardOutput{logits_of(output, batch, rows)};
    return ForwardOutput{logits_at(logits_of(output, batch, length), logits_rows)};
  }

 private:
  TorchScriptState state_;
};

}  // namespace

std::unique_ptr<InstrumentedModel> load_torchscript_model(const std::string& path, const std::string& dtype,
                                                          const c10::Device& device) {
  TorchScriptState impl;
  impl.path = path;
  const at::ScalarType cast = dtype.empty() ? at::kFloat : dtype_of(dtype);  // a --dtype it does not know: before loading
  torch::jit::ExtraFilesMap extra{{"tokenizer.json", ""}, {"headscan.json", ""}};
  impl.module = load_module(path, extra);
  impl.module.eval();
  const std::string own_dtype = parameter_dtype(impl.module);
  if (!dtype.empty()) impl.module.to(cast);
  impl.setting.device = device;
  if (!device.is_cpu()) {
    try {
      impl.module.to(device);
    } catch (const std::exception& e) {
      if (!is_out_of_memory(e)) throw;
      throw std::runtime_error(fmt::format("{}: out of memory on {} while moving the model's parameters there ({}); "
                                           "run it in a smaller --dtype (bfloat16), or on a GPU with more memory",
                                           path, device.str(), memory_line(e.what())));
    }
  }
  impl.setting.dtype = parameter_dtype(impl.module);
  impl.setting.cast = impl.setting.dtype != own_dtype;
  impl.setting.dtype_remedy = fmt::format("--dtype cast its parameters, but the exported graph keeps the dtypes it "
                                          "was traced in; run it in its own dtype (without --dtype), or export it "
                                          "in {}",
                                          impl.setting.dtype);
  // The causal passes differentiate with respect to head scales only: no gradient is ever wanted
  // for the weights, and not tracking them keeps the backward pass to the activations.
  for (at::Tensor parameter : impl.module.parameters()) parameter.set_requires_grad(false);
  impl.tokenizer_json = extra["tokenizer.json"];
  impl.metadata = parse_model_metadata(extra["headscan.json"], path + ":headscan.json");
  if (!impl.module.find_method("forward")) {
    throw InputError(fmt::format("{}: the TorchScript module has no forward method; export the "
                                 "model itself, not a module without forward", path));
  }
  read_forward_schema(impl);
  impl.setting.takes_mask = impl.takes_mask;
  impl.setting.schema = impl.schema;
  auto& function = torch::jit::toGraphFunction(impl.module.get_method("forward").function());
  std::shared_ptr<torch::jit::Graph> graph = function.graph();
  torch::jit::Inline(*graph);
  place_graph_on_device(*graph, device);
  impl.instrumentation = instrument_graph(*graph);
  impl.layers = torchscript_layer_numbering(impl.module, *graph);
  return std::make_unique<TorchScriptModel>(std::move(impl));
}

}  // namespace headscan
