// What torch 2.x exports (tests/fixtures/make_modern_models.py): SDPA attention rewritten into its
// eager form gives its eager twin's scores; a mixture-of-experts model that calls _grouped_mm
// loads; half-precision archives and --dtype run in their dtype; operators LibTorch lacks are
// named.
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <torch/version.h>

#include "analyzer/run/analysis.h"
#include "tests/fixtures.h"

using headscan::testing::fixture;
using headscan::testing::read_json;
using headscan::testing::run_headscan;
using headscan::testing::TempDir;
using headscan::testing::word_corpus;

namespace {

const std::vector<int> kLineWords = {7, 12, 2, 20, 12, 5, 31, 1, 9, 40};

nlohmann::json analyse(const std::string& model, const TempDir& dir, const std::string& report,
                       const std::string& dtype = "", bool ablation = false) {
  headscan::AnalysisOptions options;
  options.model_path = fixture(model);
  options.corpus_path = dir.write("corpus.txt", word_corpus(kLineWords));
  options.output_dir = (dir / report).string();
  options.batch_size = 3;
  options.progress = false;
  options.html = options.plots = false;
  options.parser = "none";
  options.dtype = dtype;
  options.ablation = ablation;
  options.ablation_sequences = 4;
  headscan::run_analysis(options);
  return read_json(dir / report / "heads.json");
}

// Scores that count argmaxes: a rounding can flip a near-tie, so on graded attention they are not
// continuous in the weights.
const std::set<std::string> kArgmaxScores = {"argmax_rate", "rare_word"};

// Every number under `a` (scores, or a head's ablation entries) is within `tolerance` of `b`'s at
// the same place, but for the names in `skip`, and both hold the same keys.
void check_close(const nlohmann::json& a, const nlohmann::json& b, double tolerance, const std::string& where,
                 const std::set<std::string>& skip = {}) {
  INFO(where);
  if (a.is_number()) {
    REQUIRE(b.is_number());
    CHECK(std::abs(a.get<double>() - b.get<double>()) <= tolerance);
    return;
  }
  if (a.is_object()) {
    REQUIRE(b.is_object());
    CHECK(a.size() == b.size());
    for (const auto& [key, value] : a.items()) {
      REQUIRE(b.contains(key));
      if (skip.count(key) == 0) check_close(value, b[key], tolerance, where + "." + key, skip);
    }
    return;
  }
  CHECK(a == b);
}

void check_same_heads(const nlohmann::json& a, const nlohmann::json& b, double tolerance,
                      const std::set<std::string>& skip = {}) {
  REQUIRE(a["heads"].size() == b["heads"].size());
  REQUIRE(a["heads"].size() == 8);
  for (std::size_t k = 0; k < a["heads"].size(); ++k) {
    const auto& head = a["heads"][k];
    const std::string where = "L" + head["layer"].dump() + "H" + head["head"].dump();
    check_close(head["scores"], b["heads"][k]["scores"], tolerance, where, skip);
    CHECK(head["labels"] == b["heads"][k]["labels"]);
    CHECK(head["primary"] == b["heads"][k]["primary"]);
  }
}

// At least one score of the run is strictly between 0.05 and 0.95: the twins' heads are neither
// one-hot nor uniform, so a wrong scale or mask would show.
bool has_graded_scores(const nlohmann::json& report) {
  for (const auto& head : report["heads"]) {
    const double value = head["scores"]["previous_token"].get<double>();
    if (value > 0.05 && value < 0.95) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("SDPA exports give every score of the same weights with eager attention", "[modern][sdpa][e2e]") {
  TempDir dir;
  for (const std::string model : {"gpt2", "llama", "bert"}) {
    INFO(model);
    const auto eager = analyse(model + "_eager.pt", dir, model + "-eager");
    const auto sdpa = analyse(model + "_sdpa.pt", dir, model + "-sdpa");
    CHECK(sdpa["model"]["capture"] == "graph");
    CHECK(sdpa["model"]["causal"] == (model != "bert"));
    CHECK(has_graded_scores(eager));
    check_same_heads(eager, sdpa, 1e-5);
  }
}

TEST_CASE("SDPA heads are scaled by --ablation like softmax heads", "[modern][sdpa][ablation][e2e]") {
  TempDir dir;
  const auto eager = analyse("llama_eager.pt", dir, "eager", "", /*ablation=*/true);
  const auto sdpa = analyse("llama_sdpa.pt", dir, "sdpa", "", /*ablation=*/true);
  check_same_heads(eager, sdpa, 1e-4);
  bool any_importance = false;
  for (const auto& head : sdpa["heads"]) any_importance |= head["scores"]["importance"].get<double>() > 1e-6;
  CHECK(any_importance);
}

TEST_CASE("half-precision archives and --dtype run in their dtype", "[modern][dtype][e2e]") {
  TempDir dir;
  const auto reference = analyse("gpt2.pt", dir, "float32");
  CHECK(reference["model"]["dtype"] == "float32");
  SECTION("bfloat16 and float16 archives") {
    const auto bf16 = analyse("gpt2_bf16.pt", dir, "bf16");
    CHECK(bf16["model"]["dtype"] == "bfloat16");
    check_same_heads(reference, bf16, 1e-2);
    const auto fp16 = analyse("gpt2_fp16.pt", dir, "fp16");
    CHECK(fp16["model"]["dtype"] == "float16");
    check_same_heads(reference, fp16, 1e-2);
  }
  SECTION("a traced bfloat16 archive with graded attention: every score but argmax counts") {
    const auto float32 = analyse("llama_eager.pt", dir, "llama-float32");
    const auto bf16 = analyse("llama_bf16.pt", dir, "llama-bf16");
    CHECK(bf16["model"]["dtype"] == "bfloat16");
    check_same_heads(float32, bf16, 1e-2, kArgmaxScores);
  }
  SECTION("--ablation on a bfloat16 model: losses summed in float32") {
    const auto float32 = analyse("llama_eager.pt", dir, "llama-float32-ablation", "", /*ablation=*/true);
    const auto bf16 = analyse("llama_bf16.pt", dir, "llama-bf16-ablation", "", /*ablation=*/true);
    const double loss = float32["ablation"]["loss"].get<double>();
    CHECK(std::abs(bf16["ablation"]["loss"].get<double>() - loss) < 0.02 * loss);
    for (const auto& head : bf16["heads"]) CHECK(std::isfinite(head["scores"]["importance"].get<double>()));
  }
  SECTION("--dtype casts the parameters at load") {
    const auto cast = analyse("gpt2.pt", dir, "cast", "bfloat16");
    CHECK(cast["model"]["dtype"] == "bfloat16");
    check_same_heads(reference, cast, 1e-2);
    const auto back = analyse("gpt2_bf16.pt", dir, "back", "float32");
    CHECK(back["model"]["dtype"] == "float32");
    check_same_heads(reference, back, 1e-2);
  }
}

TEST_CASE("an operator this LibTorch lacks is named, with what to do", "[modern][errors][e2e]") {
  TempDir dir;
  const std::string corpus = dir.write("corpus.txt", word_corpus({5, 6}));
  SECTION("an aten operator of a newer PyTorch") {
    const auto result = run_headscan({fixture("future_op.pt"), corpus, "-o", (dir / "out").string(), "-q"});
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Catch::Contains("future_op.pt") && Catch::Contains("aten::_headscan_future_op") &&
                               Catch::Contains(std::string("LibTorch ") + TORCH_VERSION) &&
                               Catch::Contains("will not help") && Catch::Contains("newer"));
    CHECK_THAT(result.err, !Catch::Contains("export the model again"));
  }
  SECTION("a fused attention operator of an extension library") {
    const auto result = run_headscan({fixture("flash_attn_op.pt"), corpus, "-o", (dir / "out").string(), "-q"});
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Catch::Contains("flash_attn::fwd") && Catch::Contains("eager"));
  }
  CHECK_FALSE(std::filesystem::exists(dir / "out"));
}
