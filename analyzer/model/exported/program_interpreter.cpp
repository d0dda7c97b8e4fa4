#include "analyzer/model/exported/program_interpreter.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/core/GradMode.h>

#include "analyzer/errors.h"
#include "analyzer/model/exported/pt2_archive.h"
#include "analyzer/model/exported/serialized_program.h"
#include "analyzer/model/model_zip.h"

namespace headscan {
namespace {

using nlohmann::json;

// One argument of a node, prepared at load: a constant, or values of the run.
struct Argument {
  enum class Kind { kConstant, kValue, kTensors, kOptionalTensors, kInts };
  Kind kind = Kind::kConstant;
  c10::IValue constant;
  int slot = -1;
  std::vector<int> slots;           // kTensors; kOptionalTensors (-1: None); kInts (-1: ints[i])
  std::vector<std::int64_t> ints;   // kInts
  bool to_double = false;           // a float argument given a size (an int)
  bool to_tensor = false;           // a Tensor argument given a number (Python's x * 0.5)
};

// A number where an operator takes a Tensor, as Python's bindings pass it: a wrapped number, a
// 0-dim tensor that takes part in type promotion as a Python scalar does.
at::Tensor wrapped_number(const c10::IValue& number) {
  at::Tensor tensor = number.isDouble() ? at::scalar_tensor(number.toDouble(), at::kDouble)
                      : number.isBool() ? at::scalar_tensor(number.toBool(), at::kBool)
                                        : at::scalar_tensor(number.toInt(), at::kLong);
  tensor.unsafeGetTensorImpl()->set_wrapped_number(true);
  return tensor;
}

struct Step {
  std::string name;     // the node's name, for messages
  std::optional<c10::OperatorHandle> op;
  Arithmetic arithmetic = Arithmetic::kNone;
  std::vector<Argument> arguments;  // in the schema's order (positional, for arithmetic)
  std::vector<std::vector<int>> outputs;  // per return: its slot, or the slots of a tensor list; -1: unused
  std::vector<bool> output_lists;
  std::vector<int> release;         // slots read for the last time here
  bool skip = false;
  // aten::copy(self, src): the functional copy functionalization writes for an in-place one (a
  // slice assigned to), which autograd has no formula for; with gradients on it runs as
  // self.clone().copy_(src), the same values, which autograd differentiates.
  bool functional_copy = false;
};

}  // namespace

struct ProgramInterpreter::Impl {
  std::vector<Step> steps;
  std::vector<c10::IValue> initial;   // the weights and constants in their slots
  std::vector<int> user_inputs;
  std::vector<int> outputs;
  std::optional<at::ScalarType> cast;  // the run's dtype, where it is not the export's
  at::ScalarType exported = at::kFloat;

  c10::IValue materialize(const Argument& argument, const std::vector<c10::IValue>& values) const {
    switch (argument.kind) {
      case Argument::Kind::kConstant: return argument.constant;
      case Argument::Kind::kValue: {
        const c10::IValue& value = values[static_cast<std::size_t>(argument.slot)];
        if (argument.to_double && value.isInt()) return static_cast<double>(value.toInt());
        if (argument.to_tensor && !value.isTensor()) return wrapped_number(value);
        return value;
      }
      case Argument::Kind::kTensors: {
        c10::List<at::Tensor> list;
        list.reserve(argument.slots.size());
        for (int slot : argument.slots) list.push_back(values[static_cast<std::size_t>(slot)].toTensor());
        return list;
      }
      case Argument::Kind::kOptionalTensors: {
        c10::List<std::optional<at::Tensor>> list;
        list.reserve(argument.slots.size());
        for (int slot : argument.slots) {
          list.push_back(slot < 0 ? std::optional<at::Tensor>() : values[static_cast<std::size_t>(slot)].toTensor());
        }
        return list;
      }
      case Argument::Kind::kInts: {
        std::vector<std::int64_t> list(argument.slots.size());
        for (std::size_t i = 0; i < list.size(); ++i) {
          list[i] = argument.slots[i] < 0 ? argument.ints[i] : values[static_cast<std::size_t>(argument.slots[i])].toInt();
        }
        return list;
      }
    }
    return {};
  }

  // Floating tensors of the export's dtype cast to the run's where they meet one in the run's.
  void unify_dtypes(torch::jit::Stack& stack) const {
    bool run_dtype = false;
    bool export_dtype = false;
    const auto see = [&](const at::Tensor& t) {
      if (!t.defined()) return;
      run_dtype |= t.scalar_type() == *cast;
      export_dtype |= t.scalar_type() == exported;
    };
    for (const c10::IValue& value : stack) {
      if (value.isTensor()) see(value.toTensor());
      if (value.isTensorList()) for (const at::Tensor& t : value.toTensorVector()) see(t);
    }
    if (!run_dtype || !export_dtype) return;
    for (c10::IValue& value : stack) {
      if (value.isTensor() && value.toTensor().defined() && value.toTensor().scalar_type() == exported) {
        value = value.toTensor().to(*cast);
      } else if (value.isTensorList()) {
        std::vector<at::Tensor> list = value.toTensorVector();
        for (at::Tensor& t : list) {
          if (t.defined() && t.scalar_type() == exported) t = t.to(*cast);
        }
        value = c10::List<at::Tensor>(list);
      }
    }
  }
};

namespace {

// Builds the steps of a program's graph; names of values become slots.
class Loader {
 public:
  // `read_weights` false: the steps only, to check that they can run (interpreter_limit).
  Loader(const ModelZip& zip, const std::string& program, std::optional<at::ScalarType> dtype, const c10::Device& device,
         ProgramInterpreter::Impl& impl, bool read_weights = true)
      : zip_(zip), program_(program), dtype_(dtype), device_(device), impl_(impl), read_weights_(read_weights) {}

  void load() {
    const std::string record = fmt::format("models/{}.json", program_);
    const json document = json::parse(zip_.read(record, kMaxProgramBytes));
    const json& module = document.at("graph_module");
    const json& graph = module.at("graph");
    const json& values = graph.at("tensor_values");
    impl_.exported = parameters_dtype(module.at("signature"), values);
    if (dtype_ == impl_.exported) dtype_.reset();
    impl_.cast = dtype_;
    load_inputs(module.at("signature"), values);
    for (const json& node : graph.at("nodes")) add_step(node);
    for (const json& spec : module.at("signature").at("output_specs")) {
      const auto [kind, entry] = union_entry(spec);
      if (kind != "user_output") {
        refuse(fmt::format("its output spec \"{}\" (a mutated buffer or input), which a forward call with "
                           "headscan's passes does not return",
                           kind));
      }
      impl_.outputs.push_back(slot_of(entry.at("arg").at("as_tensor").at("name").get<std::string>()));
    }
    release_after_last_use();
  }

 private:
  [[noreturn]] void refuse(const std::string& what) const {
    throw InputError(fmt::format("{}: program \"{}\" has {}; headscan runs that program with NativeRT only, which "
                                 "cannot differentiate it (--ablation) nor run it in another --dtype or on another "
                                 "--device: run it without those, or export the model again with headscan export",
                                 zip_.path(), program_, what));
  }

  int slot_of(const std::string& name) {
    const auto found = slots_.find(name);
    if (found != slots_.end()) return found->second;
    const int slot = static_cast<int>(slots_.size());
    slots_.emplace(name, slot);
    impl_.initial.emplace_back();
    return slot;
  }

  // A weight or constant: its record's bytes viewed as the program's tensor meta, cast and moved.
  at::Tensor read_tensor(const json& meta, const std::string& record, bool cast) {
    auto stored = storages_.find(record);
    if (stored == storages_.end()) {
      const at::ScalarType type = serialized_scalar_type(meta.at("dtype").get<std::int64_t>());
      const std::uint64_t bytes = zip_.size(record);
      const std::string data = zip_.read(record, bytes);
      const auto element = static_cast<std::uint64_t>(c10::elementSize(type));
      at::Tensor storage = at::empty({static_cast<std::int64_t>(bytes / element)}, at::TensorOptions().dtype(type));
      std::memcpy(storage.data_ptr(), data.data(), storage.numel() * element);
      stored = storages_.emplace(record, storage).first;
    }
    std::vector<std::int64_t> sizes;
    std::vector<std::int64_t> strides;
    for (const json& size : meta.at("sizes")) sizes.push_back(size.at("as_int").get<std::int64_t>());
    for (const json& stride : meta.at("strides")) strides.push_back(stride.at("as_int").get<std::int64_t>());
    const std::int64_t offset = meta.contains("storage_offset") ? meta.at("storage_offset").at("as_int").get<std::int64_t>() : 0;
    const at::ScalarType type = serialized_scalar_type(meta.at("dtype").get<std::int64_t>());
    at::Tensor tensor = stored->second.view(type).as_strided(sizes, strides, offset);
    const std::string key = fmt::format("{}:{}:{}:{}:{}", record, fmt::join(sizes, ","), fmt::join(strides, ","), offset, cast);
    if (auto done = converted_.find(key); done != converted_.end()) return done->second;
    const bool floating = at::isFloatingType(type);
    const at::ScalarType target = cast && floating && dtype_ ? *dtype_ : type;
    if (target != type || device_ != tensor.device()) tensor = tensor.to(device_, target);
    converted_.emplace(key, tensor);
    return tensor;
  }

  // The floating dtype of most parameter elements (float32 when none): the export's.
  static at::ScalarType parameters_dtype(const json& signature, const json& values) {
    std::map<at::ScalarType, std::int64_t> elements;
    for (const json& spec : signature.at("input_specs")) {
      if (!spec.contains("parameter")) continue;
      const json& meta = values.at(spec.at("parameter").at("arg").at("name").get<std::string>());
      const at::ScalarType type = serialized_scalar_type(meta.at("dtype").get<std::int64_t>());
      if (!at::isFloatingType(type)) continue;
      std::int64_t numel = 1;
      for (const json& size : meta.at("sizes")) numel *= size.at("as_int").get<std::int64_t>();
      elements[type] += numel;
    }
    at::ScalarType most = at::kFloat;
    std::int64_t count = -1;
    for (const auto& [type, n] : elements) {
      if (n > count) std::tie(most, count) = std::make_pair(type, n);
    }
    return most;
  }

  std::map<std::string, json> payload(const std::string& record) const {
    std::map<std::string, json> entries;
    if (!zip_.has(record)) return entries;
    const json document = json::parse(zip_.read(record, kMaxProgramBytes));
    for (const auto& [name, entry] : document.at("config").items()) entries[name] = entry;
    return entries;
  }

  void load_inputs(const json& signature, const json& values) {
    const std::map<std::string, json> weights = payload(fmt::format("data/weights/{}_weights_config.json", program_));
    const std::map<std::string, json> constants =
        payload(fmt::format("data/constants/{}_constants_config.json", program_));
    for (const json& spec : signature.at("input_specs")) {
      const auto [kind, entry] = union_entry(spec);
      if (kind == "user_input") {
        impl_.user_inputs.push_back(slot_of(entry.at("arg").at("as_tensor").at("name").get<std::string>()));
        continue;
      }
      const char* field = kind == "parameter" ? "parameter_name" : kind == "buffer" ? "buffer_name"
                          : kind == "tensor_constant" ? "tensor_constant_name" : nullptr;
      if (field == nullptr) refuse(fmt::format("an input of kind \"{}\"", kind));
      const std::string argument = entry.at("arg").at("name").get<std::string>();
      const std::string name = entry.at(field).get<std::string>();
      const bool constant = kind == "tensor_constant" || (kind == "buffer" && !entry.value("persistent", true));
      const std::map<std::string, json>& config = constant ? constants : weights;
      const std::string folder = constant ? "data/constants/" : "data/weights/";
      const json& meta = values.at(argument);
      if (kind == "parameter" && meta.contains("device")) exported_device_ = serialized_device(meta.at("device"));
      // The checkpoint's tensors take the run's dtype; what the module computed itself keeps its own.
      const std::string record = folder + config.at(name).at("path_name").get<std::string>();
      impl_.initial[static_cast<std::size_t>(slot_of(argument))] =
          read_weights_ ? read_tensor(meta, record, /*cast=*/!constant) : at::Tensor();
    }
  }

  // A device the program names: the run's where it is the export's.
  c10::Device run_device(const c10::Device& device) const {
    const bool exported = device.type() == exported_device_.type() &&
                          (!device.has_index() || !exported_device_.has_index() || device.index() == exported_device_.index());
    return exported ? device_ : device;
  }

  // A serialized argument as the schema type `type` takes it.
  Argument argument(const json& value, const c10::TypePtr& type) {
    Argument result;
    const auto [kind, item] = union_entry(value);
    const c10::TypePtr element = type->kind() == c10::TypeKind::OptionalType
                                     ? type->expectRef<c10::OptionalType>().getElementType() : type;
    const bool wants_float = element->kind() == c10::TypeKind::FloatType;
    const auto sym = [&](const json& entry, bool to_double) {
      if (entry.contains("as_name")) {
        result.kind = Argument::Kind::kValue;
        result.slot = slot_of(entry.at("as_name").get<std::string>());
        result.to_double = to_double;
      } else if (entry.contains("as_int")) {
        result.constant = to_double ? c10::IValue(entry.at("as_int").get<double>()) : c10::IValue(entry.at("as_int").get<std::int64_t>());
      } else if (entry.contains("as_float")) {
        result.constant = serialized_float(entry.at("as_float"));
      } else if (entry.contains("as_bool")) {
        result.constant = entry.at("as_bool").get<bool>();
      } else {
        throw std::invalid_argument("a symbolic value it does not read");
      }
    };
    if (kind == "as_none") {
      result.constant = c10::IValue();
    } else if (kind == "as_tensor") {
      result.kind = Argument::Kind::kValue;
      result.slot = slot_of(item.at("name").get<std::string>());
    } else if (kind == "as_tensors") {
      result.kind = Argument::Kind::kTensors;
      for (const json& t : item) result.slots.push_back(slot_of(t.at("name").get<std::string>()));
    } else if (kind == "as_optional_tensors") {
      result.kind = Argument::Kind::kOptionalTensors;
      for (const json& t : item) {
        result.slots.push_back(t.contains("as_tensor") ? slot_of(t.at("as_tensor").at("name").get<std::string>()) : -1);
      }
    } else if (kind == "as_optional_tensor") {
      if (item.contains("as_tensor")) {
        result.kind = Argument::Kind::kValue;
        result.slot = slot_of(item.at("as_tensor").at("name").get<std::string>());
      }
    } else if (kind == "as_int") {
      result.constant = wants_float ? c10::IValue(item.get<double>()) : c10::IValue(item.get<std::int64_t>());
    } else if (kind == "as_float") {
      result.constant = serialized_float(item);
    } else if (kind == "as_bool") {
      result.constant = item.get<bool>();
    } else if (kind == "as_string") {
      result.constant = item.get<std::string>();
    } else if (kind == "as_ints") {
      result.constant = item.get<std::vector<std::int64_t>>();
    } else if (kind == "as_floats") {
      std::vector<double> list;
      for (const json& f : item) list.push_back(serialized_float(f));
      result.constant = list;
    } else if (kind == "as_bools") {
      c10::List<bool> list;
      for (const json& b : item) list.push_back(b.get<bool>());
      result.constant = list;
    } else if (kind == "as_strings") {
      result.constant = item.get<std::vector<std::string>>();
    } else if (kind == "as_scalar_type") {
      result.constant = serialized_scalar_type(item.get<std::int64_t>());
    } else if (kind == "as_layout") {
      result.constant = serialized_layout(item.get<std::int64_t>());
    } else if (kind == "as_memory_format") {
      result.constant = serialized_memory_format(item.get<std::int64_t>());
    } else if (kind == "as_device") {
      result.constant = run_device(serialized_device(item));
    } else if (kind == "as_sym_int" || kind == "as_sym_float" || kind == "as_sym_bool") {
      sym(item, wants_float);
    } else if (kind == "as_sym_ints") {
      result.kind = Argument::Kind::kInts;
      for (const json& entry : item) {
        if (entry.contains("as_name")) {
          result.slots.push_back(slot_of(entry.at("as_name").get<std::string>()));
          result.ints.push_back(0);
        } else {
          result.slots.push_back(-1);
          result.ints.push_back(entry.at("as_int").get<std::int64_t>());
        }
      }
    } else {
      throw std::invalid_argument(fmt::format("an argument of kind \"{}\"", kind));
    }
    if (element->kind() == c10::TypeKind::TensorType) {
      if (result.kind == Argument::Kind::kConstant && (result.constant.isInt() || result.constant.isDouble() ||
                                                        result.constant.isBool())) {
        result.constant = wrapped_number(result.constant);
      }
      result.to_tensor = result.kind == Argument::Kind::kValue;
    }
    return result;
  }

  void add_step(const json& node) {
    Step step;
    step.name = node.value("name", std::string());
    const std::string target = node.at("target").get<std::string>();
    const json& inputs = node.at("inputs");
    try {
      if (target.rfind("torch.ops.", 0) == 0) {
        const std::string rest = target.substr(10);
        const std::size_t dot = rest.find('.');
        const std::size_t last = rest.rfind('.');
        const std::string name = rest.substr(0, dot) + "::" + rest.substr(dot + 1, last - dot - 1);
        const std::string overload = rest.substr(last + 1) == "default" ? "" : rest.substr(last + 1);
        if (rest.rfind("higher_order.", 0) == 0) throw std::invalid_argument("a higher-order operator");
        step.op = c10::Dispatcher::singleton().findSchema({name, overload});
        if (!step.op) throw std::invalid_argument("an operator this LibTorch does not have");
        step.skip = dtype_.has_value() && name == "aten::_assert_tensor_metadata";
        step.functional_copy = name == "aten::copy" && overload.empty();
        const c10::FunctionSchema& schema = step.op->schema();
        for (const c10::Argument& formal : schema.arguments()) {
          const json* given = nullptr;
          for (const json& input : inputs) {
            if (input.at("name").get<std::string>() == formal.name()) given = &input.at("arg");
          }
          if (given != nullptr) {
            step.arguments.push_back(argument(*given, formal.type()));
          } else if (formal.default_value()) {
            Argument fallback;
            fallback.constant = *formal.default_value();
            step.arguments.push_back(fallback);
          } else if (formal.type()->kind() == c10::TypeKind::OptionalType) {
            step.arguments.emplace_back();
          } else {
            throw std::invalid_argument(fmt::format("no value for its argument \"{}\"", formal.name()));
          }
        }
      } else {
        step.arithmetic = arithmetic(target);
        if (step.arithmetic == Arithmetic::kNone) throw std::invalid_argument("a Python callable headscan does not run");
        for (const json& input : inputs) step.arguments.push_back(argument(input.at("arg"), c10::IntType::get()));
      }
      for (const json& output : node.at("outputs")) {
        const auto [kind, item] = union_entry(output);
        std::vector<int> slots;
        if (kind == "as_tensor") {
          slots.push_back(slot_of(item.at("name").get<std::string>()));
        } else if (kind == "as_tensors") {
          for (const json& t : item) slots.push_back(slot_of(t.at("name").get<std::string>()));
        } else if ((kind == "as_sym_int" || kind == "as_sym_float" || kind == "as_sym_bool") && item.contains("as_name")) {
          slots.push_back(slot_of(item.at("as_name").get<std::string>()));
        } else {
          slots.push_back(-1);
        }
        step.output_lists.push_back(kind == "as_tensors");
        step.outputs.push_back(std::move(slots));
      }
    } catch (const InputError&) {
      throw;
    } catch (const std::exception& e) {
      refuse(fmt::format("node {} ({}) with {}, which headscan's interpreter of exported programs does not run",
                         step.name, target, e.what()));
    }
    impl_.steps.push_back(std::move(step));
  }

  // Each slot computed or read by a step is released after the last step that reads it, unless it
  // is an output or a weight.
  void release_after_last_use() {
    std::vector<int> last(slots_.size(), -1);
    for (std::size_t i = 0; i < impl_.steps.size(); ++i) {
      for (const Argument& a : impl_.steps[i].arguments) {
        if (a.slot >= 0) last[static_cast<std::size_t>(a.slot)] = static_cast<int>(i);
        for (int s : a.slots) {
          if (s >= 0) last[static_cast<std::size_t>(s)] = static_cast<int>(i);
        }
      }
    }
    // A value no step reads (another output of an operator) goes when it is made.
    for (std::size_t i = 0; i < impl_.steps.size(); ++i) {
      for (const std::vector<int>& slots : impl_.steps[i].outputs) {
        for (int s : slots) {
          if (s >= 0 && last[static_cast<std::size_t>(s)] < 0) last[static_cast<std::size_t>(s)] = static_cast<int>(i);
        }
      }
    }
    for (int output : impl_.outputs) last[static_cast<std::size_t>(output)] = -1;
    for (std::size_t slot = 0; slot < last.size(); ++slot) {
      if (last[slot] >= 0 && impl_.initial[slot].isNone()) {
        impl_.steps[static_cast<std::size_t>(last[slot])].release.push_back(static_cast<int>(slot));
      }
    }
  }

  const ModelZip& zip_;
  std::string program_;
  std::optional<at::ScalarType> dtype_;
  c10::Device device_;
  c10::Device exported_device_{c10::kCPU};
  ProgramInterpreter::Impl& impl_;
  bool read_weights_ = true;
  std::map<std::string, int> slots_;
  std::map<std::string, at::Tensor> storages_;
  std::map<std::string, at::Tensor> converted_;
};

}  // namespace

ProgramInterpreter::ProgramInterpreter(const ModelZip& zip, const std::string& name,
                                       std::optional<at::ScalarType> dtype, const c10::Device& device)
    : impl_(std::make_unique<Impl>()) {
  Loader(zip, name, dtype, device, *impl_).load();
}

ProgramInterpreter::~ProgramInterpreter() = default;

std::string interpreter_limit(const ModelZip& zip, const std::string& name) {
  ProgramInterpreter::Impl steps;
  try {
    Loader(zip, name, std::nullopt, c10::Device(c10::kCPU), steps, /*read_weights=*/false).load();
  } catch (const InputError& e) {
    return e.what();
  } catch (const json::exception& e) {
    return fmt::format("{}: program \"{}\" lacks a field headscan's interpreter reads ({})", zip.path(), name, e.what());
  }
  return "";
}

c10::IValue ProgramInterpreter::run(const std::vector<at::Tensor>& inputs) const {
  TORCH_CHECK(inputs.size() == impl_->user_inputs.size(), "the program takes ", impl_->user_inputs.size(),
              " inputs, got ", inputs.size());
  std::vector<c10::IValue> values = impl_->initial;
  for (std::size_t i = 0; i < inputs.size(); ++i) values[static_cast<std::size_t>(impl_->user_inputs[i])] = inputs[i];
  torch::jit::Stack stack;
  for (const Step& step : impl_->steps) {
    if (step.skip) continue;
    stack.clear();
    for (const Argument& argument : step.arguments) stack.push_back(impl_->materialize(argument, values));
    if (step.functional_copy && c10::GradMode::is_enabled()) {
      if (impl_->cast) impl_->unify_dtypes(stack);
      const at::Tensor copied = stack[0].toTensor().clone().copy_(stack[1].toTensor(), stack[2].toBool());
      stack.assign({copied});
    } else if (step.op) {
      if (impl_->cast) impl_->unify_dtypes(stack);
      step.op->callBoxed(stack);
    } else {
      const c10::IValue result = compute(step.arithmetic, stack);
      stack.assign({result});
    }
    for (std::size_t i = 0; i < step.outputs.size() && i < stack.size(); ++i) {
      const std::vector<int>& slots = step.outputs[i];
      if (step.output_lists[i]) {
        const std::vector<at::Tensor> list = stack[i].toTensorVector();
        for (std::size_t j = 0; j < slots.size() && j < list.size(); ++j) values[static_cast<std::size_t>(slots[j])] = list[j];
      } else if (slots[0] >= 0) {
        values[static_cast<std::size_t>(slots[0])] = std::move(stack[i]);
      }
    }
    for (int slot : step.release) values[static_cast<std::size_t>(slot)] = c10::IValue();
  }
  if (impl_->outputs.size() == 1) return values[static_cast<std::size_t>(impl_->outputs[0])];
  std::vector<c10::IValue> outputs;
  for (int slot : impl_->outputs) outputs.push_back(values[static_cast<std::size_t>(slot)]);
  return c10::ivalue::Tuple::create(std::move(outputs));
}

}  // namespace headscan
