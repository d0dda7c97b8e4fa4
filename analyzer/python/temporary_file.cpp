#include "analyzer/python/temporary_file.h"

#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace headscan {

int create_temporary_file(const char* stem, const char* suffix, std::string& path) {
  const char* directory = std::getenv("TMPDIR");
  path = fmt::format("{}/headscan-{}-XXXXXX{}", directory != nullptr && *directory != '\0' ? directory : "/tmp", stem,
                     suffix);
  const int fd = mkstemps(path.data(), static_cast<int>(std::strlen(suffix)));
  if (fd < 0) throw std::runtime_error(fmt::format("cannot create a temporary file {} ({})", path, std::strerror(errno)));
  return fd;
}

StandIn::StandIn(const char* stem, const char* suffix) { close(create_temporary_file(stem, suffix, path_)); }

StandIn::~StandIn() { unlink(path_.c_str()); }

}  // namespace headscan
