// Corpora as large datasets ship them: JSON Lines gives the analysis exactly the documents the same
// text as plain lines gives.
#include <fstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/fixtures.h"

using headscan::testing::fixture;
using headscan::testing::read_json;
using headscan::testing::run_headscan;
using headscan::testing::TempDir;

TEST_CASE("a JSON Lines corpus is analysed as the same lines of plain text", "[corpus][jsonl][e2e]") {
  TempDir dir;
  std::ifstream text(fixture("rare_word_corpus.txt"));
  std::ofstream jsonl(dir / "corpus.jsonl");
  std::size_t lines = 0;
  for (std::string line; std::getline(text, line);) {
    jsonl << nlohmann::json{{"id", lines++}, {"content", line}}.dump() << "\n";
  }
  jsonl.close();
  const std::vector<std::string> common{"--parser", "none", "--no-html", "--no-plots", "-q"};
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.end(), common.begin(), common.end());
    const auto result = run_headscan(args);
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
  };
  run({fixture("rare_word.pt"), fixture("rare_word_corpus.txt"), "-o", (dir / "text").string()});
  run({fixture("rare_word.pt"), (dir / "corpus.jsonl").string(), "--text-field", "content", "-o",
       (dir / "jsonl").string()});
  const auto from_text = read_json(dir / "text" / "heads.json");
  const auto from_jsonl = read_json(dir / "jsonl" / "heads.json");
  CHECK(from_jsonl["corpus"]["format"] == "jsonl");
  CHECK(from_text["heads"] == from_jsonl["heads"]);
  for (const char* count : {"lines", "documents", "sequences", "tokens"}) {
    CHECK(from_text["corpus"][count] == from_jsonl["corpus"][count]);
  }
  // The idf command reads it the same way.
  const auto idf = dir / "corpus.idf";
  REQUIRE(run_headscan({"idf", fixture("rare_word.pt"), (dir / "corpus.jsonl").string(), "--text-field", "content",
                        "-o", idf.string(), "-q"})
              .exit_code == 0);
  std::ifstream a(idf);
  std::ifstream b(dir / "text" / "idf.txt");
  CHECK(std::string(std::istreambuf_iterator<char>(a), {}) == std::string(std::istreambuf_iterator<char>(b), {}));

  const auto wrong_field = run_headscan({fixture("rare_word.pt"), (dir / "corpus.jsonl").string(), "-o",
                                         (dir / "wrong").string(), "-q"});
  CHECK(wrong_field.exit_code == 2);
  CHECK(wrong_field.err.find("corpus.jsonl:1: expected JSON Lines") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "wrong"));
}
