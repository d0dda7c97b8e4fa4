// The report directory survives faults (README, "Errors and exit codes"): a run killed at any
// moment leaves the earlier report or the new one, whole; two runs on one -o never mix; staging
// directories of killed runs are removed by the next run; odd -o paths are settled at the start.

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/fixtures.h"

using namespace headscan::testing;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

constexpr int kExitBadInput = 2;

// Every path under `root`, relative, directories marked with a trailing '/'.
std::set<std::string> listing(const fs::path& root) {
  std::set<std::string> names;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    names.insert(fs::relative(entry.path(), root).string() + (entry.is_directory() ? "/" : ""));
  }
  return names;
}

// Hidden entries beside a report: staging directories and lock files.
std::vector<std::string> hidden_entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.front() == '.') names.push_back(name);
  }
  return names;
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("output: a run killed at any moment leaves the earlier report or the new one, whole",
          "[output][e2e]") {
  TempDir work;
  const std::string corpus = work.write("corpus.txt", word_corpus(std::vector<int>(240, 24)));
  const fs::path report = work / "report";
  const std::vector<std::string> base = {fixture("gpt2.pt"), corpus, "--quiet", "--parser", "none"};
  // The earlier report has no plots and two sequences; the new one has plots and every sequence,
  // so a mix of the two shows in the listing or in heads.json.
  const std::vector<std::string> earlier = with(base, {"--max-sequences", "2", "--no-plots", "--force", "-o", report.string()});
  const std::vector<std::string> newer = with(base, {"--force", "-o", report.string()});

  REQUIRE(run_headscan(with(base, {"-o", (work / "reference").string()})).exit_code == 0);
  const std::set<std::string> new_listing = listing(work / "reference");
  const auto new_sequences = read_json(work / "reference" / "heads.json").at("corpus").at("sequences");
  fs::remove_all(work / "reference");

  REQUIRE(run_headscan(earlier).exit_code == 0);
  const std::set<std::string> old_listing = listing(report);
  const auto old_sequences = read_json(report / "heads.json").at("corpus").at("sequences");
  REQUIRE(old_listing != new_listing);
  REQUIRE(old_sequences != new_sequences);

  const auto timed = std::chrono::steady_clock::now();
  REQUIRE(run_headscan(newer).exit_code == 0);
  const double run_seconds = seconds_since(timed);

  int killed = 0;
  constexpr int kPoints = 8;
  for (int point = 0; point < kPoints; ++point) {
    if (listing(report) == new_listing) REQUIRE(run_headscan(earlier).exit_code == 0);
    const double delay = run_seconds * (point + 0.5) / kPoints;
    const int pid = start_headscan(newer);
    std::this_thread::sleep_for(std::chrono::duration<double>(delay));
    kill(pid, SIGKILL);
    const int status = wait_for_exit(pid);
    killed += status == -SIGKILL;
    INFO("killed after " << delay << " s (exit " << status << ")");
    REQUIRE(fs::is_regular_file(report / "heads.json"));
    const auto sequences = read_json(report / "heads.json").at("corpus").at("sequences");
    const std::set<std::string> now = listing(report);
    if (sequences == old_sequences) {
      CHECK(now == old_listing);
    } else {
      CHECK(sequences == new_sequences);
      CHECK(now == new_listing);
    }
  }
  CHECK(killed >= kPoints / 2);

  // The next run removes what the killed ones left.
  REQUIRE(run_headscan(newer).exit_code == 0);
  CHECK(hidden_entries(work.path()).empty());
  CHECK(listing(report) == new_listing);
}

TEST_CASE("output: of two runs on one output directory, the second exits 2 naming the conflict",
          "[output][e2e]") {
  TempDir work;
  const std::string corpus = work.write("corpus.txt", word_corpus(std::vector<int>(240, 24)));
  const fs::path report = work / "report";
  const std::vector<std::string> args = {fixture("gpt2.pt"), corpus, "--quiet", "--parser", "none", "-o", report.string()};

  SECTION("a run that holds the lock: the next one exits 2 at once, naming it") {
    const int fd = ::open((work / ".report.headscan.lock").c_str(), O_RDWR | O_CREAT, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
    REQUIRE(::write(fd, "4242", 4) == 4);
    const CommandResult result = run_headscan(with(args, {"--force"}));
    ::close(fd);
    INFO("stderr: " << result.err);
    CHECK(result.exit_code == kExitBadInput);
    CHECK_THAT(result.err, Contains("report") && Contains("another headscan run (pid 4242)") && Contains("-o DIR"));
    CHECK_FALSE(fs::exists(report));
    CHECK(hidden_entries(work.path()) == std::vector<std::string>{".report.headscan.lock"});
  }
  SECTION("two runs started together: one report, whole, and one exit 2") {
    const int first = start_headscan(args);
    const int second = start_headscan(args);
    std::vector<int> codes = {wait_for_exit(first), wait_for_exit(second)};
    std::sort(codes.begin(), codes.end());
    CHECK(codes == std::vector<int>{0, kExitBadInput});
    REQUIRE(fs::is_regular_file(report / "heads.json"));
    CHECK(read_json(report / "heads.json").at("heads").size() == 8);
    CHECK(hidden_entries(work.path()).empty());
  }
}

TEST_CASE("output: staging directories of killed runs are removed by the next run, others reported",
          "[output][e2e]") {
  TempDir work;
  const std::string corpus = work.write("corpus.txt", word_corpus({6, 9, 4, 12}));
  fs::create_directories(work / ".report.headscan-Ab12Cd" / "plots");
  work.write(".report.headscan-Ab12Cd/index.html", "<p>half a report</p>\n");
  fs::create_directories(work / ".report.headscan-Zz99Zz");
  work.write(".report.headscan-Zz99Zz/notes.txt", "not a report\n");
  fs::create_directories(work / ".other.headscan-Qq11Qq");  // another target's: not this run's business

  const CommandResult result =
      run_headscan({fixture("gpt2.pt"), corpus, "--quiet", "--parser", "none", "-o", (work / "report").string()});
  INFO("stderr: " << result.err);
  REQUIRE(result.exit_code == 0);
  CHECK_FALSE(fs::exists(work / ".report.headscan-Ab12Cd"));
  CHECK_THAT(result.err, Contains("removed") && Contains(".report.headscan-Ab12Cd"));
  CHECK(fs::exists(work / ".report.headscan-Zz99Zz" / "notes.txt"));
  CHECK_THAT(result.err, Contains(".report.headscan-Zz99Zz") && Contains("interrupted run"));
  CHECK(fs::exists(work / ".other.headscan-Qq11Qq"));
}

TEST_CASE("output: odd output paths are settled before the run starts", "[output][e2e]") {
  TempDir work;
  const std::string corpus = work.write("corpus.txt", word_corpus({6, 9, 4, 12}));
  const std::vector<std::string> base = {fixture("gpt2.pt"), corpus, "--quiet", "--parser", "none"};

  SECTION("a trailing slash names the same directory") {
    REQUIRE(run_headscan(with(base, {"-o", (work / "report").string() + "/"})).exit_code == 0);
    const CommandResult again = run_headscan(with(base, {"--force", "-o", (work / "report").string() + "/"}));
    INFO("stderr: " << again.err);
    CHECK(again.exit_code == 0);
    CHECK(fs::is_regular_file(work / "report" / "heads.json"));
    CHECK(hidden_entries(work.path()).empty());
    CHECK(hidden_entries(work / "report").empty());
  }
  SECTION("the current directory, holding the corpus") {
    const CommandResult plain = run_headscan(with(base, {"-o", (work / ".").string()}));
    CHECK(plain.exit_code == kExitBadInput);
    CHECK_THAT(plain.err, Contains("exists and is not empty"));
    const CommandResult forced = run_headscan(with(base, {"--force", "-o", (work / ".").string()}));
    CHECK(forced.exit_code == kExitBadInput);
    CHECK_THAT(forced.err, Contains("an input of this run"));
    CHECK(fs::is_regular_file(corpus));
  }
  SECTION("a dangling symbolic link") {
    fs::create_symlink(work / "nowhere", work / "link");
    const CommandResult result = run_headscan(with(base, {"-o", (work / "link").string()}));
    CHECK(result.exit_code == kExitBadInput);
    CHECK_THAT(result.err, Contains("symbolic link") && Contains("nowhere") && Contains("does not exist"));
    CHECK(fs::is_symlink(work / "link"));
    CHECK_FALSE(fs::exists(work / "nowhere"));
  }
  SECTION("a symbolic link to an earlier report: the report it points to is replaced, the link kept") {
    REQUIRE(run_headscan(with(base, {"--max-sequences", "1", "-o", (work / "real").string()})).exit_code == 0);
    fs::create_symlink(work / "real", work / "link");
    const CommandResult result = run_headscan(with(base, {"--force", "-o", (work / "link").string()}));
    INFO("stderr: " << result.err);
    REQUIRE(result.exit_code == 0);
    CHECK(fs::is_symlink(work / "link"));
    CHECK(read_json(work / "real" / "heads.json").at("corpus").at("sequences") == 4);
    CHECK(hidden_entries(work.path()).empty());
  }
  SECTION("the root directory") {
    const CommandResult result = run_headscan(with(base, {"--force", "-o", "/"}));
    CHECK(result.exit_code == kExitBadInput);
    CHECK_THAT(result.err, Contains("root directory"));
  }
  SECTION("inside an input directory: merge's shard, compare's run") {
    const std::string shard = (work / "shard").string();
    REQUIRE(run_headscan(with(base, {"--shard", "0/1", "-o", shard})).exit_code == 0);
    const CommandResult merged = run_headscan({"merge", shard, "-o", shard + "/sub", "-q"});
    CHECK(merged.exit_code == kExitBadInput);
    CHECK_THAT(merged.err, Contains("inside") && Contains("an input of this command"));
    CHECK_FALSE(fs::exists(work / "shard" / "sub"));
    REQUIRE(run_headscan({"merge", shard, "-o", (work / "merged").string(), "-q"}).exit_code == 0);
    const std::string run = (work / "merged").string();
    for (const std::string& given : {run, run + "/heads.json"}) {  // a run given as its directory or heads.json
      const CommandResult compared = run_headscan({"compare", given, "-o", run + "/deeper/sub", "-q"});
      CHECK(compared.exit_code == kExitBadInput);
      CHECK_THAT(compared.err, Contains("inside"));
      CHECK_FALSE(fs::exists(work / "merged" / "deeper"));
    }
  }
}
