#pragma once
// The pickles of a TorchScript archive (data.pkl, constants.pkl), run far enough to find the
// tensor storages they refer to, without LibTorch (analyzer/model/torchscript/torchscript_archive.h checks
// every storage against its record).

#include <cstdint>
#include <string>
#include <vector>

namespace headscan {

// What a damaged archive's messages tell the user to do.
inline constexpr const char* kExportAgain =
    "export the model again with torch.jit.trace or torch.jit.script and torch.jit.save";

// One tensor storage a pickle refers to: torch.jit.save stores its bytes in the record
// `<prefix><key>`, and LibTorch reads `numel × itemsize` bytes of it.
struct PickledStorage {
  std::string key;
  std::string type;  // "FloatStorage", …
  std::int64_t numel = 0;
  std::int64_t itemsize = 0;
};

// Runs the pickle `bytes` (protocol 2, the opcodes LibTorch's unpickler reads) far enough to find
// every storage it refers to, and checks that every tensor it rebuilds lies within its storage.
// Throws InputError naming `origin` and the byte offset when the pickle is damaged or a tensor
// reaches beyond its storage. Builds no objects: deep or huge pickles cost linear time and memory.
std::vector<PickledStorage> scan_pickle(const std::string& bytes, const std::string& origin);

}  // namespace headscan
