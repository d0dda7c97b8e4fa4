#include "analyzer/model/model_archive.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "analyzer/errors.h"
#include "analyzer/model/model_metadata.h"
#include "analyzer/model/model_zip.h"

namespace headscan {

ModelArchiveExtras read_model_extras(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    throw InputError(fmt::format("{}: model file not found; give the path of a TorchScript archive saved with "
                                 "torch.jit.save or of an exported program (.pt2), or --tokenizer FILE",
                                 shown_path(path)));
  }
  reject_pipe_or_device(path, "expected a TorchScript archive or an exported program (.pt2)");
  if (std::filesystem::is_directory(path) || !starts_like_zip(path)) {
    throw InputError(fmt::format("{}: expected a TorchScript archive (a zip file written by torch.jit.save) or an "
                                 "exported program (.pt2, written by headscan export), found {}; give the model "
                                 "file, or a tokenizer with --tokenizer FILE",
                                 path, std::filesystem::is_directory(path) ? "a directory" : "another kind of file"));
  }
  const ModelZip archive(path, "a TorchScript archive (a zip file written by torch.jit.save) or an exported program",
                        "export the model again with torch.jit.save or headscan export");
  return {archive.read("extra/tokenizer.json", kMaxTokenizerBytes), archive.read("extra/headscan.json", kMaxMetadataBytes)};
}

}  // namespace headscan
