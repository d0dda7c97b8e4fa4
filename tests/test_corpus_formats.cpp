// Corpora as large datasets ship them: JSON Lines, and gzip, zstd or xz compression, give the
// analysis exactly the documents the same plain file gives.
#include <archive.h>
#include <archive_entry.h>

#include <fstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/fixtures.h"

using Catch::Matchers::Contains;
using headscan::testing::fixture;
using headscan::testing::compressed;
using headscan::testing::read_file;
using headscan::testing::read_json;
using headscan::testing::run_headscan;
using headscan::testing::TempDir;

TEST_CASE("compressed corpora are read as the files they hold", "[corpus][compressed][e2e]") {
  TempDir dir;
  const std::vector<std::string> common{"--parser", "none", "--no-html", "--no-plots", "-q"};
  auto analyse = [&](const std::string& model, const std::string& corpus, const std::string& name) {
    std::vector<std::string> args{fixture(model), corpus, "-o", (dir / name).string()};
    args.insert(args.end(), common.begin(), common.end());
    const auto result = run_headscan(args);
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    return read_json(dir / name / "heads.json");
  };
  struct Format {
    const char* extension;
    int filter;
  };
  for (const auto& [model, corpus] : {std::pair<std::string, std::string>{"rare_word.pt", "rare_word_corpus.txt"},
                                      std::pair<std::string, std::string>{"syntax.pt", "syntax_gold.conllu"}}) {
    const auto plain = analyse(model, fixture(corpus), "plain-" + corpus);
    for (const Format& format :
         {Format{".gz", ARCHIVE_FILTER_GZIP}, Format{".zst", ARCHIVE_FILTER_ZSTD}, Format{".xz", ARCHIVE_FILTER_XZ}}) {
      INFO(corpus << format.extension);
      const std::string path = dir.write(corpus + format.extension, compressed(read_file(fixture(corpus)), format.filter));
      const auto report = analyse(model, path, "report-" + corpus + format.extension);
      CHECK(report["heads"] == plain["heads"]);
      CHECK(report["corpus"]["format"] == plain["corpus"]["format"]);
      for (const char* count : {"lines", "documents", "sequences", "tokens", "sentences"}) {
        CHECK(report["corpus"][count] == plain["corpus"][count]);
      }
    }
  }
  // Damaged data: cut short, or only the first bytes of gzip.
  const std::string whole = compressed(read_file(fixture("rare_word_corpus.txt")), ARCHIVE_FILTER_GZIP);
  const std::string cut = dir.write("cut.txt.gz", whole.substr(0, whole.size() / 2));
  const auto cut_run = run_headscan({fixture("rare_word.pt"), cut, "-o", (dir / "cut").string(), "-q"});
  CHECK(cut_run.exit_code == 2);
  CHECK(cut_run.err.find("gzip") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "cut"));
  const std::string fake = dir.write("fake.txt.gz", std::string("\x1F\x8B") + "w3 w4 w5\n");
  const auto fake_run = run_headscan({fixture("rare_word.pt"), fake, "-o", (dir / "fake").string(), "-q"});
  CHECK(fake_run.exit_code == 2);
  CHECK(fake_run.err.find("its first bytes are those of gzip data, but it is not gzip") != std::string::npos);
}

// Damage is named with the line after which the stream broke; data after the end of a stream is
// damage for gzip as for xz and zstd.
TEST_CASE("damaged compressed corpora are refused naming the line after which they broke", "[corpus][compressed][e2e]") {
  TempDir dir;
  std::string text;
  for (int line = 1; line <= 200000; ++line) text += "w3 w4 w" + std::to_string(5 + line % 50) + "\n";
  struct Format {
    const char* extension;
    int filter;
  };
  for (const Format& format :
       {Format{".gz", ARCHIVE_FILTER_GZIP}, Format{".zst", ARCHIVE_FILTER_ZSTD}, Format{".xz", ARCHIVE_FILTER_XZ}}) {
    INFO(format.extension);
    const std::string whole = compressed(text, format.filter);
    auto refused = [&](const std::string& name, const std::string& data) {
      const std::string path = dir.write(name + format.extension, data);
      const std::string out = (dir / (name + format.extension + "-report")).string();
      const auto result = run_headscan({fixture("rare_word.pt"), path, "-o", out, "-q", "--parser", "none"});
      INFO(result.err);
      CHECK(result.exit_code == 2);
      CHECK_FALSE(std::filesystem::exists(out));
      return result.err;
    };
    const std::string trailing = refused("trailing", whole + "garbage\n");
    CHECK_THAT(trailing, Contains("damaged after line"));
    if (format.filter == ARCHIVE_FILTER_GZIP) CHECK_THAT(trailing, Contains("after the end of the gzip stream"));
    // Cut at two thirds: the lines before the cut were read, and the message says how many.
    const std::string cut = refused("cut", whole.substr(0, whole.size() * 2 / 3));
    const std::size_t at = cut.find("damaged after line ");
    REQUIRE(at != std::string::npos);
    const long line = std::stol(cut.substr(at + 19));
    CHECK(line > 10000);
    CHECK(line < 200000);
  }
  // Two gzip members one after the other are one stream (as gzip -d reads them), not damage.
  const std::string twice = dir.write("twice.txt.gz", compressed(text, ARCHIVE_FILTER_GZIP) + compressed(text, ARCHIVE_FILTER_GZIP));
  const auto result = run_headscan({"idf", fixture("rare_word.pt"), twice, "-o", (dir / "twice.idf").string(), "-q"});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  CHECK(read_file(dir / "twice.idf").rfind("headscan-idf 1\ndocuments 400000\n", 0) == 0);
}

// Formats whose lines or sentences must be held whole to be parsed have a bound, so that a small
// compressed file cannot make headscan hold gigabytes.
TEST_CASE("a compressed JSON Lines line or CoNLL-U sentence without end is refused in bounded memory",
          "[corpus][compressed][e2e]") {
  TempDir dir;
  const std::string jsonl = dir.write(
      "huge.jsonl.zst", compressed("{\"text\": \"" + std::string(70u << 20, 'a') + "\"}\n", ARCHIVE_FILTER_ZSTD));
  std::string sentence;
  for (int word = 1; word <= 120000; ++word) sentence += std::to_string(word) + "\tw3\t_\t_\t_\t_\t0\troot\t_\t_\n";
  const std::string conllu = dir.write("endless.conllu.zst", compressed(sentence, ARCHIVE_FILTER_ZSTD));
  struct Bomb {
    std::string corpus;
    std::string message;  // what it says, after the file and line
  };
  for (const Bomb& bomb : {Bomb{jsonl, ":1: expected a UTF-8 JSON Lines corpus (one object per line), found a line "
                                       "longer than 64 MiB"},
                           Bomb{conllu, ":100001: expected a UTF-8 CoNLL-U file (Universal Dependencies), found a "
                                        "sentence of more than 100000 word lines (it starts on line 1)"}}) {
    INFO(bomb.corpus);
    const std::string out = (dir / "out").string();
    const auto result = run_headscan({fixture("rare_word.pt"), bomb.corpus, "-o", out, "-q", "--parser", "none"});
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Contains(bomb.message));
    CHECK_FALSE(std::filesystem::exists(out));
    CHECK(result.max_rss_kb < 1200 * 1024);  // LibTorch's own 0.5 GB, the line's 0.2 GB at most
  }
}

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
  CHECK(read_file(idf) == read_file(dir / "text" / "idf.txt"));

  const auto wrong_field = run_headscan({fixture("rare_word.pt"), (dir / "corpus.jsonl").string(), "-o",
                                         (dir / "wrong").string(), "-q"});
  CHECK(wrong_field.exit_code == 2);
  CHECK(wrong_field.err.find("corpus.jsonl:1: expected JSON Lines") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "wrong"));
}
