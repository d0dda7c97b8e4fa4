#pragma once
// The report directory is written into a temporary directory beside the target and renamed into
// place when complete, so a failed run leaves nothing half-written and an existing report is
// only replaced with --force.

#include <filesystem>
#include <string>
#include <vector>

namespace headscan {

class OutputDirectory {
 public:
  // Checks the target and creates the staging directory. Throws InputError when the target
  // exists and is not an empty directory (without `force`), when it cannot be written, and, with
  // `force`, when it holds one of `inputs` or anything a headscan report does not: --force
  // replaces an earlier report, never the user's other files.
  OutputDirectory(std::filesystem::path target, bool force, const std::vector<std::string>& inputs = {});
  ~OutputDirectory();  // removes the staging directory unless committed
  OutputDirectory(const OutputDirectory&) = delete;
  OutputDirectory& operator=(const OutputDirectory&) = delete;

  const std::filesystem::path& staging() const { return staging_; }
  const std::filesystem::path& target() const { return target_; }

  // Moves the staging directory into place, replacing the target.
  void commit();

 private:
  void remove_created_parents();

  std::filesystem::path target_;
  std::filesystem::path staging_;
  // Parents of the target that did not exist, innermost first: removed again unless committed,
  // so that a failed run leaves nothing behind.
  std::vector<std::filesystem::path> created_parents_;
  bool committed_ = false;
};

}  // namespace headscan
