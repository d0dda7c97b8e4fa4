#pragma once
// Helpers shared by the tests: fixture models, temporary directories, running the CLI.

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace headscan::testing {

// A fixture model built by tests/fixtures/make_models.py (see its docstring for the patterns).
std::string fixture(const std::string& name);

// A fresh empty directory under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  // Writes `text` to a file in the directory and returns its path.
  std::string write(const std::string& name, const std::string& text) const;

 private:
  std::filesystem::path path_;
};

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
  long max_rss_kb = 0;  // peak resident memory of the process
};

// Runs the headscan executable with `args` (no shell quoting needed).
CommandResult run_headscan(const std::vector<std::string>& args);

// Starts the headscan executable with `args` in the background, its output discarded, and returns
// its pid; wait_for_exit gives its exit code, or -N when signal N ended it.
int start_headscan(const std::vector<std::string>& args);
int wait_for_exit(int pid);

nlohmann::json read_json(const std::filesystem::path& path);

// The bytes of a file.
std::string read_file(const std::filesystem::path& path);

// `data` compressed with libarchive's `filter` (ARCHIVE_FILTER_GZIP, _ZSTD, _XZ), as a file holds it.
std::string compressed(const std::string& data, int filter);

// Lines of `count` words drawn deterministically from w3..w63 with the given lengths.
std::string word_corpus(const std::vector<int>& line_lengths, unsigned seed = 1);

}  // namespace headscan::testing
