#pragma once
// What the command line's error tests share (tests/test_cli_errors.cpp, test_cli_input_errors.cpp,
// test_cli_output_errors.cpp): a bad-input error exits 2 with one "headscan: error: " message and
// no backtrace, and a failed run leaves its working directory exactly as it was.

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/fixtures.h"

namespace headscan::testing {

inline constexpr int kExitBadInput = 2;

// The bytes of a file.
inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every entry under `root` (hidden ones included): relative path → contents ("<dir>" for a
// directory), to show that a failed run changed nothing.
inline std::map<std::string, std::string> snapshot(const std::filesystem::path& root) {
  std::map<std::string, std::string> entries;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    const std::string name = std::filesystem::relative(entry.path(), root).string();
    entries[name] = entry.is_directory() ? "<dir>" : slurp(entry.path());
  }
  return entries;
}

// Names in `dir` that look like a staging directory (".NAME.headscan-XXXXXX").
inline std::vector<std::string> staging_leftovers(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.front() == '.' && name.find(".headscan-") != std::string::npos) names.push_back(name);
  }
  return names;
}

// What every error shares: exit 2, nothing on stdout, one message with the prefix, no backtrace.
inline void check_input_error(const CommandResult& result) {
  using Catch::Matchers::Contains;
  using Catch::Matchers::StartsWith;
  INFO("stderr: " << result.err);
  CHECK(result.exit_code == kExitBadInput);
  CHECK(result.out.empty());
  CHECK_THAT(result.err, StartsWith("headscan: error: "));
  CHECK_THAT(result.err, !Contains("Exception raised from") && !Contains("frame #") && !Contains("libtorch") &&
                             !Contains("terminate called"));
}

// Runs headscan in the directory `work` (with the report going to `output` inside it unless
// `args` already names one), expects a bad-input error and that `work` is exactly as before.
inline CommandResult run_expecting_input_error(const TempDir& work, std::vector<std::string> args,
                                               const std::string& output = "report") {
  args.push_back("-o");
  args.push_back((work / output).string());
  const auto before = snapshot(work.path());
  const CommandResult result = run_headscan(args);
  check_input_error(result);
  CHECK_FALSE(std::filesystem::exists(work / output));
  CHECK(staging_leftovers(work.path()).empty());
  CHECK(snapshot(work.path()) == before);
  return result;
}

inline std::string small_corpus(const TempDir& work) { return work.write("corpus.txt", word_corpus({6, 9, 4, 12})); }

}  // namespace headscan::testing
