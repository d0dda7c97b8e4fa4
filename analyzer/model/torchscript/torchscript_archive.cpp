#include "analyzer/model/torchscript_archive.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <zip.h>

#include "analyzer/errors.h"

namespace headscan {
namespace {

constexpr const char* kExport = kExportAgain;

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string zip_message(int code) {
  zip_error_t error;
  zip_error_init_with_code(&error, code);
  std::string message = zip_error_strerror(&error);
  zip_error_fini(&error);
  return message;
}

}  // namespace

struct TorchScriptArchive::Impl {
  std::string path;
  zip_t* zip = nullptr;
  std::string folder;                            // "gpt2/"
  std::map<std::string, std::pair<zip_uint64_t, std::uint64_t>> records;  // name → (index, size)
};

TorchScriptArchive::TorchScriptArchive(const std::string& path) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  int code = 0;
  impl_->zip = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code);
  if (impl_->zip == nullptr) {
    throw InputError(fmt::format("{}: expected a TorchScript archive (a zip file written by torch.jit.save), found "
                                 "a damaged zip archive ({}; its central directory is missing, cut off or "
                                 "inconsistent); copy the file again, or {}",
                                 path, zip_message(code), kExport));
  }
  const zip_int64_t entries = zip_get_num_entries(impl_->zip, 0);
  for (zip_int64_t i = 0; i < entries; ++i) {
    zip_stat_t stat;
    zip_stat_init(&stat);
    if (zip_stat_index(impl_->zip, static_cast<zip_uint64_t>(i), 0, &stat) != 0 || !(stat.valid & ZIP_STAT_NAME) ||
        !(stat.valid & ZIP_STAT_SIZE)) {
      continue;
    }
    const std::string name = stat.name;
    if (i == 0) {
      const std::size_t slash = name.find('/');
      if (slash == std::string::npos) {
        throw InputError(fmt::format("{}: expected a TorchScript archive, whose records lie in one top folder; its "
                                     "first record \"{}\" does not; {}",
                                     path, name, kExport));
      }
      impl_->folder = name.substr(0, slash + 1);
    }
    if (name.compare(0, impl_->folder.size(), impl_->folder) != 0) continue;
    impl_->records.emplace(name.substr(impl_->folder.size()), std::make_pair(static_cast<zip_uint64_t>(i), stat.size));
  }
}

TorchScriptArchive::~TorchScriptArchive() {
  if (impl_->zip != nullptr) zip_discard(impl_->zip);
}

bool TorchScriptArchive::has(const std::string& record) const { return impl_->records.count(record) != 0; }

std::uint64_t TorchScriptArchive::size(const std::string& record) const {
  const auto found = impl_->records.find(record);
  return found == impl_->records.end() ? 0 : found->second.second;
}

std::string TorchScriptArchive::read(const std::string& record, std::uint64_t limit) const {
  const auto found = impl_->records.find(record);
  if (found == impl_->records.end()) return {};
  const std::uint64_t size = found->second.second;
  if (size > limit) {
    throw InputError(fmt::format("{}: record {} is {} bytes, more than the {} bytes headscan reads for it; {}",
                                 impl_->path, record, size, limit,
                                 record == "extra/headscan.json" ? "headscan.json holds a few settings: fix it"
                                                                 : "check where this archive comes from"));
  }
  std::string bytes(size, '\0');
  zip_file_t* file = zip_fopen_index(impl_->zip, found->second.first, 0);
  const zip_int64_t got = file == nullptr ? -1 : zip_fread(file, bytes.data(), size);
  if (file != nullptr) zip_fclose(file);
  if (got < 0 || static_cast<std::uint64_t>(got) != size) {
    throw InputError(fmt::format("{}: record {} cannot be read (damaged or cut off); copy the file again, or {}",
                                 impl_->path, record, kExport));
  }
  return bytes;
}

void TorchScriptArchive::check() const {
  const std::string& path = impl_->path;
  const bool has_code = std::any_of(impl_->records.begin(), impl_->records.end(),
                                    [](const auto& record) { return record.first.rfind("code/", 0) == 0; });
  if (!has_code || !has("data.pkl")) {
    throw InputError(fmt::format("{}: expected a TorchScript archive written by torch.jit.save, found a zip archive "
                                 "without {}; a file from torch.save (a state_dict or pickled nn.Module) is not "
                                 "TorchScript: {}",
                                 path, has_code ? "data.pkl" : "code/ (the module's TorchScript code)", kExport));
  }
  if (size("extra/headscan.json") > kMaxMetadataBytes) read("extra/headscan.json", kMaxMetadataBytes);
  if (size("extra/tokenizer.json") > kMaxTokenizerBytes) read("extra/tokenizer.json", kMaxTokenizerBytes);

  for (const auto& record : impl_->records) {
    const std::string& name = record.first;
    if (name.rfind("code/", 0) != 0) continue;
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
