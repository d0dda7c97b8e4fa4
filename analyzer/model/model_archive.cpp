#include "analyzer/model/model_archive.h"

#include <filesystem>
#include <fstream>

#include <caffe2/serialize/inline_container.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/errors.h"

namespace headscan {
namespace {

std::string record_text(caffe2::serialize::PyTorchStreamReader& reader, const std::string& name) {
  if (!reader.hasRecord(name)) return {};
  const auto [data, size] = reader.getRecord(name);
  return std::string(static_cast<const char*>(data.get()), size);
}

bool starts_like_zip(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char signature[4] = {};
  in.read(signature, sizeof signature);
  return in.gcount() == 4 && std::string(signature, 4) == std::string("PK\x03\x04", 4);
}

}  // namespace

ModelArchiveExtras read_model_extras(const std::string& path) {
  if (!std::filesystem::exists(path)) {
    throw InputError(fmt::format("{}: model file not found; give the path of a TorchScript archive saved with "
                                 "torch.jit.save, or --tokenizer FILE",
                                 path));
  }
  if (std::filesystem::is_directory(path) || !starts_like_zip(path)) {
    throw InputError(fmt::format("{}: expected a TorchScript archive (a zip file written by torch.jit.save), "
                                 "found {}; give the model file, or a tokenizer with --tokenizer FILE",
                                 path, std::filesystem::is_directory(path) ? "a directory" : "another kind of file"));
  }
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    return {record_text(reader, "extra/tokenizer.json"), record_text(reader, "extra/headscan.json")};
  } catch (const c10::Error& e) {
    throw InputError(fmt::format("{}: expected a TorchScript archive written by torch.jit.save, but LibTorch cannot "
                                 "read it ({})",
                                 path, e.what_without_backtrace()));
  }
}

}  // namespace headscan
