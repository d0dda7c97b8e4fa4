#include "analyzer/run/output/output_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <stdexcept>

#include <fmt/format.h>

#include "analyzer/errors.h"

namespace headscan {
namespace {

namespace fs = std::filesystem;

// What a path that is not a regular file is, for messages.
const char* kind_of(const struct stat& status) {
  if (S_ISDIR(status.st_mode)) return "a directory";
  if (S_ISCHR(status.st_mode)) return "a character device";
  if (S_ISBLK(status.st_mode)) return "a block device";
  if (S_ISFIFO(status.st_mode)) return "a pipe (FIFO)";
  if (S_ISSOCK(status.st_mode)) return "a socket";
  return "not a regular file";
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat first {}, second {};
  return ::stat(a.c_str(), &first) == 0 && ::stat(b.c_str(), &second) == 0 && first.st_dev == second.st_dev &&
         first.st_ino == second.st_ino;
}

}  // namespace

OutputFile::OutputFile(const std::string& path, bool force, const std::vector<std::string>& inputs, std::string what,
                       const std::function<bool(const std::string&)>& is_own)
    : given_(path), target_(path) {
  if (path.empty()) throw InputError("the output file is empty; give one with -o FILE");
  std::error_code error;
  if (fs::is_symlink(fs::symlink_status(path, error))) {
    const fs::path resolved = fs::canonical(path, error);
    if (error) {
      throw InputError(fmt::format("{}: -o is a symbolic link to {}, which does not exist; a link is followed only "
                                   "to an existing file: give the path of the file to write with -o FILE",
                                   path, fs::read_symlink(path, error).string()));
    }
    target_ = resolved.string();
    given_ = fmt::format("{} (a symbolic link to {})", path, target_);
  }
  for (const std::string& input : inputs) {
    if (!input.empty() && same_file(target_, input)) {
      throw InputError(fmt::format("{}: -o names an input of this command ({}); give another file to write", given_, input));
    }
  }
  struct stat status {};
  if (::stat(target_.c_str(), &status) == 0) {
    if (!S_ISREG(status.st_mode)) {
      throw InputError(fmt::format("{}: -o names {}; headscan writes only a regular file or a new path (also with "
                                   "--force): give a file path",
                                   given_, kind_of(status)));
    }
    if (!force) {
      throw InputError(fmt::format("{}: exists; headscan leaves it as it is: choose another path, or use --force to "
                                   "replace it (an earlier {} only)",
                                   given_, what));
    }
    if (!is_own(target_)) {
      throw InputError(fmt::format("{}: exists and is not a {} written by headscan; --force replaces an earlier one "
                                   "only: choose another path with -o FILE, or move that file away",
                                   given_, what));
    }
  }
  const fs::path parent = fs::path(target_).parent_path().empty() ? fs::path(".") : fs::path(target_).parent_path();
  if (!fs::is_directory(parent, error)) {
    throw InputError(fmt::format("{}: the folder {} does not exist; create it first, or choose another file with "
                                 "-o FILE",
                                 given_, parent.string()));
  }
  if (::access(parent.c_str(), W_OK) != 0) {
    throw InputError(fmt::format("{}: cannot write in the folder {} ({}); choose a writable place with -o FILE", given_,
                                 parent.string(), std::strerror(errno)));
  }
}

void OutputFile::write(const std::function<void(const std::string& path)>& write_to) const {
  const fs::path target(target_);
  const fs::path parent = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::string staging = (parent / ("." + target.filename().string() + ".headscan-XXXXXX")).string();
  const int fd = ::mkstemp(staging.data());
  if (fd < 0) {
    throw std::runtime_error(
        fmt::format("{}: cannot create a file in {} ({})", given_, parent.string(), std::strerror(errno)));
  }
  ::close(fd);
  const mode_t mask = ::umask(0);  // mkstemp's 0600 would hide the file from the user's group
  ::umask(mask);
  ::chmod(staging.c_str(), 0666 & ~mask);
  try {
    try {
      write_to(staging);
    } catch (const Interrupted&) {
      throw;
    } catch (const InputError&) {
      throw;
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const std::exception& e) {
      // A full disk: named as the file the user asked for, not the temporary one.
      std::string message = e.what();
      const auto at = message.find(staging);
      if (at != std::string::npos) message.replace(at, staging.size(), given_);
      std::error_code error;
      throw std::runtime_error(fmt::format("{}; {} {}", message, given_,
                                           fs::exists(target_, error) ? "is as it was" : "was not created"));
    }
    // rename() replaces a regular file and refuses a directory; a device or FIFO put in the
    // target's place while the command ran is refused too, rather than replaced.
    struct stat status {};
    if (::lstat(target_.c_str(), &status) == 0 && !S_ISREG(status.st_mode)) {
      throw InputError(fmt::format("{}: became {} while headscan ran; nothing was written", given_, kind_of(status)));
    }
    if (::rename(staging.c_str(), target_.c_str()) != 0) {
      throw std::runtime_error(
          fmt::format("{}: cannot move the written file into place ({})", given_, std::strerror(errno)));
    }
  } catch (...) {
    ::unlink(staging.c_str());
    throw;
  }
}

}  // namespace headscan
