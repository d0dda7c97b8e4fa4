#pragma once
// The report directory is written into a staging directory beside the target (".DIR.headscan-XXXXXX")
// and swapped into place when complete, so a failed run leaves nothing half-written and an existing
// report is only replaced with --force. A run holds a lock on the target (".DIR.headscan.lock",
// flock) from its start to the swap: a second run on the same target exits 2 at once, and staging
// directories found while holding the lock belong to runs that died, so they are removed. The swap
// of an old report for a new one is one renameat2(RENAME_EXCHANGE): DIR is always present, holding
// either the old report or the new one.
//
// A target that is a mount point (a container's volume, an empty directory a file system is mounted
// on) cannot be renamed, nor reached by a rename from beside it: its staging directory and lock are
// inside it (".headscan-XXXXXX", ".headscan.lock"), and commit() moves the entries in one by one
// (an earlier report's aside first, back again if a move fails).

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace headscan {

// What the directory holds: a report (an analysis, a merge, or a shard's state) or a comparison
// (headscan compare). --force replaces only one of the same kind.
enum class OutputKind { report, comparison };

class OutputDirectory {
 public:
  // Checks the target and creates the staging directory. Throws InputError when the target
  // exists and is not an empty directory (without `force`), when it cannot be written, and, with
  // `force`, when it holds one of `inputs` or anything a headscan report does not: --force
  // replaces an earlier report (of `kind`), never the user's other files.
  OutputDirectory(std::filesystem::path target, bool force, const std::vector<std::string>& inputs = {},
                  OutputKind kind = OutputKind::report);
  ~OutputDirectory();  // removes the staging directory unless committed
  OutputDirectory(const OutputDirectory&) = delete;
  OutputDirectory& operator=(const OutputDirectory&) = delete;

  const std::filesystem::path& staging() const { return staging_; }
  const std::filesystem::path& target() const { return target_; }

  // Runs `write_to(staging())`. Its errors name the files as the user will look for them
  // (DIR/heads.json rather than the staging directory's), and say that DIR was left as it was.
  void write(const std::function<void(const std::filesystem::path& staging)>& write_to) const;

  // Moves the staging directory into place, replacing the target.
  void commit();

  // Staging directories of interrupted runs that were removed, or left because they hold files a
  // report does not (with the reason): for the run's warnings.
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  void lock();
  void unlock();
  void clean_stale_staging();
  void remove_created_parents();
  void commit_in_place();
  // Entries of a mount point target that belong to the run: its lock and staging directories.
  bool is_own_entry(const std::string& name) const;
  std::string staging_prefix() const;

  std::filesystem::path target_;
  std::filesystem::path staging_;
  // Parents of the target that did not exist, innermost first: removed again unless committed,
  // so that a failed run leaves nothing behind.
  std::vector<std::filesystem::path> created_parents_;
  std::filesystem::path lock_path_;
  int lock_fd_ = -1;
  std::vector<std::string> notes_;
  bool committed_ = false;
  bool in_place_ = false;  // the target is a mount point
};

}  // namespace headscan
