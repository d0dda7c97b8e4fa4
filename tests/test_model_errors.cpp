// Failures inside the model's forward: a broken model contract is bad input (exit 2), running out
// of memory is a failure while running (exit 1). Fixtures: tests/fixtures/make_error_models.py.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/fixtures.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using headscan::testing::CommandResult;
using headscan::testing::fixture;
using headscan::testing::run_headscan;
using headscan::testing::TempDir;
using headscan::testing::word_corpus;

namespace {

constexpr int kExitBadInput = 2;

}  // namespace

TEST_CASE("a model contract broken mid-run is bad input, running out of memory a failure", "[cli][errors][e2e]") {
  TempDir dir;
  // 70 words: windows of 71 tokens, longer than the 32-token shape probe.
  const std::string corpus = dir.write("long.txt", word_corpus({70, 70, 70}));
  const std::vector<std::string> quick = {"-q", "--no-html", "--no-plots", "--parser", "none"};
  auto analyse = [&](const std::string& model, const std::string& out) {
    std::vector<std::string> args = {fixture(model), corpus, "-o", (dir / out).string()};
    args.insert(args.end(), quick.begin(), quick.end());
    return run_headscan(args);
  };

  SECTION("attention layers that depend on the input: exit 2") {
    const CommandResult result = analyse("depth_by_length.pt", "depth");
    CHECK(result.exit_code == kExitBadInput);
    CHECK_THAT(result.err, StartsWith("headscan: error: ") && Contains("depth_by_length.pt") &&
                               Contains("corpus line 1") && Contains("layer 2") && Contains("2 layers"));
    CHECK_FALSE(fs::exists(dir / "depth"));
  }
  SECTION("an allocation that fails inside the forward: exit 1") {
    const CommandResult result = analyse("oom_on_long.pt", "oom");
    CHECK(result.exit_code == 1);
    CHECK_THAT(result.err, StartsWith("headscan: failed: ") && Contains("out of memory") &&
                               Contains("can't allocate memory") && Contains("--batch-size"));
    CHECK_THAT(result.err, !Contains("Traceback"));
    CHECK_FALSE(fs::exists(dir / "oom"));
  }
}
