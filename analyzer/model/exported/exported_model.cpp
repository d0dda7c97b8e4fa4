#include "analyzer/model/exported/exported_model.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/Logging.h>
#include <nlohmann/json.hpp>
#include <torch/nativert/ModelRunnerHandle.h>
#include <torch/version.h>

#include "analyzer/errors.h"
#include "analyzer/model/device.h"
#include "analyzer/model/capture.h"
#include "analyzer/model/exported/program_interpreter.h"
#include "analyzer/model/exported/pt2_archive.h"
#include "analyzer/model/exported/selection_ops.h"
#include "analyzer/model/forward_call.h"

namespace headscan {
namespace {

constexpr ArchiveKind kExportedFile = {
    "an exported program (.pt2)", "written by headscan export",
    "a zip file written by headscan export or torch.export's package_pt2",
    "export the model with headscan export MODEL_DIR OUT.pt2"};

// The dispatcher's name of "aten::softmax.int": ("aten::softmax", "int"); "default" is "".
std::pair<std::string, std::string> split_operator(const std::string& op) {
  const std::size_t dot = op.find('.', op.find("::"));
  if (dot == std::string::npos) return {op, ""};
  const std::string overload = op.substr(dot + 1);
  return {op.substr(0, dot), overload == "default" ? "" : overload};
}

// Every operator the program calls is one this LibTorch has (headscan's own among them): NativeRT
// would otherwise fail while loading with a message about its graph.
void check_operators(const std::string& path, const std::vector<std::string>& operators) {
  for (const std::string& op : operators) {
    const auto [name, overload] = split_operator(op);
    if (name.rfind("higher_order::", 0) == 0) {
      throw InputError(fmt::format("{}: the program calls the higher-order operator {}, which NativeRT does not "
                                   "run; export the model with headscan export, which decomposes it",
                                   path, name.substr(14)));
    }
    if (!c10::Dispatcher::singleton().findSchema({name, overload})) {
      throw InputError(unknown_operator_message(path, name));
    }
  }
}

// While alive, LibTorch's log shows errors only: NativeRT warns on the terminal about every program
// whose operators have no static kernels (all of them run through the dispatcher, as intended).
class QuietLog {
 public:
  QuietLog() : level_(FLAGS_caffe2_log_level) { FLAGS_caffe2_log_level = std::max(level_, 2); }
  ~QuietLog() { FLAGS_caffe2_log_level = level_; }
  QuietLog(const QuietLog&) = delete;
  QuietLog& operator=(const QuietLog&) = delete;

 private:
  int level_;
};

struct ExportedState {
  std::string path;
  ModelMetadata metadata;
  LayerNumbering layers;
  std::string tokenizer_json;
  ExportedProgramInfo program;
  ForwardSetting setting;
  // Where the run's dtype (setting.dtype) is not the export's: that dtype.
  std::optional<at::ScalarType> cast;
  // Whether every call runs in headscan's interpreter (program_interpreter.h): the run casts or
  // moves the program, or a call has needed gradients (the importance pass; the passes after it
  // then run there too, so that their losses come from the same computation and the weights are
  // not loaded again).
  bool interpreted = false;
  // The program's last input is logits_rows (int64 [K]): it computes the logits at those rows only.
  bool takes_rows = false;
  // One of the archive's programs at a time, loaded when a call needs it (each holds the weights
  // it uses): "model", or kAttentionProgram.
  std::unique_ptr<torch::nativert::ModelRunnerHandle> runner;
  std::unique_ptr<ProgramInterpreter> interpreter;
  std::string runner_program;
};

// headscan's interpreter of `program` in the archive at `path`, its weights cast to `cast` and on `device`.
std::unique_ptr<ProgramInterpreter> load_interpreter(const std::string& path, const std::string& program,
                                                     std::optional<at::ScalarType> cast, const c10::Device& device) {
  const ModelZip zip(path, kExportedExpected, kExportProgramAgain);
  try {
    return std::make_unique<ProgramInterpreter>(zip, program, cast, device);
  } catch (const InputError&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: program \"{}\" lacks a field headscan reads ({}); {}", path, program,
                                 e.what(), kExportProgramAgain));
  } catch (const std::exception& e) {
    if (!is_out_of_memory(e)) throw;
    throw std::runtime_error(fmt::format("{}: out of memory on {} while placing the program's weights there ({}); "
                                         "run it in a smaller --dtype (bfloat16), or on a device with more memory",
                                         path, device.str(), memory_line(e.what())));
  }
}

// NativeRT's runner of `program` in the archive at `path`; InputError when NativeRT cannot load it.
std::unique_ptr<torch::nativert::ModelRunnerHandle> load_runner(const std::string& path, const std::string& program) {
  try {
    const QuietLog quiet;
    return std::make_unique<torch::nativert::ModelRunnerHandle>(path, program);
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    const auto* error = dynamic_cast<const c10::Error*>(&e);
    const std::string what = error != nullptr ? error->what_without_backtrace() : e.what();
    throw InputError(fmt::format("{}: expected {}, but NativeRT (LibTorch {}) cannot load its program \"{}\" ({}); "
                                 "the archive is damaged or was written by another PyTorch: copy it again, or {}",
                                 path, kExportedExpected, TORCH_VERSION, program, printable(what),
                                 kExportProgramAgain));
  }
}

class ExportedProgram final : public InstrumentedModel {
 public:
  explicit ExportedProgram(ExportedState state) : state_(std::move(state)) {}

  const std::string& path() const override { return state_.path; }
  std::string format() const override { return "exported program"; }
  const ModelMetadata& metadata() const override { return state_.metadata; }
  const LayerNumbering& layer_numbering() const override { return state_.layers; }
  const std::string& embedded_tokenizer() const override { return state_.tokenizer_json; }
  bool takes_attention_mask() const override { return state_.setting.takes_mask; }
  std::string forward_schema() const override { return state_.setting.schema; }
  int softmax_count() const override { return state_.program.observers + state_.program.attention; }
  int blockwise_attention_count() const override { return state_.program.attention; }
  // An exported program is one straight-line graph: each of its nodes runs once per call.
  bool attention_runs_once() const override { return true; }
  std::string dtype() const override { return state_.setting.dtype; }
  const c10::Device& device() const override { return state_.setting.device; }
  // Gradients run in headscan's interpreter, which a call that needs them switches to: empty when
  // it can run the program (its nodes are read once, when first asked).
  std::string gradient_limit() const override {
    if (!gradient_limit_) {
      const ModelZip zip(state_.path, kExportedExpected, kExportProgramAgain);
      const std::string limit = interpreter_limit(zip, "model");
      gradient_limit_ = limit.empty() ? limit
                                      : fmt::format("the exported program runs under NativeRT, which runs it in "
                                                    "inference mode, and headscan's interpreter, which "
                                                    "differentiates, cannot run it ({})",
                                                    limit);
    }
    return *gradient_limit_;
  }
  bool selects_logits_rows() const override { return state_.takes_rows; }

  ForwardOutput forward(const at::Tensor& ids, const at::Tensor* mask, const AttentionCallback& on_attention,
                        const HeadScales* scales, const AttentionEdit* edit, const at::Tensor* logits_rows) override {
    return run(ids, mask, on_attention, scales, edit, "model", logits_rows);
  }

  // The corpus pass calls this for every batch: the attention program, where the archive has one
  // and the model's program is not the one loaded (the shape's first call and the passes after the
  // corpus pass run the model's; switching costs a load of the weights, so the model's program,
  // once loaded again, serves the few calls that follow it whole). An archive without the
  // attention program runs whole: stopping it from the callback would be an exception through
  // NativeRT, which logs each.
  bool forward_attention(const at::Tensor& ids, const at::Tensor* mask, const AttentionCallback& on_attention) override {
    const bool cut = state_.program.attention_program &&
                     (state_.runner_program != "model" || !model_program_used_after_cut_);
    // Rows 0 and T - 1 (the rows' size is dynamic, from 2): the model's program computes their
    // logits only; the attention program does not read them.
    const at::Tensor ends = at::tensor(std::vector<std::int64_t>{0, ids.size(1) - 1}, at::kLong);
    run(ids, mask, on_attention, nullptr, nullptr, cut ? kAttentionProgram : "model", &ends);
    return true;
  }

 private:
  ForwardOutput run(const at::Tensor& ids, const at::Tensor* mask, const AttentionCallback& on_attention,
                    const HeadScales* scales, const AttentionEdit* edit, const std::string& program,
                    const at::Tensor* logits_rows) {
    TORCH_CHECK(ids.dim() == 2, "input ids must be [B,T], got ", ids.sizes());
    // NativeRT runs in inference mode: a gradient to the head scales needs the interpreter.
    if (scales != nullptr && c10::GradMode::is_enabled()) {
      for (const at::Tensor& scale : *scales) state_.interpreted |= scale.defined() && scale.requires_grad();
    }
    const bool interpreted = state_.interpreted;
    if (state_.runner_program != program || (interpreted && !state_.interpreter)) {
      if (program == "model" && state_.runner_program == kAttentionProgram) model_program_used_after_cut_ = true;
      state_.runner.reset();  // one program's weights in memory at a time
      state_.interpreter.reset();
      state_.runner_program.clear();
      if (interpreted) {
        state_.interpreter = load_interpreter(state_.path, program, state_.cast, state_.setting.device);
      } else {
        state_.runner = load_runner(state_.path, program);
      }
      state_.runner_program = program;
    }
    const std::int64_t batch = ids.size(0);
    const std::int64_t length = ids.size(1);
    const at::Tensor device_ids = ids.to(state_.setting.device);
    std::vector<c10::IValue> inputs{device_ids};
    if (state_.setting.takes_mask) {
      inputs.emplace_back(mask != nullptr ? mask->to(state_.setting.device) : at::ones_like(device_ids));
    }
    // A program that takes the rows is given those asked for (all when none are), at least two:
    // torch.export specializes a size of 1, so a single row goes twice and the copy is dropped.
    std::int64_t rows = length;
    if (state_.takes_rows) {
      at::Tensor wanted = logits_rows != nullptr ? logits_rows->to(at::kLong) : at::arange(length, at::kLong);
      rows = wanted.size(0);
      TORCH_CHECK(rows >= 1, "a forward call asks for the logits of no row");
      if (rows == 1) wanted = wanted.repeat({2});
      inputs.emplace_back(wanted.to(state_.setting.device));
    }
    // NativeRT runs the program in inference mode; what the callbacks keep (running sums, edits)
    // must stay ordinary tensors, which later code may update in place, computed with the caller's
    // grad mode (leaving inference mode would turn gradients on).
    const bool gradients = c10::GradMode::is_enabled();
    AttentionCallback observed;
    if (on_attention) {
      observed = [&on_attention, gradients](int layer, const at::Tensor& attention, std::int64_t first_row) {
        const c10::InferenceMode ordinary(false);
        const c10::AutoGradMode grad_mode(gradients);
        on_attention(layer, attention, first_row);
      };
    }
    AttentionEdit edited;
    if (edit != nullptr && *edit) {
      edited = [edit, gradients](int layer, const at::Tensor& attention, std::int64_t first_row) {
        const c10::InferenceMode ordinary(false);
        const c10::AutoGradMode grad_mode(gradients);
        return (*edit)(layer, attention, first_row);
      };
    }
    CaptureScope scope(batch, length, observed, scales, edit != nullptr ? &edited : nullptr, attention_block());
    const c10::IValue output = run_forward(state_.setting, scope, batch, length, [&] {
      if (!interpreted) return state_.runner->run(inputs, {});
      std::vector<at::Tensor> tensors;
      for (const c10::IValue& input : inputs) tensors.push_back(input.toTensor());
      return state_.interpreter->run(tensors);
    });
    note_attention_block_use(scope.block_use());
    if (program != "model") return ForwardOutput{};
    if (!state_.takes_rows) return ForwardOutput{logits_at(logits_of(output, batch, length), logits_rows)};
    std::shared_ptr<at::Tensor> logits = logits_of(output, batch, std::max<std::int64_t>(rows, 2));
    if (logits && rows == 1) *logits = logits->narrow(/*dim=*/1, 0, 1);
    return ForwardOutput{std::move(logits)};
  }

  ExportedState state_;
  bool model_program_used_after_cut_ = false;
  mutable std::optional<std::string> gradient_limit_;
};

LayerNumbering layers_of(const ExportedState& state) {
  const int maps = state.program.observers + state.program.attention;
  if (!state.metadata.layers) {
    LayerNumbering unknown;
    unknown.note = "the archive's headscan.json lists no layers, so heads are numbered by the order of their "
                   "attention maps; export the model with headscan export to number them as the model does";
    return unknown;
  }
  const LayerNumbering& layers = *state.metadata.layers;
  if (static_cast<int>(layers.attention_layers.size()) != maps) {
    throw InputError(fmt::format("{}:headscan.json: lists {} attention layer(s), but the program observes {} "
                                 "attention map(s); {}",
                                 state.path, layers.attention_layers.size(), maps, kExportProgramAgain));
  }
  return layers;
}

}  // namespace

std::unique_ptr<InstrumentedModel> load_exported_program(const std::string& path, const std::string& dtype,
                                                         const c10::Device& device, bool exact_device) {
  check_archive_file(path, kExportedFile);
  link_selection_ops();
  ExportedState state;
  state.path = path;
  {
    const ModelZip zip(path, kExportedExpected, kExportProgramAgain);
    if (!is_pt2_archive(zip)) {
      throw InputError(fmt::format("{}: expected {}, found a zip archive whose archive_format record does not say "
                                   "\"pt2\"; {}",
                                   path, kExportedExpected, kExportProgramAgain));
    }
    state.program = check_pt2_archive(zip);
    state.tokenizer_json = zip.read("extra/tokenizer.json", kMaxTokenizerBytes);
    state.metadata = parse_model_metadata(zip.read("extra/headscan.json", kMaxMetadataBytes), path + ":headscan.json");
  }
  const ExportedProgramInfo& program = state.program;
  // (input_ids[, attention_mask][, logits_rows]): the rows only by that name, as headscan export
  // writes them.
  state.takes_rows = program.inputs.size() >= 2 && program.inputs.back() == kLogitsRowsInput;
  const std::size_t token_inputs = program.inputs.size() - (state.takes_rows ? 1 : 0);
  if (token_inputs == 0 || token_inputs > 2 ||
      (token_inputs == 2 && program.inputs[1] == kLogitsRowsInput)) {
    throw InputError(fmt::format("{}: the program takes {} input(s) ({}); headscan calls it with int64 [batch, "
                                 "tokens] token ids, an attention mask and the rows whose logits it needs: export "
                                 "a module whose forward takes (input_ids[, attention_mask][, logits_rows])",
                                 path, program.inputs.size(), fmt::join(program.inputs, ", ")));
  }
  if (program.observers + program.attention == 0) {
    throw InputError(fmt::format("{}: the program has no headscan observer (headscan::observe or "
                                 "headscan::attention), so its attention cannot be seen; {}",
                                 path, kExportProgramAgain));
  }
  // Another dtype or device: NativeRT runs a program in the dtype and on the device it was exported
  // for, and its public interface can neither cast nor move it, so headscan's interpreter runs it.
  if (!dtype.empty() && dtype != program.dtype) state.cast = dtype_of(dtype);
  const c10::Device own(program.device);
  const bool same_device = own.type() == device.type() && (!device.has_index() || !own.has_index() ||
                                                           own.index() == device.index());
  const c10::Device run_device = same_device || !exact_device ? own : device;
  check_operators(path, program.operators);
  state.setting.dtype = state.cast ? dtype : program.dtype;
  state.setting.cast = state.cast.has_value();
  state.setting.dtype_remedy = fmt::format("--dtype cast the program's weights, and an operation met tensors of "
                                           "dtypes it does not mix; run it in its own dtype (without --dtype), or "
                                           "export it in {} (headscan export --dtype {})",
                                           dtype, dtype);
  state.setting.device = run_device;
  state.interpreted = state.cast.has_value() || (!same_device && exact_device);
  state.setting.takes_mask = token_inputs == 2;
  std::vector<std::string> arguments;
  for (const std::string& input : program.inputs) arguments.push_back(input + ": Tensor");
  state.setting.schema = fmt::format("forward({}) -> Tensor", fmt::join(arguments, ", "));
  state.layers = layers_of(state);
  if (state.interpreted) {
    state.interpreter = load_interpreter(path, "model", state.cast, run_device);
  } else {
    state.runner = load_runner(path, "model");
  }
  state.runner_program = "model";
  return std::make_unique<ExportedProgram>(std::move(state));
}

}  // namespace headscan
