// Streaming: peak memory does not grow with the corpus, because nothing T×T outlives its layer.
#include <archive.h>

#include <fstream>
#include <string>
#include <utility>
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

// A long line costs what is analysed of it: tokenized piece by piece (cut at whitespace), only as
// far as --max-sequences needs, while its document frequencies still count all of it.
TEST_CASE("a long line is tokenized only as far as the analysis needs", "[streaming][e2e]") {
  TempDir dir;
  // One line of 2,000,000 words (about 7.6 MB) from w3..w63.
  const std::string corpus = dir.write("long.txt", word_corpus({2000000}));
  const CommandResult result = run_headscan({fixture("gpt2.pt"), corpus, "-o", (dir / "out").string(), "-q",
                                             "--no-html", "--no-plots", "--parser", "none", "--max-sequences", "3"});
  INFO("stderr: " << result.err << "peak RSS " << result.max_rss_kb << " kB");
  REQUIRE(result.exit_code == 0);
  const auto document = read_json(dir / "out" / "heads.json");
  CHECK(document["corpus"]["sequences"] == 3);
  CHECK(document["corpus"]["tokens"] == 96);  // 3 windows of BOS + 31 words
  // Every word of the line has document frequency 1 (the idf pass counts the part of the line the
  // analysis reads: its first 256 KiB hold every word).
  std::ifstream idf(dir / "out" / "idf.txt");
  std::string line;
  std::getline(idf, line);
  std::getline(idf, line);
  CHECK(line == "documents 1");
  int pieces = 0;
  while (std::getline(idf, line)) pieces += line.rfind("1 \"w", 0) == 0;
  CHECK(pieces == 61);  // w3..w63
  // Tokenizing the whole line at once held about 100 bytes per byte of text (760 MB here). Against
  // the same run on a short line: LibTorch alone maps about 480 MB (its CUDA libraries included).
  const std::string short_corpus = dir.write("short.txt", word_corpus({200}));
  const CommandResult baseline = run_headscan({fixture("gpt2.pt"), short_corpus, "-o", (dir / "short").string(), "-q",
                                               "--no-html", "--no-plots", "--parser", "none", "--max-sequences", "3"});
  INFO("peak RSS on a short line " << baseline.max_rss_kb << " kB");
  REQUIRE(baseline.exit_code == 0);
  CHECK(result.max_rss_kb - baseline.max_rss_kb < 240 * 1024);
}

// A long line from a compressed stream is read in the parts a plain file's is: never held whole.
// A few kilobytes that expand to 200 MB of one line take no more memory than a short corpus, and
// the absurd expansion is named in a warning.
TEST_CASE("a long line in a compressed corpus is read in parts, in bounded memory", "[streaming][compressed][e2e]") {
  TempDir dir;
  const std::string words = word_corpus({2000000});
  const std::string plain = dir.write("long.txt", words);
  const std::string packed = dir.write("long.txt.zst", headscan::testing::compressed(words, ARCHIVE_FILTER_ZSTD));
  const std::vector<std::string> options = {"-q", "--no-html", "--no-plots", "--parser", "none", "--max-sequences", "3"};
  auto analyse = [&](const std::string& corpus, const std::string& name) {
    std::vector<std::string> args = {fixture("gpt2.pt"), corpus, "-o", (dir / name).string()};
    args.insert(args.end(), options.begin(), options.end());
    const CommandResult result = run_headscan(args);
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    return result;
  };
  analyse(plain, "plain");
  analyse(packed, "packed");
  auto from_plain = read_json(dir / "plain" / "heads.json");
  auto from_packed = read_json(dir / "packed" / "heads.json");
  CHECK(from_packed["heads"] == from_plain["heads"]);
  CHECK(headscan::testing::read_file(dir / "packed" / "idf.txt") == headscan::testing::read_file(dir / "plain" / "idf.txt"));

  // 200 MB of one letter, no line break: zstd makes it a few kilobytes.
  const std::string bomb = dir.write("bomb.txt.zst", headscan::testing::compressed(std::string(200'000'000, 'a'), ARCHIVE_FILTER_ZSTD));
  REQUIRE(std::filesystem::file_size(bomb) < 100'000);
  const CommandResult short_run = analyse(dir.write("short.txt", word_corpus({200})), "short");
  const CommandResult bomb_run = analyse(bomb, "bomb");
  INFO("peak RSS " << bomb_run.max_rss_kb << " kB against " << short_run.max_rss_kb << " kB");
  CHECK(bomb_run.max_rss_kb - short_run.max_rss_kb < 100 * 1024);
  const CommandResult counted = run_headscan({"idf", fixture("gpt2.pt"), bomb, "-o", (dir / "bomb.idf").string(), "-q"});
  INFO(counted.err);
  CHECK(counted.exit_code == 0);
  CHECK_THAT(counted.err, Catch::Matchers::Contains("expand") && Catch::Matchers::Contains("-fold") &&
                              Catch::Matchers::Contains("decompression bomb"));
  CHECK(counted.max_rss_kb - short_run.max_rss_kb < 100 * 1024);
}

// Without --max-sequences a long line is analysed to its end, its windows handed on as each part
// of it is read (tests/test_sequences.cpp measures the reader's memory on a 32 MB line): every
// window counted, the same from a compressed file as from a plain one.
TEST_CASE("a long line is analysed to its end without --max-sequences", "[streaming][compressed][e2e]") {
  TempDir dir;
  // One line of 1.07 MB, read in parts: 42,000 words of 30 letters the tokenizer does not know
  // (<unk> each) and, every fifth word, w7.
  std::string line;
  for (int word = 0; word < 42000; ++word) {
    line += word % 5 == 0 ? std::string("w7") : std::string(30, static_cast<char>('a' + word % 26));
    line += ' ';
  }
  REQUIRE(line.size() > 1'048'576);
  const std::string plain = dir.write("long.txt", "w3 w4\n" + line + "\nw5 w6\n");
  const std::string packed =
      dir.write("long.txt.zst", headscan::testing::compressed("w3 w4\n" + line + "\nw5 w6\n", ARCHIVE_FILTER_ZSTD));
  for (const auto& [corpus, name] : {std::pair{plain, "plain"}, std::pair{packed, "packed"}}) {
    const CommandResult result = run_headscan({fixture("gpt2.pt"), corpus, "-o", (dir / name).string(), "-q",
                                               "--no-html", "--no-plots", "--parser", "none"});
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
  }
  const auto from_plain = read_json(dir / "plain" / "heads.json");
  const auto from_packed = read_json(dir / "packed" / "heads.json");
  // Windows of BOS + 31 tokens: the short lines one each, the long line ceil(42000 / 31).
  CHECK(from_plain["corpus"]["sequences"] == 2 + 1355);
  CHECK(from_plain["corpus"]["tokens"] == 2 * 3 + 42000 + 1355);
  CHECK(from_packed["heads"] == from_plain["heads"]);
  CHECK(from_packed["corpus"]["tokens"] == from_plain["corpus"]["tokens"]);
}
