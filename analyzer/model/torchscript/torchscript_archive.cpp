#include "analyzer/model/torchscript/torchscript_archive.h"

#include <vector>

#include <fmt/format.h>

#include "analyzer/errors.h"

namespace headscan {
namespace {

constexpr const char* kExport = kExportAgain;

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

TorchScriptArchive::TorchScriptArchive(const std::string& path) : ModelZip(path, kTorchScriptExpected, kExport) {}

void TorchScriptArchive::check() const {
  const std::string& path = this->path();
  const std::vector<std::string> code = names("code/");
  const bool has_code = !code.empty();
  if (!has_code || !has("data.pkl")) {
    throw InputError(fmt::format("{}: expected a TorchScript archive written by torch.jit.save, found a zip archive "
                                 "without {}; a file from torch.save (a state_dict or pickled nn.Module) is not "
                                 "TorchScript: {}",
                                 path, has_code ? "data.pkl" : "code/ (the module's TorchScript code)", kExport));
  }
  if (size("extra/headscan.json") > kMaxMetadataBytes) read("extra/headscan.json", kMaxMetadataBytes);
  if (size("extra/tokenizer.json") > kMaxTokenizerBytes) read("extra/tokenizer.json", kMaxTokenizerBytes);

  for (const std::string& name : code) {
    const std::string bytes = read(name, kMaxPickleBytes);
    const std::string origin = fmt::format("{}: record {}", path, name);
    if (ends_with(name, ".pkl") || ends_with(name, ".debug_pkl")) {
      scan_pickle(bytes, origin);
    } else if (bytes.find('\0') != std::string::npos) {
      throw InputError(fmt::format("{}: TorchScript code holds a NUL byte at byte {}: the archive is damaged; {}",
                                   origin, bytes.find('\0'), kExport));
    }
  }
  for (const std::string archive : {"data", "constants"}) {
    const std::string pickle = archive + ".pkl";
    if (!has(pickle)) continue;
    const std::string origin = fmt::format("{}: record {}", path, pickle);
    for (const PickledStorage& storage : scan_pickle(read(pickle, kMaxPickleBytes), origin)) {
      if (storage.numel == 0) continue;  // LibTorch reads no record then
      const std::string record = archive + "/" + storage.key;
      const std::uint64_t needed = static_cast<std::uint64_t>(storage.numel) * static_cast<std::uint64_t>(storage.itemsize);
      if (!has(record)) {
        throw InputError(fmt::format("{}: {} refers to tensor storage {}, which the archive lacks: the archive is "
                                     "damaged; {}",
                                     path, pickle, record, kExport));
      }
      if (size(record) < needed) {
        throw InputError(fmt::format("{}: record {} holds {} bytes, but {} says its {} storage of {} elements "
                                     "needs {}: the archive is damaged or cut; {}",
                                     path, record, size(record), pickle, storage.type, storage.numel, needed,
                                     kExport));
      }
    }
  }
}

}  // namespace headscan
