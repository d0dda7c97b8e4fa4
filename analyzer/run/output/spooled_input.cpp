#include "analyzer/run/output/spooled_input.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "analyzer/errors.h"

namespace headscan {

SpooledInput::SpooledInput() {
  const char* directory = std::getenv("TMPDIR");
  path_ = fmt::format("{}/headscan-stdin-XXXXXX", directory != nullptr && *directory != '\0' ? directory : "/tmp");
  const int fd = mkstemp(path_.data());
  if (fd < 0) {
    throw std::runtime_error(fmt::format("cannot create a temporary file for standard input in {} ({})", path_,
                                         std::strerror(errno)));
  }
  std::vector<char> buffer(1 << 20);
  for (;;) {
    const ssize_t count = read(STDIN_FILENO, buffer.data(), buffer.size());
    if (count == 0) break;
    if (count < 0 && errno == EINTR) continue;
    bool written = count > 0;
    for (ssize_t done = 0; written && done < count;) {
      const ssize_t step = write(fd, buffer.data() + done, static_cast<std::size_t>(count - done));
      if (step < 0 && errno == EINTR) continue;
      written = step > 0;
      done += step > 0 ? step : 0;
    }
    if (!written) {
      const std::string why = std::strerror(errno);
      close(fd);
      unlink(path_.c_str());
      throw std::runtime_error(fmt::format("cannot copy standard input to {} ({})", path_, why));
    }
  }
  close(fd);
}

SpooledInput::~SpooledInput() { unlink(path_.c_str()); }

std::string name_path(std::string text, const std::string& path, std::string_view name) {
  if (path.empty()) return text;
  for (std::size_t at = text.find(path); at != std::string::npos; at = text.find(path, at + name.size())) {
    text.replace(at, path.size(), name);
  }
  return text;
}

std::string SpooledInput::named(std::string text) const {
  return name_path(std::move(text), path_, "- (standard input)");
}

void SpooledInput::rethrow_named() const {
  try {
    throw;
  } catch (const Interrupted&) {
    throw;
  } catch (const InputError& e) {
    throw InputError(named(e.what()));
  } catch (const std::exception& e) {
    throw std::runtime_error(named(e.what()));
  }
}

}  // namespace headscan
