// The causal passes (--ablation): importance from gradients of per-sequence head scales, exact
// single-head ablation, the pruning curve and circuits, on fixture models whose answers are known
// by construction (tests/fixtures/make_ablation_models.py, make_circuit_models.py).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/run/passes/ablation.h"
#include "analyzer/run/run_state.h"
// LibTorch's glog defines CHECK as an abort; the tests mean Catch's.
#undef CHECK
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/fixtures.h"

using headscan::testing::fixture;
using headscan::testing::read_json;
using headscan::testing::run_headscan;
using headscan::testing::TempDir;

namespace {

nlohmann::json analyse_with_ablation(const std::string& model, const std::string& corpus, const TempDir& dir,
                                     const std::vector<std::string>& extra = {}, const std::string& report = "report") {
  std::vector<std::string> args{model, corpus, "-o", (dir / report).string(), "--ablation", "--parser", "none",
                                "--no-html", "--no-plots", "-q"};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto result = run_headscan(args);
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  return read_json(dir / report / "heads.json");
}

const nlohmann::json& head_of(const nlohmann::json& report, int layer, int head) {
  const int heads = report["model"]["heads"];
  return report["heads"][static_cast<std::size_t>(layer * heads + head)];
}

std::vector<std::string> corpus_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

std::size_t word_count(const std::string& line) {
  std::istringstream words(line);
  return static_cast<std::size_t>(std::distance(std::istream_iterator<std::string>(words), {}));
}

// Every number the causal passes write, in a fixed order, for comparing runs.
std::vector<double> causal_numbers(const nlohmann::json& report) {
  std::vector<double> numbers{report["ablation"]["loss"].get<double>()};
  for (const auto& point : report["ablation"]["pruning"]["points"]) {
    numbers.push_back(point["importance_order"]);
    for (double loss : point["random_orders"]) numbers.push_back(loss);
  }
  for (const auto& head : report["heads"]) {
    for (const char* key : {"importance", "importance_layer_normalized", "ablation_loss"}) numbers.push_back(head["scores"][key]);
  }
  return numbers;
}

// A run's state set up as run_analysis does, with the first `count` lines of `corpus` as the
// ablation set, for testing the runner directly.
struct Runner {
  headscan::AnalysisOptions options;
  headscan::RunState state{options};

  Runner(const std::string& model, const std::string& corpus, std::size_t count, std::int64_t batch_size) {
    options.model_path = model;
    options.batch_size = batch_size;
    state.model = headscan::InstrumentedModel::load(model);
    state.text = headscan::resolve_text_setup(headscan::TextSources{
        "", model, state.model->embedded_tokenizer(), &state.model->metadata(), 0});
    state.pad_id = state.text.bos->id;
    const auto lines = corpus_lines(corpus);
    std::vector<headscan::Sequence> sequences;
    for (std::size_t line = 0; line < count; ++line) {
      auto made = headscan::make_sequences(state.text.tokenizer->encode(lines[line]), *state.text.tokenizer,
                                           state.text.shape, line + 1);
      sequences.push_back(made.front());
    }
    state.shape = headscan::detect_model_shape(*state.model, sequences.front().ids);
    state.objective = headscan::choose_ablation_objective(state);
    for (std::size_t index = 0; index < sequences.size(); ++index) {
      state.ablation_items.push_back(*headscan::make_ablation_item(sequences[index], *state.objective, index, 0));
    }
  }
};

}  // namespace

TEST_CASE("a head that writes nothing has importance and ablation effect exactly 0", "[ablation][e2e]") {
  TempDir dir;
  const auto report = analyse_with_ablation(fixture("ablation_lm.pt"), fixture("ablation_corpus.txt"), dir);
  const auto& silent = head_of(report, 1, 2)["scores"];
  CHECK(silent["importance"].get<double>() == 0.0);
  CHECK(silent["importance_layer_normalized"].get<double>() == 0.0);
  CHECK(silent["ablation_loss"].get<double>() == 0.0);
  for (const auto& head : report["heads"]) {
    if (head["layer"] == 1 && head["head"] == 2) continue;
    INFO("L" << head["layer"] << "H" << head["head"]);
    CHECK(head["scores"]["importance"].get<double>() > 0.01);
    CHECK(head["scores"]["ablation_loss"].get<double>() != 0.0);
  }
  // The ℓ2 norm of a layer's normalized importances is 1.
  for (int layer = 0; layer < 2; ++layer) {
    double squares = 0;
    for (int h = 0; h < 4; ++h) squares += std::pow(head_of(report, layer, h)["scores"]["importance_layer_normalized"].get<double>(), 2);
    CHECK(squares == Approx(1.0).epsilon(1e-12));
  }
  const auto& ablation = report["ablation"];
  CHECK(ablation["objective"] == "next-token");
  CHECK(ablation["requested_sequences"] == 32);
  // 24 lines of at most 30 words: one sequence each, BOS + words, every word predicted.
  const auto lines = corpus_lines(fixture("ablation_corpus.txt"));
  std::size_t words = 0;
  for (const auto& line : lines) words += word_count(line);
  CHECK(ablation["sequences"] == lines.size());
  CHECK(ablation["predictions"] == words);
}

TEST_CASE("the gradient in a head's scale equals a finite difference of the loss", "[ablation][e2e]") {
  // Four sequences in one batch: each sequence's gradient must be its own, so the per-item finite
  // differences are compared with the per-item gradients through their mean absolute value.
  Runner runner(fixture("ablation_lm.pt"), fixture("ablation_corpus.txt"), 4, 4);
  headscan::AblationRunner ablation(runner.state);
  std::vector<double> importance_sums;
  std::vector<double> losses;
  ablation.gradients(importance_sums, losses);
  const std::size_t heads = importance_sums.size();
  REQUIRE(heads == 8);
  // Central differences: the error is O(step²) (the planted attention is sharp, so the third
  // derivative is large) plus float32 noise over 2·step; 0.003 keeps both well under 1e-3.
  constexpr float kStep = 0.003F;
  std::vector<headscan::HeadFactors> settings;
  for (std::size_t head = 0; head < heads; ++head) {
    for (const float factor : {1.0F + kStep, 1.0F - kStep}) {
      headscan::HeadFactors factors(heads, 1.0F);
      factors[head] = factor;
      settings.push_back(factors);
    }
  }
  settings.emplace_back(heads, 1.0F);
  const auto scaled = ablation.losses(settings);
  for (std::size_t item = 0; item < losses.size(); ++item) CHECK(scaled.back()[item] == Approx(losses[item]).epsilon(1e-6));
  for (std::size_t head = 0; head < heads; ++head) {
    double mean_abs = 0;
    for (std::size_t item = 0; item < losses.size(); ++item) {
      mean_abs += std::abs(scaled[2 * head][item] - scaled[2 * head + 1][item]) / (2.0 * kStep);
    }
    mean_abs /= static_cast<double>(losses.size());
    INFO("head " << head);
    CHECK(importance_sums[head] / static_cast<double>(losses.size()) == Approx(mean_abs).epsilon(1e-3).margin(1e-9));
  }
}

TEST_CASE("batching and padding do not change the causal evidence", "[ablation][e2e]") {
  TempDir dir;
  for (const std::string model : {"ablation_lm.pt", "ablation_mlm.pt"}) {
    INFO(model);
    const auto one = analyse_with_ablation(fixture(model), fixture("ablation_corpus.txt"), dir, {"--batch-size", "1"}, model + "1");
    const auto three = analyse_with_ablation(fixture(model), fixture("ablation_corpus.txt"), dir, {"--batch-size", "3"}, model + "3");
    const auto sixteen = analyse_with_ablation(fixture(model), fixture("ablation_corpus.txt"), dir, {"--batch-size", "16"}, model + "16");
    const auto a = causal_numbers(one);
    const auto b = causal_numbers(three);
    const auto c = causal_numbers(sixteen);
    REQUIRE(a.size() == b.size());
    REQUIRE(a.size() == c.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      CHECK(std::abs(a[i] - b[i]) <= 1e-5);
      CHECK(std::abs(a[i] - c[i]) <= 1e-5);
    }
  }
}

TEST_CASE("the masked-LM objective masks 15 percent of the non-special tokens, seeded", "[ablation][e2e]") {
  TempDir dir;
  const auto report = analyse_with_ablation(fixture("ablation_mlm.pt"), fixture("ablation_corpus.txt"), dir,
                                            {"--ablation-sequences", "10"});
  const auto& ablation = report["ablation"];
  CHECK(ablation["objective"] == "masked-lm");
  CHECK(ablation["mask_token"] == "[MASK]");
  CHECK(ablation["sequences"] == 10);
  const auto lines = corpus_lines(fixture("ablation_corpus.txt"));
  std::int64_t expected = 0;
  for (std::size_t line = 0; line < 10; ++line) {
    expected += std::max<std::int64_t>(1, std::llround(0.15 * static_cast<double>(word_count(lines[line]))));
  }
  CHECK(ablation["predictions"] == expected);
  CHECK(head_of(report, 1, 2)["scores"]["importance"].get<double>() == 0.0);
  CHECK(head_of(report, 0, 0)["scores"]["importance"].get<double>() > 0.01);

  const auto reseeded = analyse_with_ablation(fixture("ablation_mlm.pt"), fixture("ablation_corpus.txt"), dir,
                                              {"--ablation-sequences", "10", "--seed", "5"}, "reseeded");
  CHECK(reseeded["ablation"]["predictions"] == expected);
  CHECK(reseeded["ablation"]["loss"].get<double>() != ablation["loss"].get<double>());
  const auto again = analyse_with_ablation(fixture("ablation_mlm.pt"), fixture("ablation_corpus.txt"), dir,
                                           {"--ablation-sequences", "10", "--seed", "5"}, "again");
  CHECK(again["ablation"]["loss"].get<double>() == reseeded["ablation"]["loss"].get<double>());
}

TEST_CASE("pruning removes the least important heads first, 10 percent of the heads per step", "[ablation][e2e]") {
  TempDir dir;
  const auto report = analyse_with_ablation(fixture("ablation_lm.pt"), fixture("ablation_corpus.txt"), dir);
  const auto& pruning = report["ablation"]["pruning"];
  const auto& points = pruning["points"];
  REQUIRE(points.size() == 11);
  CHECK(pruning["random_orders"] == 3);
  for (std::size_t step = 0; step < points.size(); ++step) {
    CHECK(points[step]["removed"] == std::llround(static_cast<double>(step) * 8 / 10.0));
    CHECK(points[step]["random_orders"].size() == 3);
  }
  const double loss = report["ablation"]["loss"];
  CHECK(points[0]["importance_order"].get<double>() == loss);
  // Step 1 removes one head, the least important: L1H2, which writes nothing.
  CHECK(points[1]["removed"] == 1);
  CHECK(points[1]["importance_order"].get<double>() == Approx(loss).epsilon(1e-9));
  // Step 2 removes two: L1H2 and the next least important, whose single ablation is known.
  double lowest = 1e9;
  int lowest_head = -1;
  for (const auto& head : report["heads"]) {
    const double importance = head["scores"]["importance"];
    if (importance > 0 && importance < lowest) {
      lowest = importance;
      lowest_head = head["layer"].get<int>() * 4 + head["head"].get<int>();
    }
  }
  const double single = report["heads"][static_cast<std::size_t>(lowest_head)]["scores"]["ablation_loss"];
  CHECK(points[2]["importance_order"].get<double>() == Approx(loss + single).margin(1e-5));
  // Every head removed is the same model whatever the order.
  for (double random : points[10]["random_orders"]) CHECK(random == points[10]["importance_order"].get<double>());
}

TEST_CASE("the ablation set is the first N sequences of the corpus", "[ablation][e2e]") {
  TempDir dir;
  const auto report = analyse_with_ablation(fixture("ablation_lm.pt"), fixture("ablation_corpus.txt"), dir,
                                            {"--ablation-sequences", "5"});
  const auto lines = corpus_lines(fixture("ablation_corpus.txt"));
  std::size_t words = 0;
  for (std::size_t line = 0; line < 5; ++line) words += word_count(lines[line]);
  CHECK(report["ablation"]["sequences"] == 5);
  CHECK(report["ablation"]["predictions"] == words);
  CHECK(report["corpus"]["sequences"] == lines.size());  // the corpus pass still reads everything
}

TEST_CASE("models the causal passes cannot measure are refused before the corpus pass", "[ablation][e2e]") {
  TempDir dir;
  struct Refusal {
    std::string model;
    std::string says;
  };
  for (const Refusal& refusal : {Refusal{"ablation_hidden.pt", "the model returns [batch, tokens, 16] (hidden states: no "
                                                         "language-model head)"},
                                 Refusal{"random_bert.pt", "the tokenizer has no mask token"},
                                 Refusal{"bert.pt", "the tokenizer has no mask token"},
                                 Refusal{"hf_returns.pt", "so they cannot be scaled"}}) {
    INFO(refusal.model);
    const auto out = dir / ("out-" + refusal.model);
    const auto result = run_headscan({fixture(refusal.model), fixture("ablation_corpus.txt"), "-o", out.string(),
                                      "--ablation", "-q"});
    CHECK(result.exit_code == 2);
    CHECK(result.err.find(refusal.says) != std::string::npos);
    CHECK(result.err.find("or run without --ablation") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(out));
    // Without --ablation the same model runs.
    CHECK(run_headscan({fixture(refusal.model), fixture("ablation_corpus.txt"), "-o", out.string(), "-q", "--parser",
                        "none", "--no-html", "--no-plots"})
              .exit_code == 0);
  }
  const auto zero = run_headscan({fixture("ablation_lm.pt"), fixture("ablation_corpus.txt"), "-o",
                                  (dir / "zero").string(), "--ablation", "--ablation-sequences", "0"});
  CHECK(zero.exit_code == 2);
  CHECK(zero.err.find("--ablation-sequences") != std::string::npos);
}

TEST_CASE("every fixture style runs with --ablation", "[ablation][e2e]") {
  TempDir dir;
  // Scripted, traced, grouped-query, bmm-style and BERT-style models. The planted fixtures' heads
  // write nothing (zero output projections), so every head's importance and effect is exactly 0.
  for (const std::string model : {"gpt2.pt", "gpt2_traced.pt", "llama.pt", "bmm.pt"}) {
    INFO(model);
    const auto report = analyse_with_ablation(fixture(model), fixture("ablation_corpus.txt"), dir, {}, model);
    REQUIRE(report["heads"].size() == 8);
    for (const auto& head : report["heads"]) {
      CHECK(head["scores"]["importance"].get<double>() == 0.0);
      CHECK(head["scores"]["ablation_loss"].get<double>() == 0.0);
    }
    CHECK(report["ablation"]["pruning"]["points"].size() == 11);
  }
  const auto bert = analyse_with_ablation(fixture("ablation_mlm.pt"), fixture("ablation_corpus.txt"), dir, {}, "mlm");
  CHECK(bert["model"]["causal"] == false);
  CHECK(bert["ablation"]["objective"] == "masked-lm");
}

TEST_CASE("a planted induction head depends on its previous-token head", "[ablation][induction][e2e]") {
  // induction_circuit.pt: L0H0 writes the previous token's identity, which L1H0 (induction) reads;
  // L1H0's output is the model's only prediction (make_circuit_models.py).
  TempDir dir;
  const auto report = analyse_with_ablation(fixture("induction_circuit.pt"), fixture("rare_word_corpus.txt"), dir);
  const auto& induction = head_of(report, 1, 0);
  REQUIRE(induction.contains("circuit"));
  const auto& circuit = induction["circuit"];
  CHECK(circuit["score"] == "induction");
  CHECK(circuit["baseline"] == induction["scores"]["induction"]);
  const auto& depends_on = circuit["depends_on"];
  REQUIRE(depends_on.size() >= 1);
  CHECK(depends_on[0]["layer"] == 0);
  CHECK(depends_on[0]["head"] == 0);
  CHECK(depends_on[0]["drop"].get<double>() >= 0.5);
  for (std::size_t i = 1; i < depends_on.size(); ++i) CHECK(depends_on[i]["drop"] <= depends_on[i - 1]["drop"]);
  CHECK(induction["scores"]["ablation_repeat_loss"].get<double>() > 1.0);
  // Heads without an induction or duplicate-token label have no circuit.
  CHECK_FALSE(head_of(report, 0, 1).contains("circuit"));
  CHECK_FALSE(head_of(report, 0, 0)["scores"].contains("ablation_repeat_loss"));
}

TEST_CASE("the demo model's induction head needs its previous-token head", "[ablation][demo][e2e]") {
  TempDir dir;
  const std::string data = std::string(HEADSCAN_SOURCE_DIR) + "/data/";
  const auto report = analyse_with_ablation(data + "demo.pt", data + "demo_corpus.txt", dir);
  int induction_heads = 0;
  for (const auto& head : report["heads"]) {
    const auto& labels = head["labels"];
    if (std::find(labels.begin(), labels.end(), "induction") == labels.end()) continue;
    ++induction_heads;
    INFO("L" << head["layer"] << "H" << head["head"]);
    const auto& strongest = head["circuit"]["depends_on"].at(0);
    CHECK(strongest["layer"] == 0);
    const auto& source = head_of(report, strongest["layer"], strongest["head"]);
    const auto& source_labels = source["labels"];
    CHECK(std::find(source_labels.begin(), source_labels.end(), "previous-token") != source_labels.end());
    CHECK(strongest["drop"].get<double>() >= 0.5);
    CHECK(head["scores"]["ablation_repeat_loss"].get<double>() > 1.0);
  }
  CHECK(induction_heads >= 1);
}

TEST_CASE("without --ablation heads.json has no causal evidence", "[ablation][e2e]") {
  TempDir dir;
  const auto result = run_headscan({fixture("induction_circuit.pt"), fixture("rare_word_corpus.txt"), "-o",
                                    (dir / "plain").string(), "--parser", "none", "--no-html", "--no-plots", "-q"});
  REQUIRE(result.exit_code == 0);
  const auto report = read_json(dir / "plain" / "heads.json");
  CHECK_FALSE(report.contains("ablation"));
  for (const auto& head : report["heads"]) {
    CHECK_FALSE(head.contains("circuit"));
    CHECK_FALSE(head["scores"].contains("importance"));
    CHECK_FALSE(head["scores"].contains("ablation_loss"));
  }
  std::vector<std::string> phases = {"load", "shape", "idf", "corpus", "probes", "needles", "reports"};
  std::vector<std::string> found;
  for (const auto& [name, seconds] : report["run"]["phases"].items()) found.push_back(name);
  std::sort(phases.begin(), phases.end());
  CHECK(found == phases);  // nlohmann::json sorts its keys
}

TEST_CASE("a model without a language-model head says what its report lacks and why", "[ablation][e2e]") {
  TempDir dir;
  const auto hidden = dir / "hidden";
  REQUIRE(run_headscan({fixture("ablation_hidden.pt"), fixture("ablation_corpus.txt"), "-o", hidden.string(), "--parser",
                        "none", "--no-plots", "-q"})
              .exit_code == 0);
  const auto report = read_json(hidden / "heads.json");
  CHECK(report["model"]["lm_head"] == false);
  const std::string note = report["model"]["lm_head_note"];
  for (const char* says : {"16 numbers per token (hidden states: the model has no language-model head)",
                           "no repeat_loss", "no retrieval heads", "--ablation is refused (it measures the next-token"}) {
    CHECK(note.find(says) != std::string::npos);
  }
  CHECK(report["model"]["repeat_loss"].is_null());
  CHECK(report["retrieval"]["note"].get<std::string>().find("not logits") != std::string::npos);
  std::ifstream page(hidden / "index.html");
  const std::string html((std::istreambuf_iterator<char>(page)), std::istreambuf_iterator<char>());
  CHECK(html.find("<strong>No logits.</strong> the model&#39;s output is 16 numbers per token") != std::string::npos);
  // A model with logits: nothing said.
  const auto lm = dir / "lm";
  REQUIRE(run_headscan({fixture("ablation_lm.pt"), fixture("ablation_corpus.txt"), "-o", lm.string(), "--parser", "none",
                        "--no-plots", "-q"})
              .exit_code == 0);
  CHECK_FALSE(read_json(lm / "heads.json")["model"].contains("lm_head"));
  std::ifstream lm_page(lm / "index.html");
  CHECK(std::string((std::istreambuf_iterator<char>(lm_page)), std::istreambuf_iterator<char>()).find("No logits") ==
        std::string::npos);
}
