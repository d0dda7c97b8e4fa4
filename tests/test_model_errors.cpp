// Failures inside the model's forward: a broken model contract is bad input (exit 2), running out
// of memory is a failure while running (exit 1). Fixtures: tests/fixtures/make_error_models.py.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/version.h>

#include "tests/fixtures.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using headscan::testing::CommandResult;
using headscan::testing::fixture;
using headscan::testing::run_headscan;
using headscan::testing::TempDir;
using headscan::testing::word_corpus;

namespace {

constexpr int kExitBadInput = 2;

}  // namespace

TEST_CASE("a model contract broken mid-run is bad input, running out of memory a failure", "[cli][errors][e2e]") {
  TempDir dir;
  // 70 words: windows of 71 tokens, longer than the 32-token shape probe.
  const std::string corpus = dir.write("long.txt", word_corpus({70, 70, 70}));
  const std::vector<std::string> quick = {"-q", "--no-html", "--no-plots", "--parser", "none"};
  auto analyse = [&](const std::string& model, const std::string& out) {
    std::vector<std::string> args = {fixture(model), corpus, "-o", (dir / out).string()};
    args.insert(args.end(), quick.begin(), quick.end());
    return run_headscan(args);
  };

  SECTION("attention layers that depend on the input: exit 2") {
    const CommandResult result = analyse("depth_by_length.pt", "depth");
    CHECK(result.exit_code == kExitBadInput);
    CHECK_THAT(result.err, StartsWith("headscan: error: ") && Contains("depth_by_length.pt") &&
                               Contains("corpus line 1") && Contains("layer 2") && Contains("2 layers"));
    CHECK_FALSE(fs::exists(dir / "depth"));
  }
  SECTION("an allocation that fails inside the forward: exit 1") {
    const CommandResult result = analyse("oom_on_long.pt", "oom");
    CHECK(result.exit_code == 1);
    CHECK_THAT(result.err, StartsWith("headscan: failed: ") && Contains("out of memory") &&
                               Contains("can't allocate memory") && Contains("--batch-size") &&
                               Contains("--max-length") && Contains("--dtype bfloat16"));
    CHECK_THAT(result.err, !Contains("Traceback"));
    CHECK_FALSE(fs::exists(dir / "oom"));
  }
}

TEST_CASE("a model with NaN weights is bad input naming the layer", "[cli][errors][e2e]") {
  TempDir dir;
  const std::string corpus = dir.write("corpus.txt", word_corpus({6, 9, 4}));
  const CommandResult result = run_headscan(
      {fixture("nan_weights.pt"), corpus, "-o", (dir / "out").string(), "-q", "--parser", "none"});
  CHECK(result.exit_code == kExitBadInput);
  CHECK_THAT(result.err, StartsWith("headscan: error: ") && Contains("nan_weights.pt") &&
                             Contains("attention layer 0") && Contains("NaN"));
  CHECK_FALSE(fs::exists(dir / "out"));
}

// A batch fails for one of its sequences: the error names the line that sequence came from, not
// the batch's first line.
TEST_CASE("a sequence longer than the position table is blamed on its own corpus line", "[cli][errors][e2e]") {
  TempDir dir;
  // Lines 1 to 3 fit the 40 positions, line 4 does not; all four run in one batch.
  const std::string corpus = dir.write("corpus.txt", word_corpus({6, 9, 4, 60, 5}));
  const CommandResult result = run_headscan(
      {fixture("short_positions.pt"), corpus, "-o", (dir / "out").string(), "-q", "--parser", "none"});
  CHECK(result.exit_code == kExitBadInput);
  CHECK_THAT(result.err, StartsWith("headscan: error: ") && Contains("short_positions.pt (corpus line 4)") &&
                             Contains("position table"));
  CHECK_THAT(result.err, !Contains("corpus line 1"));
  CHECK_FALSE(fs::exists(dir / "out"));
}

// A tokenizer may hold added tokens beyond the model's embedding (Gemma 3's holds one): whether the
// output is logits comes from headscan.json's "logits" (the exporter saw the model's head), not from
// the output's width against the tokenizer's vocabulary.
TEST_CASE("a head narrower than the tokenizer keeps logits where headscan.json says so", "[cli][e2e]") {
  TempDir dir;
  std::string text;
  for (int line = 0; line < 12; ++line) {
    for (int word = 0; word < 30; ++word) text += fmt::format("w{} ", 1 + (line * 7 + word * 5) % 59);
    text += "\n";
  }
  const std::string corpus = dir.write("corpus.txt", text);
  const CommandResult result = run_headscan({fixture("head_below_tokenizer.pt"), corpus, "-o", (dir / "out").string(),
                                             "-q", "--no-html", "--no-plots", "--parser", "none"});
  REQUIRE(result.exit_code == 0);
  const nlohmann::json report = headscan::testing::read_json(dir / "out" / "heads.json");
  CHECK_FALSE(report["model"].contains("lm_head_note"));
  REQUIRE(report["model"]["repeat_loss"].is_array());
  CHECK(report["model"]["repeat_loss"].size() >= 2);
  CHECK(report["probes"]["count"].get<int>() > 0);
  // An id the model does not have is refused where it occurs.
  const std::string beyond = dir.write("beyond.txt", text + "w3 w5 w63 w7\n");
  const CommandResult refused = run_headscan({fixture("head_below_tokenizer.pt"), beyond, "-o", (dir / "out2").string(),
                                              "-q", "--no-html", "--no-plots", "--parser", "none"});
  CHECK(refused.exit_code == kExitBadInput);
  CHECK_THAT(refused.err, Contains("corpus line 13") && Contains("token id 63") &&
                              Contains("beyond the model's vocabulary") && Contains("60 tokens"));
}

// Damaged copies of a good archive (make_error_models.py): each is found before LibTorch reads the
// archive, which would read out of bounds, accept it, or print a message cut at a NUL byte.
TEST_CASE("a damaged model archive is bad input naming the archive and the record", "[cli][errors][e2e]") {
  TempDir dir;
  const std::string corpus = dir.write("corpus.txt", word_corpus({6, 9, 4}));
  auto analyse = [&](const std::string& model) {
    const CommandResult result =
        run_headscan({fixture(model), corpus, "-o", (dir / "out").string(), "-q", "--parser", "none"});
    INFO("stderr: " << result.err);
    CHECK(result.exit_code == kExitBadInput);
    CHECK_THAT(result.err, StartsWith("headscan: error: ") && Contains(model));
    CHECK_FALSE(fs::exists(dir / "out"));
    return result.err;
  };

  SECTION("empty tensor records") {
    CHECK_THAT(analyse("empty_records.pt"),
               Contains("record data/0 holds 0 bytes") && Contains("FloatStorage storage of 1024 elements needs 4096") &&
                   Contains("torch.jit.save"));
  }
  SECTION("a tensor record cut short") {
    CHECK_THAT(analyse("short_record.pt"), Contains("record data/0 holds 4092 bytes") && Contains("needs 4096") && Contains("torch.jit.save"));
  }
  SECTION("a tensor beyond its storage") {
    CHECK_THAT(analyse("small_storage.pt"),
               Contains("record data.pkl") && Contains("reaches element 1023 of storage 0, which holds 1"));
  }
  SECTION("a pickle cut in half") {
    CHECK_THAT(analyse("cut_pickle.pt"), Contains("record data.pkl") && Contains("damaged pickle at byte"));
  }
  SECTION("NUL bytes in the code") {
    CHECK_THAT(analyse("nul_code.pt"), Contains("record code/") && Contains("NUL byte"));
  }
  SECTION("code that is not TorchScript: LibTorch's whole message, with the record") {
    const std::string err = analyse("bad_code.pt");
    CHECK_THAT(err, Contains(std::string("LibTorch ") + TORCH_VERSION + " cannot load it") && Contains("code/__torch__.py") &&
                        Contains("not python") && Contains("export the model again"));
  }
  SECTION("a headscan.json too large to be settings") {
    CHECK_THAT(analyse("big_metadata.pt"),
               Contains("record extra/headscan.json is 2097218 bytes") && Contains("1048576"));
  }
  SECTION("the same checks guard headscan tokenize") {
    const CommandResult result = run_headscan({"tokenize", fixture("big_metadata.pt"), "--text", "w1 w2"});
    CHECK(result.exit_code == kExitBadInput);
    CHECK_THAT(result.err, Contains("extra/headscan.json"));
  }
}
