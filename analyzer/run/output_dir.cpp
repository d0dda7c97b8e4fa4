#include "analyzer/run/output_dir.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "analyzer/errors.h"

namespace headscan {

namespace fs = std::filesystem;

namespace {

// What a headscan report directory holds at its top level.
bool is_report_entry(const fs::directory_entry& entry) {
  const std::string name = entry.path().filename().string();
  if (entry.is_directory()) return name == "heads" || name == "plots" || name == "data";
  return name == "heads.json" || name == "idf.txt" || name == "index.html";
}

// --force may replace an earlier report only: refuses a directory that holds an input of this run
// or anything else.
void check_replaceable(const fs::path& target, const std::vector<std::string>& inputs) {
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
  bool has_report = false;
  for (const auto& entry : fs::directory_iterator(target, error)) {
    if (!is_report_entry(entry)) {
      throw InputError(fmt::format("{}: the output directory holds {}, which is not part of a headscan report; "
                                   "--force replaces an earlier report only: choose another directory with -o DIR, "
                                   "or move that file away",
                                   target.string(), entry.path().filename().string()));
    }
    has_report = has_report || entry.path().filename() == "heads.json";
  }
  if (error || !has_report) {
    throw InputError(fmt::format("{}: the output directory is not a headscan report (no heads.json); --force "
                                 "replaces an earlier report only: choose another directory with -o DIR",
                                 target.string()));
  }
}

}  // namespace

OutputDirectory::OutputDirectory(fs::path target, bool force, const std::vector<std::string>& inputs)
    : target_(std::move(target)) {
  if (target_.empty()) throw InputError("the output directory is empty; give one with -o DIR");
  std::error_code error;
  const auto status = fs::status(target_, error);
  if (fs::exists(status)) {
    if (!fs::is_directory(status)) {
      throw InputError(fmt::format("{}: the output path exists and is not a directory; choose another with -o DIR",
                                   target_.string()));
    }
    if (!fs::is_empty(target_, error) && !force) {
      throw InputError(fmt::format("{}: the output directory exists and is not empty; headscan leaves it "
                                   "untouched: choose another with -o DIR, or pass --force to replace it",
                                   target_.string()));
    }
    if (force && !fs::is_empty(target_, error)) check_replaceable(target_, inputs);
  }
  fs::path parent = fs::absolute(target_).lexically_normal().parent_path();
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
  std::string pattern = (parent / ("." + fs::absolute(target_).lexically_normal().filename().string() +
                                   ".headscan-XXXXXX")).string();
  if (mkdtemp(pattern.data()) == nullptr) {
    const int mkdtemp_errno = errno;
    remove_created_parents();
    throw InputError(fmt::format("{}: cannot write the output directory ({}); choose a writable place with -o DIR",
                                 target_.string(), std::strerror(mkdtemp_errno)));
  }
  staging_ = pattern;
}

OutputDirectory::~OutputDirectory() {
  if (committed_) return;
  std::error_code ignored;
  fs::remove_all(staging_, ignored);
  remove_created_parents();
}

void OutputDirectory::remove_created_parents() {
  std::error_code ignored;
  for (const fs::path& created : created_parents_) fs::remove(created, ignored);  // innermost first
}

void OutputDirectory::commit() {
  std::error_code error;
  fs::path previous;
  if (fs::exists(target_)) {
    previous = staging_.string() + ".previous";
    fs::rename(target_, previous, error);
    if (error) throw std::runtime_error(fmt::format("{}: cannot move the old report aside: {}", target_.string(), error.message()));
  }
  fs::rename(staging_, target_, error);
  if (error) {
    if (!previous.empty()) fs::rename(previous, target_, error);
    throw std::runtime_error(fmt::format("{}: cannot move the report into place: {}", target_.string(), error.message()));
  }
  committed_ = true;
  if (!previous.empty()) fs::remove_all(previous, error);
}

}  // namespace headscan
