#pragma once
// A TorchScript archive (the zip torch.jit.save writes), read and checked without LibTorch.
// LibTorch trusts an archive's records: it reads a tensor's storage size from the pickle and never
// compares it with the record that holds the bytes, so a short record is read out of bounds, and
// it reads extra files whole whatever their size. headscan checks these before LibTorch loads the
// archive (README, "Trust model"): the zip is whole, the records TorchScript needs are there, the
// pickles parse, every tensor fits its storage and every storage its record, and the extra files
// are of sane size.

#include <cstdint>
#include <string>

#include "analyzer/model/model_metadata.h"  // kMaxMetadataBytes, the bound on extra/headscan.json
#include "analyzer/model/model_zip.h"
#include "analyzer/model/torchscript/pickle_scan.h"

namespace headscan {

inline constexpr std::uint64_t kMaxPickleBytes = 256ull << 20;  // data.pkl, constants.pkl, code/…

// What the messages say was expected of a TorchScript archive.
inline constexpr const char* kTorchScriptExpected = "a TorchScript archive (a zip file written by torch.jit.save)";

class TorchScriptArchive : public ModelZip {
 public:
  // Opens the zip (model_zip.h).
  explicit TorchScriptArchive(const std::string& path);

  // The checks above, for everything LibTorch will read. Throws InputError naming the archive,
  // the record and what to do.
  void check() const;
};

}  // namespace headscan
