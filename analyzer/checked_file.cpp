#include "analyzer/checked_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace headscan {

CheckedFile::CheckedFile(std::filesystem::path path) : path_(std::move(path)) {
  file_ = std::fopen(path_.c_str(), "wb");
  if (file_ == nullptr) fail(errno);
}

CheckedFile::~CheckedFile() {
  if (file_ != nullptr) std::fclose(file_);
}

bool CheckedFile::try_write(const void* data, std::size_t size) noexcept {
  if (error_ != 0 || file_ == nullptr) return false;
  if (size > 0 && std::fwrite(data, 1, size, file_) != size) {
    error_ = errno != 0 ? errno : EIO;
    return false;
  }
  return true;
}

void CheckedFile::write(const void* data, std::size_t size) {
  if (!try_write(data, size)) fail(error_ != 0 ? error_ : EBADF);
}

// A full disk shows at a write, at the flush of the last buffer, or (network and some other file
// systems) only at fsync or close: each is checked. fsync's EINVAL is a file system that cannot
// sync (nothing was lost).
void CheckedFile::close() {
  if (file_ == nullptr) fail(EBADF);
  std::FILE* file = std::exchange(file_, nullptr);
  int error = error_;
  if (error == 0 && std::fflush(file) != 0) error = errno;
  if (error == 0 && ::fsync(::fileno(file)) != 0 && errno != EINVAL && errno != ENOTSUP) error = errno;
  if (std::fclose(file) != 0 && error == 0) error = errno;
  if (error != 0) fail(error);
}

void CheckedFile::fail(int error) const {
  throw std::runtime_error(path_.string() + ": cannot write (" + std::strerror(error) + ")");
}

void write_checked_file(const std::filesystem::path& path, std::string_view text) {
  CheckedFile file(path);
  file.write(text);
  file.close();
}

void copy_checked_file(const std::filesystem::path& from, const std::filesystem::path& to) {
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> in(std::fopen(from.c_str(), "rb"), std::fclose);
  const auto read_failed = [&] {
    return std::runtime_error(from.string() + ": cannot read (" + std::strerror(errno) + ")");
  };
  if (!in) throw read_failed();
  CheckedFile out(to);
  std::vector<char> buffer(std::size_t{1} << 16);
  std::size_t size = 0;
  while ((size = std::fread(buffer.data(), 1, buffer.size(), in.get())) > 0) out.write(buffer.data(), size);
  if (std::ferror(in.get()) != 0) throw read_failed();
  out.close();
}

}  // namespace headscan
