// The command line's errors for the output directory (test_cli_errors.cpp says what every error
// shares): an existing directory is replaced only with --force and only when it holds a report, and
// one that cannot be written is refused; a refused run leaves everything byte for byte as it was.

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli_error_testing.h"
#include "tests/fixtures.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using headscan::testing::check_input_error;
using headscan::testing::CommandResult;
using headscan::testing::fixture;
using headscan::testing::read_json;
using headscan::testing::run_expecting_input_error;
using headscan::testing::run_headscan;
using headscan::testing::small_corpus;
using headscan::testing::snapshot;
using headscan::testing::staging_leftovers;
using headscan::testing::TempDir;
using headscan::testing::word_corpus;

TEST_CASE("cli: an existing non-empty output directory is replaced only with --force", "[cli][errors][e2e]") {
  TempDir work;
  const std::string corpus = small_corpus(work);
  fs::create_directories(work / "report" / "old");
  work.write("report/notes.txt", "keep me\n");
  work.write("report/old/heads.json", "{\"mine\": true}\n");

  SECTION("without --force: exit 2 and the directory untouched") {
    const auto before = snapshot(work.path());
    const CommandResult result = run_headscan({fixture("gpt2.pt"), corpus, "-o", (work / "report").string()});
    check_input_error(result);
    CHECK_THAT(result.err, Contains("report") && Contains("exists and is not empty") && Contains("--force"));
    CHECK(snapshot(work.path()) == before);
  }
  SECTION("with --force, a directory that holds other files than a report: exit 2 and untouched") {
    const auto before = snapshot(work.path());
    const CommandResult result =
        run_headscan({fixture("gpt2.pt"), corpus, "-o", (work / "report").string(), "--force", "--quiet"});
    check_input_error(result);
    CHECK_THAT(result.err, Contains("notes.txt") && Contains("not part of a headscan report"));
    CHECK(snapshot(work.path()) == before);
  }
  SECTION("with --force, a directory that holds an input: exit 2 and the input kept") {
    fs::create_directories(work / "data");
    const std::string inside = work.write("data/corpus.txt", word_corpus({5, 7, 9}));
    work.write("data/heads.json", "{}\n");
    const auto before = snapshot(work.path());
    const CommandResult result =
        run_headscan({fixture("gpt2.pt"), inside, "-o", (work / "data").string(), "--force", "--quiet"});
    check_input_error(result);
    CHECK_THAT(result.err, Contains("an input of this run"));
    CHECK(snapshot(work.path()) == before);
  }
  SECTION("with --force, an earlier report: replaced by the new one") {
    const std::vector<std::string> quick = {"--quiet", "--no-html", "--no-plots", "--parser", "none"};
    std::vector<std::string> args = {fixture("gpt2.pt"), corpus, "-o", (work / "earlier").string()};
    args.insert(args.end(), quick.begin(), quick.end());
    REQUIRE(run_headscan(args).exit_code == 0);
    work.write("earlier/heads.json", "{\"stale\": true}\n");
    args.emplace_back("--force");
    const CommandResult result = run_headscan(args);
    INFO("stderr: " << result.err);
    REQUIRE(result.exit_code == 0);
    CHECK(read_json(work / "earlier" / "heads.json").contains("heads"));
    CHECK(staging_leftovers(work.path()).empty());
  }
}

TEST_CASE("cli: an output directory that cannot be written is rejected", "[cli][errors][e2e]") {
  TempDir work;
  const std::string corpus = small_corpus(work);
  work.write("file.txt", "a regular file\n");

  SECTION("its parent is a regular file") {
    const CommandResult result = run_expecting_input_error(work, {fixture("gpt2.pt"), corpus}, "file.txt/out");
    CHECK_THAT(result.err, Contains("file.txt") && Contains("-o DIR"));
  }
  SECTION("it is a regular file") {
    const auto before = snapshot(work.path());
    const CommandResult result = run_headscan({fixture("gpt2.pt"), corpus, "-o", (work / "file.txt").string()});
    check_input_error(result);
    CHECK_THAT(result.err, Contains("file.txt") && Contains("not a directory") && Contains("-o DIR"));
    CHECK(snapshot(work.path()) == before);
  }
}
