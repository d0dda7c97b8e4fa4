// Every architecture style of the fixture models gets exactly the planted heads: scores equal to
// the definitions evaluated by hand on the planted patterns, and exact labels.
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "analyzer/run/analysis.h"
#include "tests/fixtures.h"

using headscan::testing::fixture;
using headscan::testing::read_json;
using headscan::testing::TempDir;
using headscan::testing::word_corpus;

namespace {

// Words per corpus line. The fixtures' max_length is 32 (BOS + 31 words): the 40-word line is cut
// into windows of 31 and 9 words. No sequence has 4 tokens, the width of extra_softmax's router.
const std::vector<int> kLineWords = {7, 12, 2, 20, 12, 5, 31, 1, 9, 40};

std::vector<int> sequence_lengths() {
  std::vector<int> lengths;
  for (int words : kLineWords) {
    for (int start = 0; start < words; start += 31) lengths.push_back(std::min(31, words - start) + 1);
  }
  return lengths;
}

// A planted pattern: weight from query i to key j in a sequence of n tokens.
using Pattern = std::function<double(int i, int j, int n)>;

const std::map<std::string, Pattern>& patterns() {
  static const std::map<std::string, Pattern> table = {
      {"prev", [](int i, int j, int) { return i == 0 ? j == 0 : j == i - 1; }},
      {"first", [](int, int j, int) { return j == 0; }},
      {"self", [](int i, int j, int) { return i == j; }},
      {"uniform_causal", [](int i, int j, int) { return j <= i ? 1.0 / (i + 1) : 0.0; }},
      {"uniform_bidirectional", [](int, int, int n) { return 1.0 / n; }},
      {"next", [](int i, int j, int n) { return i == n - 1 ? j == i : j == i + 1; }},
  };
  return table;
}

struct Expected {
  std::map<std::string, double> scores;
  int offset = 0;
  double offset_weight = 0;
  double argmax_rate = 0;
};

// The DESIGN.md definitions, evaluated with loops over the pattern.
Expected expected_scores(const Pattern& pattern, bool causal) {
  double previous = 0, first = 0, content = 0, self = 0, confidence = 0, distance = 0, queries = 0;
  double entropy = 0, entropy_queries = 0;
  std::map<int, std::array<double, 3>> offsets;  // d → {weight sum, argmax hits, queries}
  for (int n : sequence_lengths()) {
    for (int i = 0; i < n; ++i) {
      std::vector<double> row(n);
      for (int j = 0; j < n; ++j) row[j] = pattern(i, j, n);
      queries += 1;
      self += row[i];
      confidence += *std::max_element(row.begin(), row.end());
      const int argmax = static_cast<int>(std::max_element(row.begin(), row.end()) - row.begin());
      double h = 0;
      for (int j = 0; j < n; ++j) {
        distance += row[j] * std::abs(i - j);
        if (row[j] > 0) h -= row[j] * std::log(row[j]);
      }
      const int visible = causal ? i + 1 : n;
      if (visible >= 2) {
        entropy += h / std::log(visible);
        entropy_queries += 1;
      }
      if (i >= 1) {
        previous += row[i - 1];
        first += row[0];
        content += 1;
      }
      for (int d : {-1, 1, -2, 2}) {
        if (i + d < 0 || i + d >= n) continue;
        offsets[d][0] += row[i + d];
        offsets[d][1] += argmax == i + d;
        offsets[d][2] += 1;
      }
    }
  }
  Expected expected;
  expected.scores = {{"previous_token", previous / content}, {"first_token", first / content},
                     {"entropy", entropy / entropy_queries}, {"confidence", confidence / queries},
                     {"mean_distance", distance / queries},  {"self", self / queries}};
  expected.offset_weight = -1;
  for (int d : {-1, 1, -2, 2}) {
    const double weight = offsets[d][0] / offsets[d][2];
    if (weight > expected.offset_weight) {
      expected.offset = d;
      expected.offset_weight = weight;
      expected.argmax_rate = offsets[d][1] / offsets[d][2];
    }
  }
  return expected;
}

struct PlantedHead {
  std::string pattern;
  std::vector<std::string> labels;
};

const std::map<std::string, std::vector<std::string>> kLabels = {
    {"prev", {"previous-token", "positional"}}, {"first", {"first-token"}}, {"self", {}},
    {"uniform_causal", {"broad"}},              {"uniform_bidirectional", {"broad"}}, {"next", {"positional"}},
};

const std::vector<std::vector<std::string>> kCausalLayers = {{"prev", "first", "uniform_causal", "self"},
                                                             {"self", "prev", "first", "uniform_causal"}};
const std::vector<std::vector<std::string>> kBidirectionalLayers = {
    {"prev", "next", "uniform_bidirectional", "first"}, {"next", "uniform_bidirectional", "first", "prev"}};

nlohmann::json analyse(const std::string& model, std::int64_t batch_size, const TempDir& dir,
                       const std::string& report = "report") {
  headscan::AnalysisOptions options;
  options.model_path = fixture(model);
  options.corpus_path = dir.write("corpus.txt", word_corpus(kLineWords));
  options.output_dir = (dir / report).string();
  options.batch_size = batch_size;
  options.progress = false;
  options.html = options.plots = false;  // heads.json is what these tests examine
  options.parser = "none";
  headscan::run_analysis(options);
  return read_json(dir / report / "heads.json");
}

void check_planted_heads(const nlohmann::json& report, const std::vector<std::vector<std::string>>& layers,
                         bool causal) {
  // Two attention layers: listed with the model's paths when the graph keeps them, else counted.
  const auto& model_layers = report["model"]["layers"];
  if (model_layers.is_array()) {
    REQUIRE(model_layers.size() == 2);
    for (const auto& layer : model_layers) CHECK(layer["kind"] == "attention");
  } else {
    REQUIRE(model_layers == 2);
  }
  REQUIRE(report["model"]["heads"] == 4);
  REQUIRE(report["model"]["causal"] == causal);
  REQUIRE(report["heads"].size() == 8);
  int total = 0;
  for (int length : sequence_lengths()) total += length;
  CHECK(report["corpus"]["sequences"] == sequence_lengths().size());
  CHECK(report["corpus"]["tokens"] == total);
  for (const auto& head : report["heads"]) {
    const std::string pattern = layers[head["layer"].get<int>()][head["head"].get<int>()];
    INFO("layer " << head["layer"] << " head " << head["head"] << " planted " << pattern);
    const Expected expected = expected_scores(patterns().at(pattern), causal);
    const auto& scores = head["scores"];
    for (const auto& [name, value] : expected.scores) {
      INFO("score " << name);
      CHECK(scores[name].get<double>() == Approx(value).margin(1e-4));
    }
    CHECK(scores["positional"]["offset"] == expected.offset);
    CHECK(scores["positional"]["weight"].get<double>() == Approx(expected.offset_weight).margin(1e-4));
    if (pattern.rfind("uniform", 0) != 0) {  // argmax of a uniform row is a floating-point tie
      CHECK(scores["positional"]["argmax_rate"].get<double>() == Approx(expected.argmax_rate).margin(1e-4));
    }
    CHECK(head["labels"].get<std::vector<std::string>>() == kLabels.at(pattern));
    const auto& labels = kLabels.at(pattern);
    CHECK(head["primary"] == (labels.empty() ? "none" : labels.front()));
  }
}

}  // namespace

TEST_CASE("planted heads are found in every architecture style", "[planted][e2e]") {
  TempDir dir;
  SECTION("GPT-2 style: fused qkv, masked_fill(-inf)") {
    const auto report = analyse("gpt2.pt", 3, dir);
    check_planted_heads(report, kCausalLayers, true);
    CHECK(report["model"]["capture"] == "graph");
    CHECK(report["model"]["causal_source"] == "detected");
  }
  SECTION("LLaMA style: RoPE, RMSNorm, grouped-query attention") {
    const auto report = analyse("llama.pt", 3, dir);
    check_planted_heads(report, kCausalLayers, true);
    CHECK(report["model"]["kv_heads"] == 2);
    for (const auto& head : report["heads"]) CHECK(head["kv_group"] == head["head"].get<int>() / 2);
  }
  SECTION("LLaMA style through scaled_dot_product_attention (is_causal, scale, enable_gqa)") {
    const auto report = analyse("llama_sdpa_planted.pt", 3, dir);
    check_planted_heads(report, kCausalLayers, true);
    CHECK(report["model"]["capture"] == "graph");
    for (const auto& head : report["heads"]) CHECK(head["kv_group"] == head["head"].get<int>() / 2);
  }
  SECTION("mixture of experts: torch._grouped_mm and a router softmax over experts") {
    check_planted_heads(analyse("moe.pt", 3, dir), kCausalLayers, true);
  }
  SECTION("BERT style: bidirectional, additive mask, attention_mask input") {
    const auto report = analyse("bert.pt", 3, dir);
    check_planted_heads(report, kBidirectionalLayers, false);
    CHECK(report["model"]["forward"].get<std::string>().find("attention_mask") != std::string::npos);
  }
  SECTION("attention as [B*H,T,T] through bmm") {
    check_planted_heads(analyse("bmm.pt", 3, dir), kCausalLayers, true);
  }
  SECTION("router, vocabulary and column softmaxes are ignored") {
    check_planted_heads(analyse("extra_softmax.pt", 3, dir), kCausalLayers, true);
  }
  SECTION("HF style: attention returned by the model, no softmax in the graph") {
    const auto report = analyse("hf_returns.pt", 3, dir);
    check_planted_heads(report, kCausalLayers, true);
    CHECK(report["model"]["capture"] == "outputs");
  }
  SECTION("causality from headscan.json") {
    const auto report = analyse("gpt2_causal_meta.pt", 3, dir);
    check_planted_heads(report, kCausalLayers, true);
    CHECK(report["model"]["causal_source"] == "metadata");
  }
}

TEST_CASE("traced and scripted exports of one model give identical heads", "[planted][e2e]") {
  TempDir dir;
  const auto scripted = analyse("gpt2.pt", 4, dir, "scripted");
  const auto traced = analyse("gpt2_traced.pt", 4, dir, "traced");
  CHECK(scripted["heads"] == traced["heads"]);
  CHECK(scripted["corpus"] == traced["corpus"]);
  CHECK(scripted["thresholds"] == traced["thresholds"]);
}

TEST_CASE("batching and padding do not change the scores", "[planted][e2e]") {
  TempDir dir;
  for (const std::string model : {"gpt2.pt", "bert.pt"}) {
    INFO(model);
    const auto one = analyse(model, 1, dir, model + "-1");
    const auto padded = analyse(model, 5, dir, model + "-5");
    REQUIRE(one["heads"].size() == padded["heads"].size());
    for (size_t k = 0; k < one["heads"].size(); ++k) {
      for (const auto& [name, value] : one["heads"][k]["scores"].items()) {
        if (value.is_number()) CHECK(padded["heads"][k]["scores"][name].get<double>() == Approx(value.get<double>()).margin(1e-5));
      }
      CHECK(one["heads"][k]["labels"] == padded["heads"][k]["labels"]);
    }
  }
}

TEST_CASE("heads.json is deterministic apart from run", "[planted][e2e]") {
  TempDir dir;
  auto first = analyse("llama.pt", 3, dir, "first");
  auto second = analyse("llama.pt", 3, dir, "second");
  first.erase("run");
  second.erase("run");
  CHECK(first == second);
}

TEST_CASE("thresholds can be changed and are written to heads.json", "[planted][e2e]") {
  TempDir dir;
  headscan::AnalysisOptions options;
  options.model_path = fixture("gpt2.pt");
  options.corpus_path = dir.write("corpus.txt", word_corpus(kLineWords));
  options.output_dir = (dir / "report").string();
  options.progress = false;
  options.html = options.plots = false;
  options.parser = "none";
  options.thresholds = {{"entropy", 1.01}, {"first_token", 0.05}};
  headscan::run_analysis(options);
  const auto report = read_json(dir / "report" / "heads.json");
  CHECK(report["thresholds"]["entropy"] == 1.01);
  CHECK(report["thresholds"]["previous_token"] == 0.5);
  const auto& uniform = report["heads"][2];  // layer 0 head 2: uniform, first_token ≈ 0.22
  CHECK((uniform["labels"] == std::vector<std::string>{"first-token"}));
}
