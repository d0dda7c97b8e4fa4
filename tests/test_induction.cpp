// Induction, duplicate-token and rare-word heads on planted circuits, with expected scores
// computed by hand from the planted patterns and the probe lengths.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "analyzer/run/analysis.h"
#include "tests/fixtures.h"

using headscan::testing::fixture;
using headscan::testing::read_json;
using headscan::testing::TempDir;

namespace {

nlohmann::json analyse(const std::string& model, const std::string& corpus, const TempDir& dir,
                       const std::string& report = "report") {
  headscan::AnalysisOptions options;
  options.model_path = model;
  options.corpus_path = corpus;
  options.output_dir = (dir / report).string();
  options.batch_size = 4;
  options.progress = false;
  options.html = false;
  options.plots = false;
  options.parser = "none";
  headscan::run_analysis(options);
  return read_json(dir / report / "heads.json");
}

const nlohmann::json& head(const nlohmann::json& report, int layer, int index) {
  const int heads = report["model"]["heads"];
  return report["heads"][layer * heads + index];
}

// A causal attention pattern on a probe BOS + R^repeats: weight from query i to key j.
using Pattern = std::function<double(int i, int j, int length)>;

// Earlier occurrences of the token at position i >= 1 of a probe with repeat length `length`.
std::vector<int> earlier(int i, int length) {
  std::vector<int> positions;
  for (int s = i - length; s >= 1; s -= length) positions.push_back(s);
  return positions;
}

// DESIGN.md induction / duplicate_token, evaluated by loops over the probes of the report.
std::pair<double, double> expected_probe_scores(const nlohmann::json& report, const Pattern& pattern) {
  double induction = 0, duplicate = 0, queries = 0;
  const int repeats = report["probes"]["repeats"];
  for (int length : report["probes"]["repeat_lengths"]) {
    for (int i = 1 + length; i < 1 + repeats * length; ++i) {
      for (int s : earlier(i, length)) {
        induction += pattern(i, s + 1, length);
        duplicate += pattern(i, s, length);
      }
      queries += 1;
    }
  }
  return {induction / queries, duplicate / queries};
}

Pattern fixed_offset(int offset) {
  return [offset](int i, int j, int) { return i >= offset ? j == i - offset : j == 0; };
}

const Pattern kUniform = [](int i, int j, int) { return j <= i ? 1.0 / (i + 1) : 0.0; };

// "L1H0"-style names of the heads that carry `label`.
std::vector<std::string> labelled(const nlohmann::json& report, const std::string& label) {
  std::vector<std::string> heads;
  for (const auto& entry : report["heads"]) {
    for (const auto& name : entry["labels"]) {
      if (name == label) {
        heads.push_back("L" + std::to_string(entry["layer"].get<int>()) + "H" + std::to_string(entry["head"].get<int>()));
      }
    }
  }
  return heads;
}

using Names = std::vector<std::string>;

}  // namespace

TEST_CASE("a planted two-layer induction circuit is found exactly", "[induction][e2e]") {
  TempDir dir;
  const auto report = analyse(fixture("induction_circuit.pt"), fixture("rare_word_corpus.txt"), dir);
  REQUIRE(report["probes"]["count"] == 10);
  REQUIRE(report["probes"]["repeats"] == 4);
  CHECK(report["probes"]["repeat_lengths"][0] == 25);

  CHECK(labelled(report, "previous-token") == Names{"L0H0"});
  CHECK(labelled(report, "induction") == Names{"L1H0"});
  CHECK(labelled(report, "duplicate-token") == Names{"L1H1"});
  CHECK(head(report, 1, 0)["primary"] == "induction");
  CHECK(head(report, 1, 1)["primary"] == "duplicate-token");

  SECTION("scores equal the definitions evaluated on the planted patterns") {
    CHECK(head(report, 1, 0)["scores"]["induction"].get<double>() == Approx(1.0).margin(0.01));
    CHECK(head(report, 1, 0)["scores"]["duplicate_token"].get<double>() == Approx(0.0).margin(0.01));
    CHECK(head(report, 1, 1)["scores"]["duplicate_token"].get<double>() == Approx(1.0).margin(0.01));
    CHECK(head(report, 1, 1)["scores"]["induction"].get<double>() == Approx(0.0).margin(0.01));
    // The head that attends 24 tokens back by position alone matches only the probe with |R| = 25.
    const auto [offset_induction, offset_duplicate] = expected_probe_scores(report, fixed_offset(24));
    CHECK(offset_induction < 0.2);
    CHECK(head(report, 1, 2)["scores"]["induction"].get<double>() == Approx(offset_induction).margin(0.01));
    CHECK(head(report, 1, 2)["scores"]["duplicate_token"].get<double>() == Approx(offset_duplicate).margin(0.01));
    const auto [uniform_induction, uniform_duplicate] = expected_probe_scores(report, kUniform);
    CHECK(head(report, 1, 3)["scores"]["induction"].get<double>() == Approx(uniform_induction).margin(0.01));
    CHECK(head(report, 1, 3)["scores"]["duplicate_token"].get<double>() == Approx(uniform_duplicate).margin(0.01));
  }
  SECTION("the model predicts repeats 2-4 from context (in-context learning)") {
    const auto losses = report["model"]["repeat_loss"].get<std::vector<double>>();
    REQUIRE(losses.size() == 4);
    CHECK(losses[0] == Approx(std::log(64.0)).margin(0.01));  // nothing to copy: uniform over 64 tokens
    for (int r = 1; r < 4; ++r) CHECK(losses[r] < losses[0] - 1.0);
    CHECK(losses[3] == Approx(0.0029).margin(0.01));
  }
  SECTION("induction on the corpus itself") {
    CHECK(head(report, 1, 0)["scores"]["induction_text"].get<double>() > 0.9);
    CHECK(head(report, 0, 3)["scores"]["induction_text"].get<double>() == Approx(0.0).margin(0.01));
  }
}

TEST_CASE("a model with max_length 40 still gets valid probes", "[induction][e2e]") {
  TempDir dir;
  const auto report = analyse(fixture("induction_short.pt"), fixture("rare_word_corpus.txt"), dir);
  CHECK(report["probes"]["count"] == 10);
  CHECK(report["probes"]["repeats"].get<int>() >= 2);
  const int longest = report["probes"]["repeat_lengths"][0];
  CHECK(1 + report["probes"]["repeats"].get<int>() * longest <= 40);
  CHECK(labelled(report, "induction") == Names{"L1H0"});
  CHECK(labelled(report, "duplicate-token") == Names{"L1H1"});
  const auto [offset_induction, offset_duplicate] = expected_probe_scores(report, fixed_offset(8));
  CHECK(head(report, 1, 2)["scores"]["induction"].get<double>() == Approx(offset_induction).margin(0.01));
  CHECK(head(report, 1, 2)["scores"]["duplicate_token"].get<double>() == Approx(offset_duplicate).margin(0.01));
}

TEST_CASE("a bidirectional model gets no induction or duplicate-token label", "[induction][e2e]") {
  TempDir dir;
  const auto report = analyse(fixture("bidirectional_circuit.pt"), fixture("rare_word_corpus.txt"), dir);
  REQUIRE(report["model"]["causal"] == false);
  CHECK(head(report, 1, 0)["scores"]["induction"].get<double>() > 0.4);  // scored, but not labelled
  CHECK(labelled(report, "induction").empty());
  CHECK(labelled(report, "duplicate-token").empty());
}

TEST_CASE("a planted rare-word head", "[induction][rare_word][e2e]") {
  TempDir dir;
  const auto report = analyse(fixture("rare_word.pt"), fixture("rare_word_corpus.txt"), dir);
  CHECK(report["corpus"]["idf"]["documents"] == 300);
  CHECK(head(report, 0, 0)["scores"]["rare_word"].get<double>() >= 0.9);
  CHECK(labelled(report, "rare-word") == Names{"L0H0"});
  CHECK(head(report, 0, 1)["scores"]["rare_word"].get<double>() < 0.5);  // uniform
  CHECK(head(report, 0, 2)["scores"]["rare_word"].get<double>() < 0.5);  // previous token
  CHECK(head(report, 0, 3)["scores"]["rare_word"].get<double>() < 0.5);  // first token

  SECTION("document frequencies round-trip through --idf") {
    headscan::AnalysisOptions options;
    options.model_path = fixture("rare_word.pt");
    options.corpus_path = dir.write("one.txt", "w3 w4 w5 w6\n");
    options.idf_path = (dir / "report" / "idf.txt").string();
    options.output_dir = (dir / "with-idf").string();
    options.progress = false;
    options.html = options.plots = false;
    headscan::run_analysis(options);
    const auto with_idf = read_json(dir / "with-idf" / "heads.json");
    CHECK(with_idf["corpus"]["idf"]["documents"] == 300);
    CHECK(with_idf["corpus"]["idf"]["source"] == options.idf_path);
  }
}

TEST_CASE("the demo model reproduces the two-layer induction result", "[induction][demo][e2e]") {
  TempDir dir;
  const std::string data = std::string(HEADSCAN_SOURCE_DIR) + "/data/";
  const auto report = analyse(data + "demo.pt", data + "demo_corpus.txt", dir);
  bool previous_token_in_layer0 = false;
  bool induction_in_layer1 = false;
  for (const auto& entry : report["heads"]) {
    const auto& scores = entry["scores"];
    if (entry["layer"] == 0 && scores["previous_token"].get<double>() >= 0.5) previous_token_in_layer0 = true;
    if (entry["layer"] == 1 && scores["induction"].get<double>() >= 0.4) induction_in_layer1 = true;
  }
  CHECK(previous_token_in_layer0);
  CHECK(induction_in_layer1);
  const auto losses = report["model"]["repeat_loss"].get<std::vector<double>>();
  REQUIRE(losses.size() == 4);
  for (int r = 1; r < 4; ++r) CHECK(losses[r] <= losses[0] - 1.0);
}
