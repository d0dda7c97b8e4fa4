#pragma once
// A model archive's zip, read without LibTorch: both formats headscan reads are zips whose records
// lie in one top folder (torch.jit.save's TorchScript archive, torch.export's .pt2 package). The
// checks of each format (torchscript/torchscript_archive.h, exported/pt2_archive.h) read its
// records through this before LibTorch opens the file.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace headscan {

// The bound on extra/tokenizer.json, in either format (kMaxMetadataBytes bounds headscan.json).
inline constexpr std::uint64_t kMaxTokenizerBytes = 256ull << 20;

// How the messages about a model file name its format.
struct ArchiveKind {
  const char* name;     // "a TorchScript archive"
  const char* written;  // "saved with torch.jit.save"
  const char* zip;      // "a zip file written by torch.jit.save"
  const char* remedy;   // "export the model with torch.jit.trace …"
};

// Throws InputError when `path` is missing, a directory, a pipe or device, or a file that does not
// start with the zip signature, naming what it is instead and `kind`'s remedy.
void check_archive_file(const std::string& path, const ArchiveKind& kind);

// Whether the file at `path` starts with a zip's local file header.
bool starts_like_zip(const std::string& path);

class ModelZip {
 public:
  // Opens the zip and lists its records. Throws InputError when the file is not a whole zip
  // archive or its records do not share one top folder; `expected` names the format the messages
  // say was expected ("a TorchScript archive (a zip file written by torch.jit.save)") and
  // `remedy` what to do ("export the model again with …").
  ModelZip(const std::string& path, std::string expected, std::string remedy);
  ~ModelZip();
  ModelZip(const ModelZip&) = delete;
  ModelZip& operator=(const ModelZip&) = delete;

  const std::string& path() const;
  const std::string& remedy() const;
  // Record names are relative to the archive's top folder ("data.pkl", "extra/headscan.json").
  bool has(const std::string& record) const;
  std::uint64_t size(const std::string& record) const;  // 0 when absent
  // The records whose names start with `prefix` ("code/"), in name order.
  std::vector<std::string> names(const std::string& prefix) const;
  // The record's bytes; InputError when it is larger than `limit` or cannot be read. Empty when
  // absent.
  std::string read(const std::string& record, std::uint64_t limit) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace headscan
