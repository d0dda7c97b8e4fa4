#include "analyzer/model/model.h"

#include <filesystem>
#include <optional>

#include <fmt/format.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/version.h>

#include "analyzer/errors.h"
#include "analyzer/model/exported/exported_model.h"
#include "analyzer/model/exported/pt2_archive.h"
#include "analyzer/model/model_zip.h"
#include "analyzer/model/torchscript/torchscript_model.h"

namespace headscan {
namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The format of the zip at `path` when it can be told: true for a .pt2 package, false for another
// zip, nullopt when the file is not a whole zip (the loader of the format its name suggests says
// what is wrong).
std::optional<bool> is_exported_program(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error) || !starts_like_zip(path)) return std::nullopt;
  try {
    return is_pt2_archive(ModelZip(path, kExportedExpected, kExportProgramAgain));
  } catch (const InputError&) {
    return std::nullopt;
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

InstrumentedModel::~InstrumentedModel() = default;

void InstrumentedModel::note_attention_block_use(const AttentionBlockUse& use) {
  const AttentionBlockUse& kept = attention_block_use_;
  if (use.length > kept.length || (use.length == kept.length && use.block_bytes > kept.block_bytes)) {
    attention_block_use_ = use;
  }
}

bool InstrumentedModel::forward_attention(const at::Tensor&, const at::Tensor*, const AttentionCallback&) {
  return false;
}

std::string InstrumentedModel::capture_method() const { return softmax_count() > 0 ? "graph" : "outputs"; }

std::unique_ptr<InstrumentedModel> InstrumentedModel::load(const std::string& path, const std::string& dtype,
                                                         const c10::Device& device, bool exact_device) {
  // By content: a .pt2 package is an exported program whatever its name, any other zip a TorchScript
  // archive (torch.jit.save's, also when named .pt2).
  const std::optional<bool> exported = is_exported_program(path);
  if (exported.value_or(ends_with(path, ".pt2"))) return load_exported_program(path, dtype, device, exact_device);
  return load_torchscript_model(path, dtype, device);
}

}  // namespace headscan
