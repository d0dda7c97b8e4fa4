// What torch 2.x exports (tests/fixtures/make_modern_models.py): SDPA attention rewritten into its
// eager form gives its eager twin's scores; a mixture-of-experts model that calls _grouped_mm
// loads; half-precision archives and --dtype run in their dtype; a model with layers without
// attention names its heads by the model's layer index; operators LibTorch lacks are named.
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

TEST_CASE("a model with layers without attention names its heads by the model's layers", "[modern][layers][e2e]") {
  TempDir dir;
  headscan::AnalysisOptions options;
  options.model_path = fixture("hybrid.pt");
  options.corpus_path = dir.write("corpus.txt", word_corpus(kLineWords));
  options.output_dir = (dir / "report").string();
  options.batch_size = 3;
  options.progress = false;
  options.parser = "none";
  options.ablation = true;
  options.ablation_sequences = 4;
  headscan::run_analysis(options);
  const auto report = read_json(dir / "report" / "heads.json");

  // Every layer of blocks, with its kind; heads only in the attention layers 0 and 2.
  const auto& layers = report["model"]["layers"];
  REQUIRE(layers.size() == 4);
  const std::vector<std::string> kinds = {"attention", "none", "attention", "convolution"};
  for (std::size_t index = 0; index < layers.size(); ++index) {
    CHECK(layers[index]["index"] == index);
    CHECK(layers[index]["path"] == "blocks." + std::to_string(index));
    CHECK(layers[index]["kind"] == kinds[index]);
  }
  CHECK_FALSE(report["model"].contains("layers_note"));
  REQUIRE(report["heads"].size() == 8);
  std::vector<int> head_layers;
  for (const auto& head : report["heads"]) head_layers.push_back(head["layer"].get<int>());
  CHECK(head_layers == std::vector<int>{0, 0, 0, 0, 2, 2, 2, 2});
  // The planted patterns follow their layers: block 0 [prev, first, uniform, self], block 2
  // [self, prev, first, uniform] (make_models.py's CAUSAL_LAYERS).
  CHECK(report["heads"][0]["primary"] == "previous-token");
  CHECK(report["heads"][5]["primary"] == "previous-token");
  CHECK(report["heads"][6]["primary"] == "first-token");

  // heads.csv's layer column, the KV plan (a row per attention layer, named in config.json), the
  // causal passes and the report's pages agree.
  const std::string csv = headscan::testing::read_file(dir / "report" / "heads.csv");
  CHECK_THAT(csv, Catch::Contains("\r\n2,1,1,previous-token,"));
  CHECK_THAT(csv, !Catch::Contains("\r\n1,"));
  CHECK(report["kv_plan"]["full_attention_heads"].size() == 2);
  CHECK(read_json(dir / "report" / "kv_plan" / "config.json")["layers"] == nlohmann::json::array({0, 2}));
  REQUIRE(report.contains("ablation"));
  CHECK((report["kv_plan"].contains("loss_delta") || report["kv_plan"].contains("loss_note")));
  for (const auto& head : report["heads"]) {
    CHECK(std::isfinite(head["scores"]["importance"].get<double>()));
    if (!head.contains("circuit")) continue;
    for (const auto& link : head["circuit"]["depends_on"]) CHECK((link["layer"] == 0 || link["layer"] == 2));
  }
  CHECK(std::filesystem::exists(dir / "report" / "heads" / "L2H1.html"));
  CHECK(std::filesystem::exists(dir / "report" / "data" / "L2H1.js"));
  CHECK_FALSE(std::filesystem::exists(dir / "report" / "heads" / "L1H1.html"));
  const std::string index = headscan::testing::read_file(dir / "report" / "index.html");
  CHECK_THAT(index, Catch::Contains("Layers without an attention map") && Catch::Contains("1 none") &&
                        Catch::Contains("3 convolution") && Catch::Contains("<div class=\"axis row\">L2</div>"));
  CHECK_THAT(index, !Catch::Contains("<div class=\"axis row\">L1</div>"));

  SECTION("compare matches heads by the model's layer index") {
    const std::string out = (dir / "compare").string();
    options.output_dir = (dir / "again").string();
    options.ablation = false;
    headscan::run_analysis(options);
    const auto compared = run_headscan({"compare", (dir / "report").string(), (dir / "again").string(), "-o", out,
                                        "-q", "--no-plots"});
    INFO(compared.err);
    REQUIRE(compared.exit_code == 0);
    for (const auto& head : read_json(dir / "compare" / "compare.json")["heads"]) {
      CHECK((head["layer"] == 0 || head["layer"] == 2));
    }
    // A run of the same shape numbered 0, 1 is another model's heads.
    analyse("gpt2.pt", dir, "plain");
    const auto other = run_headscan({"compare", (dir / "report").string(), (dir / "plain").string(), "-o",
                                     (dir / "other").string(), "-q", "--no-plots"});
    CHECK(other.exit_code == 2);
    CHECK_THAT(other.err, Catch::Contains("layers 0, 2") && Catch::Contains("layers 0, 1"));
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
