#include "analyzer/errors.h"

#include <sys/stat.h>

#include <exception>

namespace headscan {

void reject_pipe_or_device(const std::string& path, const std::string& expected) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0) return;
  const char* found = S_ISFIFO(status.st_mode)  ? "a pipe (FIFO)"
                      : S_ISSOCK(status.st_mode) ? "a socket"
                      : S_ISCHR(status.st_mode)  ? "a character device"
                                                 : nullptr;
  if (found == nullptr) return;
  throw InputError(shown_path(path) + ": " + expected + ", found " + found +
                   ", which headscan cannot read more than once or from the start again; write its contents to a "
                   "file and give that file");
}

std::string shown_path(std::string_view path) {
  if (path.size() <= kShownPathBytes) return std::string(path);
  std::size_t cut = kShownPathBytes;
  while (cut > 0 && (static_cast<unsigned char>(path[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  return std::string(path.substr(0, cut)) + "\xE2\x80\xA6 (" + std::to_string(path.size()) + " bytes)";
}

void rethrow_with_context(const std::string& context) {
  try {
    throw;
  } catch (const Interrupted&) {
    throw;
  } catch (const InputError& e) {
    throw InputError(context + e.what());
  } catch (const std::exception& e) {
    throw std::runtime_error(context + e.what());
  }
}

}  // namespace headscan
