// `headscan idf`: the document frequencies a run counts, written once for --idf.
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/fixtures.h"

using Catch::Matchers::Contains;
using headscan::testing::fixture;
using headscan::testing::read_file;
using headscan::testing::read_json;
using headscan::testing::run_headscan;
using headscan::testing::TempDir;

TEST_CASE("headscan idf writes the document frequencies a run counts", "[idf][e2e]") {
  TempDir dir;
  for (const auto& [model, corpus] : {std::pair<std::string, std::string>{"rare_word.pt", "rare_word_corpus.txt"},
                                      std::pair<std::string, std::string>{"syntax.pt", "syntax_gold.conllu"}}) {
    INFO(corpus);
    const auto idf = dir / (corpus + ".idf");
    const auto written = run_headscan({"idf", fixture(model), fixture(corpus), "-o", idf.string(), "-q"});
    REQUIRE(written.exit_code == 0);
    const auto report = dir / ("report-" + corpus);
    REQUIRE(run_headscan({fixture(model), fixture(corpus), "-o", report.string(), "--parser", "none", "--no-html",
                          "--no-plots", "-q"})
                .exit_code == 0);
    CHECK(read_file(idf) == read_file(report / "idf.txt"));

    // A run given the file has the same rare-word scores as one that counts the corpus itself.
    const auto with_idf = dir / ("with-idf-" + corpus);
    REQUIRE(run_headscan({fixture(model), fixture(corpus), "-o", with_idf.string(), "--idf", idf.string(), "--parser",
                          "none", "--no-html", "--no-plots", "-q"})
                .exit_code == 0);
    const auto counted = read_json(report / "heads.json");
    const auto given = read_json(with_idf / "heads.json");
    REQUIRE(counted["heads"].size() == given["heads"].size());
    for (std::size_t i = 0; i < counted["heads"].size(); ++i) {
      CHECK(counted["heads"][i]["scores"]["rare_word"] == given["heads"][i]["scores"]["rare_word"]);
      CHECK(counted["heads"][i]["labels"] == given["heads"][i]["labels"]);
    }
    CHECK(given["corpus"]["idf"]["source"] == idf.string());
    CHECK(given["corpus"]["idf"]["documents"] == counted["corpus"]["idf"]["documents"]);
  }
  // --tokenizer instead of the model's: the same tokenizer, the same file.
  const auto by_tokenizer = dir / "by-tokenizer.idf";
  REQUIRE(run_headscan({"idf", "--tokenizer", fixture("tokenizer.json"), fixture("rare_word_corpus.txt"), "-o",
                        by_tokenizer.string(), "-q"})
              .exit_code == 0);
  CHECK(read_file(by_tokenizer) == read_file(dir / "rare_word_corpus.txt.idf"));
}

TEST_CASE("headscan idf leaves what the user has", "[idf][e2e]") {
  TempDir dir;
  const std::string existing = dir.write("idf.txt", "precious\n");
  const auto refused = run_headscan({"idf", fixture("rare_word.pt"), fixture("rare_word_corpus.txt"), "-o", existing});
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("use --force to replace it") != std::string::npos);
  CHECK(read_file(existing) == "precious\n");

  const std::string corpus = dir.write("corpus.txt", "w3 w4 w5\n");
  const auto onto_input =
      run_headscan({"idf", fixture("rare_word.pt"), corpus, "-o", corpus, "--force"});
  CHECK(onto_input.exit_code == 2);
  CHECK(onto_input.err.find("-o names an input") != std::string::npos);
  CHECK(read_file(corpus) == "w3 w4 w5\n");

  const auto no_tokenizer = run_headscan({"idf", corpus, "-o", (dir / "out.txt").string()});
  CHECK(no_tokenizer.exit_code == 2);
  CHECK(no_tokenizer.err.find("give MODEL.pt and CORPUS, or --tokenizer FILE and CORPUS") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "out.txt"));

  // --force replaces an earlier document-frequency file only, never another of the user's files.
  const auto forced =
      run_headscan({"idf", fixture("rare_word.pt"), fixture("rare_word_corpus.txt"), "-o", existing, "--force", "-q"});
  CHECK(forced.exit_code == 2);
  CHECK_THAT(forced.err, Contains("is not a document-frequency file written by headscan"));
  CHECK(read_file(existing) == "precious\n");
  // ... and only a whole one: a file that starts like one and goes on with the user's text is theirs.
  const std::string notes = "headscan-idf 1\ndocuments 1\n1 \"w3\"\nmy notes\n";
  const std::string starts_like = dir.write("notes.idf", notes);
  const auto not_whole =
      run_headscan({"idf", fixture("rare_word.pt"), fixture("rare_word_corpus.txt"), "-o", starts_like, "--force", "-q"});
  CHECK(not_whole.exit_code == 2);
  CHECK_THAT(not_whole.err, Contains("is not a document-frequency file written by headscan"));
  CHECK(read_file(starts_like) == notes);

  const std::string earlier = dir.write("earlier.idf", "headscan-idf 1\ndocuments 1\n1 \"w3\"\n");
  const auto replaced =
      run_headscan({"idf", fixture("rare_word.pt"), fixture("rare_word_corpus.txt"), "-o", earlier, "--force", "-q"});
  CHECK(replaced.exit_code == 0);
  CHECK(read_file(earlier) != "headscan-idf 1\ndocuments 1\n1 \"w3\"\n");
  CHECK(read_file(earlier).rfind("headscan-idf 1\ndocuments ", 0) == 0);
  // Nothing but the files is left beside them.
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path())) ++entries;
  CHECK(entries == 4);
}

// -o is written only as a regular file or a new path: never a device, FIFO or socket (also with
// --force, also as root), never an unrelated file through a link, and a missing folder is bad
// input (exit 2), not a failure.
TEST_CASE("headscan idf writes only a regular file or a new path", "[idf][e2e]") {
  TempDir dir;
  const std::string corpus = dir.write("corpus.txt", "w3 w4 w5\nw6 w7\n");
  const std::string model = fixture("rare_word.pt");
  auto idf = [&](const std::string& out, bool force) {
    std::vector<std::string> args = {"idf", model, corpus, "-o", out, "-q"};
    if (force) args.push_back("--force");
    return run_headscan(args);
  };
  SECTION("a device node") {
    for (bool force : {false, true}) {
      const auto result = idf("/dev/null", force);
      CHECK(result.exit_code == 2);
      CHECK_THAT(result.err, Contains("/dev/null") && Contains("a character device") && Contains("regular file"));
      struct stat status {};
      REQUIRE(::stat("/dev/null", &status) == 0);
      CHECK(S_ISCHR(status.st_mode));
    }
  }
  SECTION("a FIFO") {
    const std::string fifo = (dir / "fifo").string();
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    for (bool force : {false, true}) {
      const auto result = idf(fifo, force);
      CHECK(result.exit_code == 2);
      CHECK_THAT(result.err, Contains("a pipe (FIFO)"));
      struct stat status {};
      REQUIRE(::lstat(fifo.c_str(), &status) == 0);
      CHECK(S_ISFIFO(status.st_mode));
    }
  }
  SECTION("a link to an unrelated file: both stay as they are") {
    const std::string unrelated = dir.write("notes.txt", "mine\n");
    const std::string link = (dir / "link.idf").string();
    std::filesystem::create_symlink(unrelated, link);
    const auto result = idf(link, true);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Contains("a symbolic link to") && Contains("not a document-frequency file"));
    CHECK(std::filesystem::is_symlink(link));
    CHECK(read_file(unrelated) == "mine\n");
  }
  SECTION("a link to an earlier file: that file is replaced, the link stays") {
    const std::string earlier = dir.write("earlier.idf", "headscan-idf 1\ndocuments 0\n");
    const std::string link = (dir / "link.idf").string();
    std::filesystem::create_symlink(earlier, link);
    const auto result = idf(link, true);
    CHECK(result.exit_code == 0);
    CHECK(std::filesystem::is_symlink(link));
    CHECK(read_file(earlier).rfind("headscan-idf 1\ndocuments 2\n", 0) == 0);
  }
  SECTION("a dangling link") {
    const std::string link = (dir / "dangling.idf").string();
    std::filesystem::create_symlink(dir / "nowhere" / "x.idf", link);
    const auto result = idf(link, false);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Contains("which does not exist"));
    CHECK(std::filesystem::is_symlink(link));
  }
  SECTION("a missing folder") {
    const auto result = idf((dir / "missing" / "x.idf").string(), false);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Contains("does not exist"));
    CHECK_FALSE(std::filesystem::exists(dir / "missing"));
  }
  SECTION("a directory") {
    const auto result = idf(dir.path().string(), true);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Contains("a directory"));
  }
}

TEST_CASE("headscan idf names standard input as the user gave it", "[idf][e2e]") {
  TempDir dir;
  const std::string binary = dir.write("binary.txt", std::string("w3\0w4\n", 6));
  const std::string out = (dir / "out.idf").string();
  // The command's standard input is the file: headscan idf MODEL - reads it.
  const std::string script = dir.write("run.sh", "exec \"$1\" idf \"$2\" - -o \"$3\" -q < \"$4\"\n");
  const int status = std::system(("sh " + script + " " HEADSCAN_BINARY " " + fixture("rare_word.pt") + " " + out + " " +
                                  binary + " 2> " + (dir / "err").string())
                                     .c_str());
  CHECK(WEXITSTATUS(status) == 2);
  const std::string err = read_file(dir / "err");
  CHECK_THAT(err, Contains("- (standard input): expected a UTF-8 text corpus") && Contains("NUL byte"));
  CHECK_THAT(err, !Contains("headscan-stdin-"));
  CHECK_FALSE(std::filesystem::exists(out));
}
