// Streaming: peak memory does not grow with the corpus, because nothing T×T outlives its layer.
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/fixtures.h"

using namespace headscan::testing;

TEST_CASE("peak memory does not grow with the corpus", "[streaming][e2e]") {
  TempDir dir;
  const std::string small = dir.write("small.txt", word_corpus(std::vector<int>(100, 31)));
  const std::string large = dir.write("large.txt", word_corpus(std::vector<int>(6000, 31)));
  // Reports and parses are not what this measures.
  const std::vector<std::string> quick = {"-q", "--no-html", "--no-plots", "--parser", "none"};
  auto run = [&](const std::string& corpus, const std::string& out) {
    std::vector<std::string> args = {fixture("gpt2.pt"), corpus, "-o", (dir / out).string()};
    args.insert(args.end(), quick.begin(), quick.end());
    return run_headscan(args);
  };
  const auto small_run = run(small, "small");
  const auto large_run = run(large, "large");
  REQUIRE(small_run.exit_code == 0);
  REQUIRE(large_run.exit_code == 0);
  CHECK(read_json(dir / "large" / "heads.json")["corpus"]["sequences"] == 6000);
  // Keeping the attention of every sequence would cost 6000 × 2 layers × 4 heads × 32 × 32 floats
  // = 197 MB; the allowance is a tenth of that.
  INFO("peak RSS small " << small_run.max_rss_kb << " kB, large " << large_run.max_rss_kb << " kB");
  CHECK(large_run.max_rss_kb - small_run.max_rss_kb < 20 * 1024);
}
