#include "tests/fixtures.h"

#include <archive.h>
#include <archive_entry.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace headscan::testing {

namespace fs = std::filesystem;

std::string fixture(const std::string& name) {
  const fs::path path = fs::path(HEADSCAN_FIXTURE_DIR) / name;
  if (!fs::exists(path)) {
    throw std::runtime_error("fixture " + path.string() + " is missing: run the fixtures.models test first (ctest)");
  }
  return path.string();
}

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "headscan-test-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create a temporary directory");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

std::string TempDir::write(const std::string& name, const std::string& text) const {
  const fs::path file = path_ / name;
  std::ofstream out(file, std::ios::binary);
  out << text;
  return file.string();
}

namespace {

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

#ifdef HEADSCAN_BINARY
static const char* const kHeadscanBinary = HEADSCAN_BINARY;
#else  // the LibTorch-free build (HEADSCAN_FUZZ) has no headscan executable
static const char* const kHeadscanBinary = nullptr;
#endif

// Forks the headscan executable with `args`, its stdout and stderr going to the given files.
static pid_t fork_headscan(const std::vector<std::string>& args, const char* out, const char* err) {
  if (!kHeadscanBinary) throw std::logic_error("this test executable was built without headscan (HEADSCAN_FUZZ)");
  std::fflush(nullptr);  // the child must not repeat the parent's buffered output
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    std::vector<char*> argv;
    std::string binary = kHeadscanBinary;
    argv.push_back(binary.data());
    std::vector<std::string> copies = args;
    for (auto& arg : copies) argv.push_back(arg.data());
    argv.push_back(nullptr);
    if (!freopen(out, "w", stdout) || !freopen(err, "w", stderr)) _exit(127);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

CommandResult run_headscan(const std::vector<std::string>& args) {
  TempDir capture;
  const fs::path out = capture / "stdout";
  const fs::path err = capture / "stderr";
  const pid_t pid = fork_headscan(args, out.c_str(), err.c_str());
  int status = 0;
  struct rusage usage {};
  wait4(pid, &status, 0, &usage);
  CommandResult result;
  result.max_rss_kb = usage.ru_maxrss;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = slurp(out);
  result.err = slurp(err);
  return result;
}

int start_headscan(const std::vector<std::string>& args) { return fork_headscan(args, "/dev/null", "/dev/null"); }

int wait_for_exit(int pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) throw std::runtime_error("waitpid failed");
  return WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? -WTERMSIG(status) : -1;
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return nlohmann::json::parse(in);
}

std::string word_corpus(const std::vector<int>& line_lengths, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> word(3, 63);
  std::string text;
  for (int length : line_lengths) {
    for (int i = 0; i < length; ++i) text += (i ? " w" : "w") + std::to_string(word(random));
    text += '\n';
  }
  return text;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string compressed(const std::string& data, int filter) {
  archive* writer = archive_write_new();
  std::string out(data.size() + (1 << 16), '\0');
  std::size_t used = 0;
  archive_entry* entry = archive_entry_new();
  archive_entry_set_filetype(entry, AE_IFREG);
  archive_entry_set_size(entry, static_cast<la_int64_t>(data.size()));
  const bool written = archive_write_add_filter(writer, filter) == ARCHIVE_OK &&
                       archive_write_set_format_raw(writer) == ARCHIVE_OK &&
                       archive_write_open_memory(writer, out.data(), out.size(), &used) == ARCHIVE_OK &&
                       archive_write_header(writer, entry) == ARCHIVE_OK &&
                       archive_write_data(writer, data.data(), data.size()) == static_cast<la_ssize_t>(data.size()) &&
                       archive_write_close(writer) == ARCHIVE_OK;
  archive_entry_free(entry);
  archive_write_free(writer);
  if (!written) throw std::runtime_error("libarchive could not compress the test data");
  out.resize(used);
  return out;
}

}  // namespace headscan::testing
