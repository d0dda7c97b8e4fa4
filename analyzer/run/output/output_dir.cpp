#include "analyzer/run/output/output_dir.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <utility>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fmt/format.h>

#include "analyzer/errors.h"

namespace headscan {

namespace fs = std::filesystem;

namespace {

#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x00002000  // Linux 5.8
#endif

constexpr const char* kInPlaceLock = ".headscan.lock";
constexpr const char* kInPlacePrefix = ".headscan-";

// Whether `directory` is the root of a mount (a container's volume, a tmpfs): rename() can neither
// replace it (EBUSY) nor reach it from a staging directory beside it (EXDEV). Kernels before 5.8
// do not say: there a directory on another device than its parent's is one.
bool is_mount_point(const fs::path& directory) {
  struct statx status {};
  if (::statx(AT_FDCWD, directory.c_str(), AT_NO_AUTOMOUNT, STATX_BASIC_STATS, &status) != 0 ||
      !S_ISDIR(status.stx_mode)) {
    return false;
  }
  if ((status.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) != 0) {
    return (status.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
  }
  struct stat parent {};
  return ::stat(directory.parent_path().c_str(), &parent) == 0 &&
         (status.stx_dev_major != major(parent.st_dev) || status.stx_dev_minor != minor(parent.st_dev));
}

// What a headscan report directory, a shard's (--shard) or a comparison's (compare) holds at its
// top level.
bool is_report_entry(const fs::directory_entry& entry) {
  const std::string name = entry.path().filename().string();
  if (entry.is_directory()) return name == "heads" || name == "plots" || name == "data" || name == "kv_plan";
  return name == "heads.json" || name == "heads.csv" || name == "idf.txt" || name == "index.html" || name == "state.json" ||
         name == "examples.bin" || name == "compare.json" || name == "compare.csv";
}

// --force may replace an earlier report only: refuses a directory that holds an input of this run
// or anything else (but the entries `is_own`: the run's lock and staging inside a mount point).
void check_replaceable(const fs::path& target, const std::vector<std::string>& inputs, OutputKind kind,
                       const std::function<bool(const std::string&)>& is_own) {
  std::error_code error;
  const fs::path directory = fs::weakly_canonical(target, error);
  for (const std::string& input : inputs) {
    if (input.empty()) continue;
    const fs::path path = fs::weakly_canonical(input, error);
    const auto [end, rest] = std::mismatch(directory.begin(), directory.end(), path.begin(), path.end());
    if (end == directory.end()) {
      throw InputError(fmt::format("{}: the output directory holds {}, an input of this run; --force replaces an "
                                   "earlier report and would delete it: choose another directory with -o DIR",
                                   target.string(), input));
    }
  }
  bool has_report = false;      // heads.json or state.json: an analysis, a merge or a shard
  bool has_comparison = false;  // compare.json
  for (const auto& entry : fs::directory_iterator(target, error)) {
    if (is_own(entry.path().filename().string())) continue;
    if (!is_report_entry(entry)) {
      throw InputError(fmt::format("{}: the output directory holds {}, which is not part of a headscan report; "
                                   "--force replaces an earlier report only: choose another directory with -o DIR, "
                                   "or move that file away",
                                   target.string(), entry.path().filename().string()));
    }
    const fs::path name = entry.path().filename();
    has_report = has_report || name == "heads.json" || name == "state.json";
    has_comparison = has_comparison || name == "compare.json";
  }
  if (error) throw InputError(fmt::format("{}: the output directory cannot be read: {}", target.string(), error.message()));
  // A comparison replaces a comparison, a report a report or a shard: never an analysis that took
  // the model to make with a comparison that took seconds, nor the other way round.
  if (kind == OutputKind::comparison && (has_report || !has_comparison)) {
    throw InputError(fmt::format("{}: the output directory is not an earlier comparison (no compare.json{}); --force "
                                 "replaces an earlier comparison only: choose another directory with -o DIR",
                                 target.string(), has_report ? ", but a report's heads.json or state.json" : ""));
  }
  if (kind == OutputKind::report && (has_comparison || !has_report)) {
    throw InputError(fmt::format("{}: the output directory is not a headscan report (no heads.json) or shard (no "
                                 "state.json){}; --force replaces an earlier report only: choose another directory "
                                 "with -o DIR",
                                 target.string(), has_comparison ? " but a comparison (compare.json)" : ""));
  }
}

// The absolute target without a trailing separator ("rep/" and "rep" are one directory), with a
// symbolic link resolved to the directory it points to (the report replaces that directory, not the
// link). Throws InputError for the root, a dangling link, or a link to something else.
fs::path resolve_target(const fs::path& target) {
  fs::path absolute = fs::absolute(target).lexically_normal();
  if (absolute.filename().empty()) absolute = absolute.parent_path();
  if (absolute.filename().empty() || absolute == absolute.root_path()) {
    throw InputError(fmt::format("{}: the report cannot replace the root directory; choose a directory with -o DIR",
                                 target.string()));
  }
  std::error_code error;
  if (fs::symlink_status(absolute, error).type() != fs::file_type::symlink) return absolute;
  const fs::path resolved = fs::canonical(absolute, error);
  if (error) {
    throw InputError(fmt::format("{}: the output path is a symbolic link to {}, which does not exist; create that "
                                 "directory or choose another with -o DIR",
                                 target.string(), fs::read_symlink(absolute, error).string()));
  }
  return resolved;
}

// A report inside an input directory (merge's shards, compare's runs) would change that input, and
// could not be replaced with --force later (it would hold an input's parent).
void refuse_inside_input(const fs::path& given, const fs::path& target, const std::vector<std::string>& inputs) {
  std::error_code error;
  for (const std::string& input : inputs) {
    if (input.empty() || !fs::is_directory(input, error)) continue;
    const fs::path directory = fs::weakly_canonical(input, error);
    if (error || directory == target) continue;  // the same directory: check_replaceable's refusal
    const auto [end, rest] = std::mismatch(directory.begin(), directory.end(), target.begin(), target.end());
    if (end == directory.end()) {
      throw InputError(fmt::format("{}: the output directory is inside {}, an input of this command; writing there "
                                   "would change that input: choose a directory outside it with -o DIR",
                                   given.string(), input));
    }
  }
}

// The name a staging directory of `target` has: ".NAME.headscan-XXXXXX" (mkdtemp's six characters),
// and ".NAME.headscan-XXXXXX.previous" for an old report moved aside by earlier versions.
bool is_staging_name(const std::string& name, const std::string& prefix) {
  if (name.compare(0, prefix.size(), prefix) != 0) return false;
  std::string rest = name.substr(prefix.size());
  const std::string previous = ".previous";
  if (rest.size() > previous.size() && rest.compare(rest.size() - previous.size(), previous.size(), previous) == 0) {
    rest.resize(rest.size() - previous.size());
  }
  return rest.size() == 6 &&
         std::all_of(rest.begin(), rest.end(), [](unsigned char c) { return std::isalnum(c) != 0; });
}

// Whether every top-level entry of `directory` is part of a report: such a directory holds nothing
// but what headscan wrote.
bool holds_report_only(const fs::path& directory) {
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(directory, error)) {
    if (!is_report_entry(entry)) return false;
  }
  return !error;
}

}  // namespace

OutputDirectory::OutputDirectory(fs::path target, bool force, const std::vector<std::string>& inputs, OutputKind kind) {
  if (target.empty()) throw InputError("the output directory is empty; give one with -o DIR");
  target_ = resolve_target(target);
  refuse_inside_input(target, target_, inputs);
  std::error_code error;
  const fs::path parent = target_.parent_path();
  if (!fs::is_directory(parent, error)) {
    for (fs::path missing = parent; fs::symlink_status(missing, error).type() == fs::file_type::not_found;
         missing = missing.parent_path()) {
      created_parents_.push_back(missing);
      if (missing == missing.root_path()) break;
    }
    fs::create_directories(parent, error);
    if (error) {
      remove_created_parents();
      throw InputError(fmt::format("{}: cannot create the directory that will hold the report ({}); choose a "
                                   "writable place with -o DIR",
                                   parent.string(), error.message()));
    }
  }
  in_place_ = is_mount_point(target_);
  try {
    lock();
    clean_stale_staging();
    // Checked while holding the lock, so that no other run changes the target in between.
    const auto status = fs::status(target_, error);
    if (fs::exists(status)) {
      if (!fs::is_directory(status)) {
        throw InputError(fmt::format("{}: the output path exists and is not a directory; choose another with -o DIR",
                                     target.string()));
      }
      bool empty = true;
      for (const auto& entry : fs::directory_iterator(target_, error)) {
        empty = empty && is_own_entry(entry.path().filename().string());
      }
      empty = empty && !error;  // an unreadable directory is not taken for an empty one
      if (!empty && !force) {
        throw InputError(fmt::format("{}: the output directory exists and is not empty; headscan leaves it "
                                     "untouched: choose another with -o DIR, or pass --force to replace it",
                                     target.string()));
      }
      if (!empty) {
        check_replaceable(target_, inputs, kind, [this](const std::string& name) { return is_own_entry(name); });
      }
    }
    std::string pattern = ((in_place_ ? target_ : parent) / (staging_prefix() + "XXXXXX")).string();
    if (mkdtemp(pattern.data()) == nullptr) {
      throw InputError(fmt::format("{}: cannot write the output directory ({}); choose a writable place with -o DIR",
                                   target.string(), std::strerror(errno)));
    }
    staging_ = pattern;
    // mkdtemp makes it private (0700); a report is as readable as any directory the user makes.
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::chmod(staging_.c_str(), 0777 & ~mask);
  } catch (...) {
    unlock();
    remove_created_parents();
    throw;
  }
}

OutputDirectory::~OutputDirectory() {
  if (!committed_) {
    std::error_code ignored;
    if (!staging_.empty()) fs::remove_all(staging_, ignored);
  }
  unlock();
  if (!committed_) remove_created_parents();  // emptied of the lock file only now
}

// Takes ".NAME.headscan.lock" beside the target with flock, which the kernel releases when the
// process ends however it ends. The file is removed on unlock; a run that opened it just before
// then locks a file no longer in the directory, so the lock is retaken until the locked file is
// the one the path names.
void OutputDirectory::lock() {
  lock_path_ = in_place_ ? target_ / kInPlaceLock
                        : target_.parent_path() / ("." + target_.filename().string() + ".headscan.lock");
  for (;;) {
    const int fd = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      throw InputError(fmt::format("{}: cannot write the output directory's lock ({}); choose a writable place "
                                   "with -o DIR",
                                   lock_path_.string(), std::strerror(errno)));
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int flock_errno = errno;
      char pid[32] = {};
      const ssize_t size = ::pread(fd, pid, sizeof pid - 1, 0);
      ::close(fd);
      if (flock_errno == EWOULDBLOCK) {
        throw InputError(fmt::format("{}: another headscan run{} is writing this report; wait for it to end, or "
                                     "choose another directory with -o DIR",
                                     target_.string(), size > 0 ? fmt::format(" (pid {})", std::string(pid)) : ""));
      }
      // A file system without locks: the run goes on unprotected from concurrent runs.
      notes_.push_back(fmt::format("{}: cannot lock the output directory ({}); do not start another run on it "
                                   "until this one ends",
                                   target_.string(), std::strerror(flock_errno)));
      return;
    }
    struct stat locked {}, named {};
    if (::fstat(fd, &locked) == 0 && ::stat(lock_path_.c_str(), &named) == 0 && locked.st_dev == named.st_dev &&
        locked.st_ino == named.st_ino) {
      lock_fd_ = fd;
      break;
    }
    ::close(fd);
  }
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(lock_fd_, 0) == 0 && ::pwrite(lock_fd_, pid.data(), pid.size(), 0) < 0) {
    // The pid only makes the message of a second run more helpful.
  }
}

void OutputDirectory::unlock() {
  if (lock_fd_ < 0) return;
  ::unlink(lock_path_.c_str());
  ::close(lock_fd_);
  lock_fd_ = -1;
}

// Called with the lock held: a staging directory of this target can only belong to a run that
// ended without removing it (killed, or the machine stopped). Removed when it holds nothing but
// report files; reported otherwise.
void OutputDirectory::clean_stale_staging() {
  const std::string prefix = staging_prefix();
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(in_place_ ? target_ : target_.parent_path(), error)) {
    const std::string name = entry.path().filename().string();
    if (!is_staging_name(name, prefix) || entry.is_symlink(error) || !entry.is_directory(error)) continue;
    if (holds_report_only(entry.path())) {
      std::error_code removed;
      fs::remove_all(entry.path(), removed);
      if (!removed) {
        notes_.push_back(fmt::format("removed {}, left by an interrupted run", entry.path().string()));
        continue;
      }
    }
    notes_.push_back(fmt::format("{} was left by an interrupted run and holds files that are not a report's; "
                                 "look at it and remove it",
                                 entry.path().string()));
  }
}

std::string OutputDirectory::staging_prefix() const {
  return in_place_ ? kInPlacePrefix : "." + target_.filename().string() + ".headscan-";
}

bool OutputDirectory::is_own_entry(const std::string& name) const {
  return in_place_ && (name == kInPlaceLock || is_staging_name(name, kInPlacePrefix));
}

void OutputDirectory::write(const std::function<void(const fs::path& staging)>& write_to) const {
  const auto named = [&](std::string text) {
    const std::string staging = staging_.string();
    for (std::size_t at = text.find(staging); at != std::string::npos; at = text.find(staging, at)) {
      text.replace(at, staging.size(), target_.string());
      at += target_.string().size();
    }
    std::error_code error;
    return text + fmt::format("; {} {}", target_.string(),
                              fs::exists(fs::symlink_status(target_, error)) ? "is as it was" : "was not created");
  };
  try {
    write_to(staging_);
  } catch (const Interrupted&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const InputError& e) {
    throw InputError(named(e.what()));
  } catch (const std::exception& e) {
    throw std::runtime_error(named(e.what()));
  }
}

void OutputDirectory::remove_created_parents() {
  std::error_code ignored;
  for (const fs::path& created : created_parents_) fs::remove(created, ignored);  // innermost first
}

// An existing target is exchanged with the staging directory in one renameat2(RENAME_EXCHANGE), so
// the target always holds a whole report; the old one, now under the staging name, is removed
// after (and by the next run if this one is killed first). File systems without the exchange get
// two renames.
void OutputDirectory::commit() {
  if (in_place_) {
    commit_in_place();
    return;
  }
  std::error_code error;
  const bool replacing = fs::exists(fs::symlink_status(target_, error));
  if (replacing) {
    if (::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE) == 0) {
      committed_ = true;
      fs::remove_all(staging_, error);
      return;
    }
    if (errno != EINVAL && errno != ENOSYS) {
      throw std::runtime_error(
          fmt::format("{}: cannot move the report into place: {}", target_.string(), std::strerror(errno)));
    }
    const fs::path previous = staging_.string() + ".previous";
    fs::rename(target_, previous, error);
    if (error) throw std::runtime_error(fmt::format("{}: cannot move the old report aside: {}", target_.string(), error.message()));
    fs::rename(staging_, target_, error);
    if (error) {
      fs::rename(previous, target_, error);
      throw std::runtime_error(fmt::format("{}: cannot move the report into place: {}", target_.string(), error.message()));
    }
    committed_ = true;
    fs::remove_all(previous, error);
    return;
  }
  fs::rename(staging_, target_, error);
  if (error) throw std::runtime_error(fmt::format("{}: cannot move the report into place: {}", target_.string(), error.message()));
  committed_ = true;
}

// A mount point cannot be renamed: the report's entries are moved into it one by one, an earlier
// report's first moved aside into a staging directory of its own (removed after, or by the next run
// if this one is killed first). A failed move puts back every entry moved before it. Entries that
// are not a report's (added while the run went on) stay.
void OutputDirectory::commit_in_place() {
  std::string pattern = (target_ / (std::string(kInPlacePrefix) + "XXXXXX")).string();
  if (mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error(fmt::format("{}: cannot move the report into place ({}); {} is as it was",
                                         target_.string(), std::strerror(errno), target_.string()));
  }
  const fs::path previous = pattern;
  std::vector<std::pair<fs::path, fs::path>> moved;  // from, to
  const auto move = [&](const fs::path& from, const fs::path& to) {
    std::error_code error;
    fs::rename(from, to, error);
    if (!error) {
      moved.emplace_back(from, to);
      return;
    }
    std::error_code ignored;
    for (auto back = moved.rbegin(); back != moved.rend(); ++back) fs::rename(back->second, back->first, ignored);
    fs::remove(previous, ignored);
    throw std::runtime_error(fmt::format("{}: cannot move {} into place ({}); {} is as it was", target_.string(),
                                         to.filename().string(), error.message(), target_.string()));
  };
  std::vector<fs::path> earlier;
  std::vector<fs::path> written;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(target_, error)) {
    if (!is_own_entry(entry.path().filename().string()) && is_report_entry(entry)) earlier.push_back(entry.path());
  }
  for (const auto& entry : fs::directory_iterator(staging_, error)) written.push_back(entry.path());
  for (const fs::path& entry : earlier) move(entry, previous / entry.filename());
  for (const fs::path& entry : written) move(entry, target_ / entry.filename());
  committed_ = true;
  fs::remove_all(previous, error);
  fs::remove(staging_, error);
}

}  // namespace headscan
