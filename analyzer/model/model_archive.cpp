#include "analyzer/model/model_archive.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "analyzer/errors.h"
#include "analyzer/model/torchscript_archive.h"

namespace headscan {
namespace {

bool starts_like_zip(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char signature[4] = {};
  in.read(signature, sizeof signature);
  return in.gcount() == 4 && std::string(signature, 4) == std::string("PK\x03\x04", 4);
}

}  // namespace

ModelArchiveExtras read_model_extras(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    throw InputError(fmt::format("{}: model file not found; give the path of a TorchScript archive saved with "
                                 "torch.jit.save, or --tokenizer FILE",
                                 shown_path(path)));
  }
  reject_pipe_or_device(path, "expected a TorchScript archive");
  if (std::filesystem::is_directory(path) || !starts_like_zip(path)) {
    throw InputError(fmt::format("{}: expected a TorchScript archive (a zip file written by torch.jit.save), "
                                 "found {}; give the model file, or a tokenizer with --tokenizer FILE",
                                 path, std::filesystem::is_directory(path) ? "a directory" : "another kind of file"));
  }
  const TorchScriptArchive archive(path);
  return {archive.read("extra/tokenizer.json", kMaxTokenizerBytes), archive.read("extra/headscan.json", kMaxMetadataBytes)};
}

}  // namespace headscan
