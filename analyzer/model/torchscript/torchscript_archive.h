#pragma once
// A TorchScript archive (the zip torch.jit.save writes), read and checked without LibTorch.
// LibTorch trusts an archive's records: it reads a tensor's storage size from the pickle and never
// compares it with the record that holds the bytes, so a short record is read out of bounds, and
// it reads extra files whole whatever their size. headscan checks these before LibTorch loads the
// archive (README, "Trust model"): the zip is whole, the records TorchScript needs are there, the
// pickles parse, every tensor fits its storage and every storage its record, and the extra files
// are of sane size.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "analyzer/model/model_metadata.h"  // kMaxMetadataBytes, the bound on extra/headscan.json
#include "analyzer/model/pickle_scan.h"

namespace headscan {

// Bounds on what an archive's records may weigh before headscan reads them.
inline constexpr std::uint64_t kMaxTokenizerBytes = 256ull << 20;  // extra/tokenizer.json
inline constexpr std::uint64_t kMaxPickleBytes = 256ull << 20;     // data.pkl, constants.pkl, code/…

class TorchScriptArchive {
 public:
  // Opens the zip and lists its records. Throws InputError when the file is not a whole zip
  // archive or its records do not share one top folder (as torch.jit.save writes them).
  explicit TorchScriptArchive(const std::string& path);
  ~TorchScriptArchive();
  TorchScriptArchive(const TorchScriptArchive&) = delete;
  TorchScriptArchive& operator=(const TorchScriptArchive&) = delete;

  // Record names are relative to the archive's top folder ("data.pkl", "extra/headscan.json").
  bool has(const std::string& record) const;
  std::uint64_t size(const std::string& record) const;  // 0 when absent
  // The record's bytes; InputError when it is larger than `limit` (naming `limit_reason`) or
  // cannot be read. Empty when absent.
  std::string read(const std::string& record, std::uint64_t limit) const;

  // The checks above, for everything LibTorch will read. Throws InputError naming the archive,
  // the record and what to do.
  void check() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};


}  // namespace headscan
