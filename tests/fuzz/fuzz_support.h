#pragma once
// Shared by the fuzz targets (README, "Fuzzing and limits"). Each target feeds one parser of untrusted
// input and lets every exception other than InputError escape: an uncaught exception aborts, and
// libFuzzer reports it as a crash, because headscan must answer bad input with exit 2 (InputError),
// never exit 1 or a signal.

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace headscan::fuzz {

// An in-memory file with a path ("/proc/self/fd/N"), for readers that take paths.
class MemoryFile {
 public:
  explicit MemoryFile(std::string_view contents) : fd_(memfd_create("headscan-fuzz", 0)) {
    if (fd_ < 0) throw std::runtime_error("memfd_create failed");
    for (std::size_t written = 0; written < contents.size();) {
      const ssize_t n = write(fd_, contents.data() + written, contents.size() - written);
      if (n <= 0) throw std::runtime_error("write to memfd failed");
      written += static_cast<std::size_t>(n);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemoryFile() { close(fd_); }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;

  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

// The parts of `data` between NUL bytes (at least one part, maybe empty).
inline std::vector<std::string_view> split_at_nul(const std::uint8_t* data, std::size_t size, std::size_t max_parts) {
  std::vector<std::string_view> parts;
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  while (parts.size() + 1 < max_parts) {
    const std::size_t nul = rest.find('\0');
    if (nul == std::string_view::npos) break;
    parts.push_back(rest.substr(0, nul));
    rest.remove_prefix(nul + 1);
  }
  parts.push_back(rest);
  return parts;
}

// The lines of `text` (split at '\n').
inline std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  while (true) {
    const std::size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

// A broken invariant: abort with a message (libFuzzer saves the input).
[[noreturn]] inline void invariant_failed(const char* what) {
  std::fprintf(stderr, "headscan fuzz: invariant broken: %s\n", what);
  std::abort();
}

#define HEADSCAN_FUZZ_CHECK(condition) \
  do {                                 \
    if (!(condition)) ::headscan::fuzz::invariant_failed(#condition); \
  } while (false)

}  // namespace headscan::fuzz
