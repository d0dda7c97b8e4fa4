#include "analyzer/model/model.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/script.h>
#include <torch/version.h>

#include "analyzer/model/capture.h"
#include "analyzer/model/device.h"
#include "analyzer/model/graph_device.h"
#include "analyzer/model/model_archive.h"
#include "analyzer/model/torchscript_archive.h"
#include "analyzer/errors.h"

namespace headscan {

struct InstrumentedModel::Impl {
  std::string path;
  torch::jit::Module module;
  ModelMetadata metadata;
  std::string tokenizer_json;
  std::string schema;
  bool takes_mask = false;
  InstrumentationSummary instrumentation;
  std::string dtype;      // the dtype it runs in (InstrumentedModel::dtype)
  bool cast = false;      // --dtype cast the parameters
  c10::Device device{c10::kCPU};
};

namespace {

// The line of a TorchScript error that names the allocation, without the interpreter's traceback.
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

// An allocation failed in the forward or in the statistics of its attention: a failure while
// running (exit 1), not bad input. What to lower: the batch, the sequences, or the dtype.
std::string out_of_memory_message(const InstrumentedModel::Impl& impl, std::int64_t batch, std::int64_t length,
                                  const std::string& what) {
  const std::string where = impl.device.is_cpu() ? "memory" : fmt::format("memory on {}", impl.device.str());
  const std::string dtype = impl.dtype == "float32" || impl.dtype == "float64"
                                ? fmt::format(", or run the model in --dtype bfloat16 (it runs in {})", impl.dtype)
                                : "";
  return fmt::format("out of {} in the model's forward or its attention statistics, on a batch of {} sequence(s) "
                     "of {} tokens ({}); lower --batch-size or --max-length{}{}",
                     where, batch, length, what, dtype,
                     impl.device.is_cpu() ? ", or run on a machine with more memory" : "");
}

constexpr std::string_view kZipSignature = "PK\x03\x04";      // a local file header: the first file
constexpr std::string_view kEmptyZipSignature = "PK\x05\x06";  // end of central directory, no files

std::string first_bytes(const std::string& path, std::size_t count) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes(count, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(count));
  bytes.resize(static_cast<std::size_t>(in.gcount()));
  return bytes;
}

// What a file that is not a zip archive holds, for the error message.
std::string describe_non_zip(const std::string& start) {
  if (start.empty()) return "an empty file";
  if (start.rfind(kEmptyZipSignature, 0) == 0) return "an empty zip archive (no files inside)";
  std::string escaped;
  for (const char c : start) {
    const auto byte = static_cast<unsigned char>(c);
    escaped += byte >= 0x20 && byte < 0x7f && c != '\\' ? std::string(1, c) : fmt::format("\\x{:02x}", byte);
  }
  return fmt::format("a file starting with \"{}\" instead of the zip signature \"PK\\x03\\x04\"", escaped);
}

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

// forward(self, input_ids[, attention_mask]): anything else cannot be driven by token ids.
void read_forward_schema(InstrumentedModel::Impl& impl) {
  const c10::FunctionSchema& schema = impl.module.get_method("forward").function().getSchema();
  std::ostringstream text;
  text << schema;
  impl.schema = text.str();
  const auto& args = schema.arguments();
  const size_t inputs = args.empty() ? 0 : args.size() - 1;  // without self
  size_t required = 0;
  for (size_t i = 1; i < args.size(); ++i) {
    if (!args[i].default_value()) ++required;
  }
  auto accepts_tensor = [](const c10::Argument& arg) {
    return c10::TensorType::get()->isSubtypeOf(*arg.type()) || arg.type()->kind() == c10::TypeKind::AnyType;
  };
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

// LibTorch's message with control characters escaped (a damaged record can put a NUL in it, which
// ends the line a terminal shows) and cut to a readable length.
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

bool names_attention(const std::string& op) {
  std::string lower;
  for (const char c : op) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("attn") != std::string::npos || lower.find("attention") != std::string::npos;
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

// LibTorch's message when the archive's format is newer than it reads.
bool is_newer_format(const std::string& message) {
  return message.find("maximum supported version for reading") != std::string::npos;
}

torch::jit::Module load_module(const std::string& path, torch::jit::ExtraFilesMap& extra) {
  if (!std::filesystem::exists(path)) {
    throw InputError(fmt::format("{}: model file not found; give the path of a TorchScript archive "
                                 "saved with torch.jit.save", path));
  }
  if (std::filesystem::is_directory(path)) {
    throw InputError(fmt::format("{}: expected a TorchScript archive file, found a directory", path));
  }
  reject_pipe_or_device(path, "expected a TorchScript archive");
  if (const std::string start = first_bytes(path, 8); start.rfind(kZipSignature, 0) != 0) {
    throw InputError(fmt::format("{}: expected a TorchScript archive (a zip file written by "
                                 "torch.jit.save), found {}; export the model with "
                                 "torch.jit.trace or torch.jit.script and save it with torch.jit.save",
                                 path, describe_non_zip(start)));
  }
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

// --dtype's names; the reverse of dtype_name().
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

// A forward that fails on mixed dtypes after --dtype cast the parameters: a traced graph keeps the
// dtypes it was traced in (its constants and casts).
bool is_dtype_mismatch(const std::string& what) {
  return what.find("dtype") != std::string::npos || what.find("scalar type") != std::string::npos ||
         what.find("BFloat16") != std::string::npos || what.find("Half") != std::string::npos;
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

}  // namespace

std::string libtorch_description() {
  std::string text = fmt::format("LibTorch {}", TORCH_VERSION);
  const at::CUDAHooksInterface& cuda = at::detail::getCUDAHooks();
  if (!cuda.isBuilt()) return text + ", CPU only";
  const long runtime = cuda.versionCUDART();
  const int gpus = cuda.hasCUDA() ? cuda.getNumGPUs() : 0;
  return fmt::format("{}, CUDA {}.{}, {}", text, runtime / 1000, runtime % 1000 / 10,
                     gpus == 0 ? "no GPU visible" : fmt::format("{} GPU(s) visible", gpus));
}

InstrumentedModel::InstrumentedModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
InstrumentedModel::~InstrumentedModel() = default;

std::unique_ptr<InstrumentedModel> InstrumentedModel::load(const std::string& path, const std::string& dtype,
                                                         const c10::Device& device) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  const std::optional<at::ScalarType> cast = dtype.empty() ? std::nullopt : std::optional(dtype_of(dtype));
  torch::jit::ExtraFilesMap extra{{"tokenizer.json", ""}, {"headscan.json", ""}};
  impl->module = load_module(path, extra);
  impl->module.eval();
  const std::string own_dtype = parameter_dtype(impl->module);
  if (cast) impl->module.to(*cast);
  impl->device = device;
  if (!device.is_cpu()) {
    try {
      impl->module.to(device);
    } catch (const std::exception& e) {
      if (!is_out_of_memory(e)) throw;
      throw std::runtime_error(fmt::format("{}: out of memory on {} while moving the model's parameters there ({}); "
                                           "run it in a smaller --dtype (bfloat16), or on a GPU with more memory",
                                           path, device.str(), memory_line(e.what())));
    }
  }
  impl->dtype = parameter_dtype(impl->module);
  impl->cast = impl->dtype != own_dtype;
  // The causal passes differentiate with respect to head scales only: no gradient is ever wanted
  // for the weights, and not tracking them keeps the backward pass to the activations.
  for (at::Tensor parameter : impl->module.parameters()) parameter.set_requires_grad(false);
  impl->tokenizer_json = extra["tokenizer.json"];
  impl->metadata = parse_model_metadata(extra["headscan.json"], path + ":headscan.json");
  if (!impl->module.find_method("forward")) {
    throw InputError(fmt::format("{}: the TorchScript module has no forward method; export the "
                                 "model itself, not a module without forward", path));
  }
  read_forward_schema(*impl);
  auto& function = torch::jit::toGraphFunction(impl->module.get_method("forward").function());
  std::shared_ptr<torch::jit::Graph> graph = function.graph();
  torch::jit::Inline(*graph);
  place_graph_on_device(*graph, device);
  impl->instrumentation = instrument_graph(*graph);
  return std::unique_ptr<InstrumentedModel>(new InstrumentedModel(std::move(impl)));
}

const std::string& InstrumentedModel::path() const { return impl_->path; }
const ModelMetadata& InstrumentedModel::metadata() const { return impl_->metadata; }
const std::string& InstrumentedModel::embedded_tokenizer() const { return impl_->tokenizer_json; }
bool InstrumentedModel::takes_attention_mask() const { return impl_->takes_mask; }
std::string InstrumentedModel::forward_schema() const { return impl_->schema; }
int InstrumentedModel::softmax_count() const {
  return impl_->instrumentation.softmax_nodes + impl_->instrumentation.rewritten_attention;
}
std::string InstrumentedModel::dtype() const { return impl_->dtype; }
const c10::Device& InstrumentedModel::device() const { return impl_->device; }
std::string InstrumentedModel::capture_method() const { return softmax_count() > 0 ? "graph" : "outputs"; }

ForwardOutput InstrumentedModel::forward(const at::Tensor& ids, const at::Tensor* mask,
                                         const AttentionCallback& on_attention, const HeadScales* scales,
                                         const AttentionEdit* edit) {
  TORCH_CHECK(ids.dim() == 2, "input ids must be [B,T], got ", ids.sizes());
  const std::int64_t batch = ids.size(0);
  const std::int64_t length = ids.size(1);
  const at::Tensor device_ids = ids.to(impl_->device);
  std::vector<c10::IValue> inputs{device_ids};
  if (impl_->takes_mask) inputs.emplace_back(mask != nullptr ? mask->to(impl_->device) : torch::ones_like(device_ids));

  CaptureScope scope(batch, length, on_attention, scales, edit);
  c10::IValue output;
  try {
    output = impl_->module.forward(inputs);
  } catch (const std::bad_alloc&) {
    throw std::runtime_error(out_of_memory_message(*impl_, batch, length, "std::bad_alloc"));
  } catch (const std::exception& e) {
    try {
      scope.rethrow_captured_error();
    } catch (const std::exception& captured) {
      // The statistics of a layer's attention ran out of memory inside the graph's observer.
      if (!is_out_of_memory(captured)) throw;
      const auto* error = dynamic_cast<const c10::Error*>(&captured);
      throw std::runtime_error(out_of_memory_message(
          *impl_, batch, length, memory_line(error != nullptr ? error->what_without_backtrace() : captured.what())));
    }
    const auto* error = dynamic_cast<const c10::Error*>(&e);
    const std::string what = error != nullptr ? error->what_without_backtrace() : e.what();
    if (is_out_of_memory(e) || names_out_of_memory(what)) {
      throw std::runtime_error(out_of_memory_message(*impl_, batch, length, memory_line(what)));
    }
    if (what.find("index out of range") != std::string::npos) {
      throw InputError(fmt::format(
          "the model failed on the input ids with 'index out of range': a token id is beyond the "
          "model's embedding (the tokenizer does not match the model: use its own tokenizer with "
          "--tokenizer) or the sequence is longer than its position table (lower --max-length)"));
    }
    if (impl_->cast && is_dtype_mismatch(what)) {
      throw InputError(fmt::format(
          "the model's forward failed in {} ({}): --dtype cast its parameters, but the exported graph keeps "
          "the dtypes it was traced in; run it in its own dtype (without --dtype), or export it in {}",
          impl_->dtype, what.substr(0, what.find('\n')), impl_->dtype));
    }
    throw InputError(fmt::format(
        "the model's forward failed on int64 input ids of shape [{}, {}]{}: {}; headscan calls {} "
        "with token ids (and a 1/0 attention mask when forward takes a second tensor)",
        batch, length, impl_->takes_mask ? " with an attention mask" : "", what, impl_->schema));
  }
  if (softmax_count() == 0) offer_returned_attention(output, scope);
  return ForwardOutput{logits_of(output, batch, length)};
}

}  // namespace headscan
