#include "analyzer/cli/export_command.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>

namespace headscan {
namespace {

namespace fs = std::filesystem;

// The folder that holds the Python package `headscan` of this very binary, or empty:
//   wheel:  site-packages/headscan/bin/headscan  → site-packages
//   build:  build/headscan, build/python/headscan/ → build/python
fs::path package_parent(const fs::path& executable) {
  const fs::path bin = executable.parent_path();
  std::error_code error;
  if (fs::exists(bin.parent_path() / "__init__.py", error) && bin.filename() == "bin") {
    return bin.parent_path().parent_path();
  }
  if (fs::exists(bin / "python" / "headscan" / "__init__.py", error)) return bin / "python";
  return {};
}

// What Python runs, with `python -c`: `python -m headscan` would put the working directory first on
// sys.path (a model directory's argparse.py or torch.py would then run in place of the real one);
// -c puts "" (the working directory) there, dropped before anything is imported (`sys` is built in).
// -P (PYTHONSAFEPATH) does the same but needs Python 3.11, and torch supports 3.10.
constexpr const char* kBootstrap =
    "import sys\n"
    "if sys.path and sys.path[0] == '':\n"
    "    del sys.path[0]\n"
    "from headscan._cli import main\n"
    "main()\n";

// $PYTHONPATH without its empty entries, each of which Python reads as the working directory.
std::string without_empty_entries(const std::string& path) {
  std::string kept;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find(':', start), path.size());
    if (end > start) kept += (kept.empty() ? "" : ":") + path.substr(start, end - start);
    start = end + 1;
  }
  return kept;
}

// The Python to run it with: $HEADSCAN_PYTHON (the console script `headscan` of the wheel sets it to
// the interpreter it runs in), else the one this build was configured with.
std::string python_interpreter() {
  if (const char* python = std::getenv("HEADSCAN_PYTHON"); python != nullptr && *python != '\0') return python;
  return HEADSCAN_PYTHON_EXECUTABLE;
}

}  // namespace

int run_export_command(int argc, char** argv) {
  std::error_code error;
  const fs::path executable = fs::read_symlink("/proc/self/exe", error);
  const fs::path parent = error ? fs::path() : package_parent(executable);
  if (parent.empty()) {
    fmt::print(stderr, "headscan export: error: this headscan has no Python package beside it ({} has neither "
                       "../__init__.py, as installed by pip, nor python/headscan/, as in a build folder); install "
                       "headscan with pip (README, \"Install with pip\") and run its `headscan export`, or "
                       "`python -m headscan export`\n",
               executable.string());
    return 2;
  }
  std::string python_path = parent.string();
  if (const char* inherited = std::getenv("PYTHONPATH"); inherited != nullptr) {
    if (const std::string kept = without_empty_entries(inherited); !kept.empty()) python_path += ":" + kept;
  }
  ::setenv("PYTHONPATH", python_path.c_str(), 1);
  const std::string python = python_interpreter();
  // sys.argv is then ["-c", "export", ARGS...], which headscan._cli.main reads as `headscan export ARGS`.
  std::vector<std::string> arguments{python, "-c", kBootstrap, "export"};
  for (int i = 1; i < argc; ++i) arguments.emplace_back(argv[i]);
  std::vector<char*> pointers;
  for (std::string& argument : arguments) pointers.push_back(argument.data());
  pointers.push_back(nullptr);
  ::execvp(python.c_str(), pointers.data());
  const int reason = errno;
  fmt::print(stderr, "headscan export: error: cannot run Python ({}: {}); the exporter needs the Python with torch "
                     "and transformers that headscan was installed into: set HEADSCAN_PYTHON to it, or run "
                     "`python -m headscan export` with that Python\n",
             python, std::strerror(reason));
  return 2;
}

}  // namespace headscan
