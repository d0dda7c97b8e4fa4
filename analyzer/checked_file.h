#pragma once
// Every file headscan writes goes through CheckedFile: each write, the flush, the sync to the disk
// and the close are checked, so that a full disk (or any other write error) is an exception naming
// the file, never a short file taken for a whole one. The files are written in a staging directory
// (OutputDirectory) or as a temporary beside their target (OutputFile) and put in place only when
// whole, so an earlier file or report is left as it was.

#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <string_view>

namespace headscan {

class CheckedFile {
 public:
  // Creates `path`, or empties it. Throws std::runtime_error "PATH: cannot write (reason)".
  explicit CheckedFile(std::filesystem::path path);
  ~CheckedFile();  // closes a file left unfinished by an exception, without checks
  CheckedFile(const CheckedFile&) = delete;
  CheckedFile& operator=(const CheckedFile&) = delete;

  // Throws on the first error.
  void write(const void* data, std::size_t size);
  void write(std::string_view text) { write(text.data(), text.size()); }
  // For a C library's write callback (libpng), which must not throw: false after an error, which
  // close() then throws.
  bool try_write(const void* data, std::size_t size) noexcept;
  // Flushes, syncs and closes; throws the first error of the file's writes or of these steps.
  void close();

  const std::filesystem::path& path() const { return path_; }

 private:
  [[noreturn]] void fail(int error) const;

  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
  int error_ = 0;  // errno of the first failed write
};

// `text` as the whole content of `path`, through CheckedFile.
void write_checked_file(const std::filesystem::path& path, std::string_view text);

// A copy of the file `from` as `to`, through CheckedFile; a read error names `from`.
void copy_checked_file(const std::filesystem::path& from, const std::filesystem::path& to);

}  // namespace headscan
