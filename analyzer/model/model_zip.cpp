#include "analyzer/model/model_zip.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <zip.h>

#include "analyzer/errors.h"

namespace headscan {
namespace {

std::string zip_message(int code) {
  zip_error_t error;
  zip_error_init_with_code(&error, code);
  std::string message = zip_error_strerror(&error);
  zip_error_fini(&error);
  return message;
}

constexpr std::string_view kZipSignature = "PK\x03\x04";      // a local file header: the first file
constexpr std::string_view kEmptyZipSignature = "PK\x05\x06";  // end of central directory, no files

std::string first_bytes(const std::string& path, std::size_t count) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes(count, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(count));
  bytes.resize(static_cast<std::size_t>(in.gcount()));
  return bytes;
}

// What a file that is not a zip archive holds, for the error message.
std::string describe_non_zip(const std::string& start) {
  if (start.empty()) return "an empty file";
  if (start.rfind(kEmptyZipSignature, 0) == 0) return "an empty zip archive (no files inside)";
  std::string escaped;
  for (const char c : start) {
    const auto byte = static_cast<unsigned char>(c);
    escaped += byte >= 0x20 && byte < 0x7f && c != '\\' ? std::string(1, c) : fmt::format("\\x{:02x}", byte);
  }
  return fmt::format("a file starting with \"{}\" instead of the zip signature \"PK\\x03\\x04\"", escaped);
}

}  // namespace

bool starts_like_zip(const std::string& path) { return first_bytes(path, 4) == kZipSignature; }

void check_archive_file(const std::string& path, const ArchiveKind& kind) {
  if (!std::filesystem::exists(path)) {
    throw InputError(fmt::format("{}: model file not found; give the path of {} {}", path, kind.name, kind.written));
  }
  if (std::filesystem::is_directory(path)) {
    throw InputError(fmt::format("{}: expected {} file, found a directory", path, kind.name));
  }
  reject_pipe_or_device(path, fmt::format("expected {}", kind.name));
  if (const std::string start = first_bytes(path, 8); start.rfind(kZipSignature, 0) != 0) {
    throw InputError(fmt::format("{}: expected {} ({}), found {}; {}", path, kind.name, kind.zip,
                                 describe_non_zip(start), kind.remedy));
  }
}

struct ModelZip::Impl {
  std::string path;
  std::string remedy;
  zip_t* zip = nullptr;
  std::string folder;                                                     // "gpt2/"
  std::map<std::string, std::pair<zip_uint64_t, std::uint64_t>> records;  // name → (index, size)
};

ModelZip::ModelZip(const std::string& path, std::string expected, std::string remedy)
    : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  impl_->remedy = std::move(remedy);
  int code = 0;
  impl_->zip = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code);
  if (impl_->zip == nullptr) {
    throw InputError(fmt::format("{}: expected {}, found a damaged zip archive ({}; its central directory is "
                                 "missing, cut off or inconsistent); copy the file again, or {}",
                                 path, expected, zip_message(code), impl_->remedy));
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
        zip_discard(impl_->zip);
        throw InputError(fmt::format("{}: expected {}, whose records lie in one top folder; its first record "
                                     "\"{}\" does not; {}",
                                     path, expected, name, impl_->remedy));
      }
      impl_->folder = name.substr(0, slash + 1);
    }
    if (name.compare(0, impl_->folder.size(), impl_->folder) != 0) continue;
    impl_->records.emplace(name.substr(impl_->folder.size()), std::make_pair(static_cast<zip_uint64_t>(i), stat.size));
  }
}

ModelZip::~ModelZip() {
  if (impl_->zip != nullptr) zip_discard(impl_->zip);
}

const std::string& ModelZip::path() const { return impl_->path; }
const std::string& ModelZip::remedy() const { return impl_->remedy; }

bool ModelZip::has(const std::string& record) const { return impl_->records.count(record) != 0; }

std::uint64_t ModelZip::size(const std::string& record) const {
  const auto found = impl_->records.find(record);
  return found == impl_->records.end() ? 0 : found->second.second;
}

std::vector<std::string> ModelZip::names(const std::string& prefix) const {
  std::vector<std::string> found;
  for (auto record = impl_->records.lower_bound(prefix);
       record != impl_->records.end() && record->first.compare(0, prefix.size(), prefix) == 0; ++record) {
    found.push_back(record->first);
  }
  return found;
}

std::string ModelZip::read(const std::string& record, std::uint64_t limit) const {
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
                                 impl_->path, record, impl_->remedy));
  }
  return bytes;
}

}  // namespace headscan
