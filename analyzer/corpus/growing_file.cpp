#include "analyzer/corpus/growing_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace headscan {

namespace {

constexpr std::size_t kBufferBytes = std::size_t{64} << 10;

std::mutex& registry_mutex() {
  static std::mutex mutex;
  return mutex;
}

struct Registered {
  std::string name;
  std::shared_ptr<FileExtender> extend;
};

std::map<std::string, Registered>& registry() {
  static std::map<std::string, Registered> files;
  return files;
}

}  // namespace

GrowingFile::GrowingFile(std::string path, std::string name, FileExtender extend) : path_(std::move(path)) {
  // One extension at a time, whichever reader asks.
  auto serialised = std::make_shared<FileExtender>(
      [extend = std::move(extend), mutex = std::make_shared<std::mutex>()] {
        const std::lock_guard<std::mutex> lock(*mutex);
        return extend();
      });
  const std::lock_guard<std::mutex> lock(registry_mutex());
  registry()[path_] = Registered{std::move(name), std::move(serialised)};
}

GrowingFile::~GrowingFile() {
  const std::lock_guard<std::mutex> lock(registry_mutex());
  registry().erase(path_);
}

bool is_growing_file(const std::string& path) {
  const std::lock_guard<std::mutex> lock(registry_mutex());
  return registry().count(path) != 0;
}

std::string growing_file_name(const std::string& path) {
  const std::lock_guard<std::mutex> lock(registry_mutex());
  const auto found = registry().find(path);
  return found == registry().end() ? std::string() : found->second.name;
}

std::unique_ptr<std::streambuf> open_growing_file(const std::string& path) {
  std::shared_ptr<FileExtender> extend;
  {
    const std::lock_guard<std::mutex> lock(registry_mutex());
    const auto found = registry().find(path);
    if (found == registry().end()) return nullptr;
    extend = found->second.extend;
  }
  return std::make_unique<GrowingFileBuffer>(path, std::move(extend));
}

GrowingFileBuffer::GrowingFileBuffer(const std::string& path, std::shared_ptr<FileExtender> extend)
    : extend_(std::move(extend)), buffer_(kBufferBytes) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw std::runtime_error(fmt::format("cannot open {} ({})", path, std::strerror(errno)));
}

GrowingFileBuffer::~GrowingFileBuffer() { ::close(fd_); }

GrowingFileBuffer::int_type GrowingFileBuffer::underflow() {
  if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
  for (;;) {
    const ssize_t count = ::read(fd_, buffer_.data(), buffer_.size());
    if (count > 0) {
      setg(buffer_.data(), buffer_.data(), buffer_.data() + count);
      return traits_type::to_int_type(*gptr());
    }
    if (count < 0 && errno == EINTR) continue;
    // The reader's stream goes bad, and TextLineReader says that reading failed.
    if (count < 0) throw std::runtime_error(std::strerror(errno));
    if (!(*extend_)()) return traits_type::eof();
  }
}

}  // namespace headscan
