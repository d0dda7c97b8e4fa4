// `headscan idf`: the document frequencies a run counts, written once for --idf.
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/fixtures.h"

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

  const auto replaced =
      run_headscan({"idf", fixture("rare_word.pt"), fixture("rare_word_corpus.txt"), "-o", existing, "--force", "-q"});
  CHECK(replaced.exit_code == 0);
  CHECK(read_file(existing) != "precious\n");
  // Nothing but the file is left beside it.
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path())) ++entries;
  CHECK(entries == 2);
}
