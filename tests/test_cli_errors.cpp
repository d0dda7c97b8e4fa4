// The command line's errors (DESIGN.md, "Errors and output"): bad usage or bad input exits 2 with
// one "headscan: error: " message that names the file, what was expected, what was found and what
// to do; no C++ backtrace; and a failed run writes nothing: no report, no staging directory, no
// created parent, an existing directory left byte for byte as it was. Here: a run that succeeds,
// --device, the model file, the tokenizer and the options; the corpus and other inputs in
// test_cli_input_errors.cpp, the output directory in test_cli_output_errors.cpp.

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/cuda.h>

#include "tests/cli_error_testing.h"
#include "tests/fixtures.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using headscan::testing::CommandResult;
using headscan::testing::fixture;
using headscan::testing::read_json;
using headscan::testing::run_expecting_input_error;
using headscan::testing::run_headscan;
using headscan::testing::slurp;
using headscan::testing::small_corpus;
using headscan::testing::staging_leftovers;
using headscan::testing::TempDir;

TEST_CASE("cli: a corpus run succeeds: exit 0 and a heads.json for every head", "[cli][errors][e2e]") {
  TempDir work;
  const CommandResult result =
      run_headscan({fixture("gpt2.pt"), small_corpus(work), "-o", (work / "report").string(), "--quiet"});
  INFO("stderr: " << result.err);
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.err, !Contains("error"));
  REQUIRE(fs::is_regular_file(work / "report" / "heads.json"));
  CHECK(read_json(work / "report" / "heads.json").at("heads").size() == 8);  // 2 layers x 4 heads
  CHECK(staging_leftovers(work.path()).empty());
}

TEST_CASE("cli: --device names where the run computes; heads.json says the device, its name and the dtype",
          "[cli][errors][e2e][device]") {
  TempDir work;
  const std::string corpus = small_corpus(work);
  SECTION("cpu") {
    const CommandResult result = run_headscan(
        {fixture("gpt2.pt"), corpus, "-o", (work / "report").string(), "--device", "cpu", "--quiet", "--no-html", "--no-plots"});
    INFO("stderr: " << result.err);
    REQUIRE(result.exit_code == 0);
    const auto run = read_json(work / "report" / "heads.json").at("run");
    CHECK(run.at("device") == "cpu");
    CHECK_FALSE(run.at("device_name").get<std::string>().empty());
    CHECK(run.at("dtype") == "float32");
    CHECK_FALSE(run.contains("peak_device_memory_bytes"));  // a GPU's figure only
  }
  SECTION("auto takes a GPU only when LibTorch sees one") {
    const CommandResult result = run_headscan(
        {fixture("gpt2.pt"), corpus, "-o", (work / "report").string(), "--quiet", "--no-html", "--no-plots"});
    INFO("stderr: " << result.err);
    REQUIRE(result.exit_code == 0);
    const auto run = read_json(work / "report" / "heads.json").at("run");
    CHECK(run.at("device") == (torch::cuda::is_available() ? "cuda:0" : "cpu"));
  }
  SECTION("a name that is no device") {
    const CommandResult result = run_expecting_input_error(work, {fixture("gpt2.pt"), corpus, "--device", "gpu"});
    CHECK_THAT(result.err, Contains("--device gpu: expected auto, cpu, cuda or cuda:N"));
    run_expecting_input_error(work, {fixture("gpt2.pt"), corpus, "--device", "cuda:x"});
    run_expecting_input_error(work, {fixture("gpt2.pt"), corpus, "--device", "cuda:"});
  }
  SECTION("a GPU LibTorch does not see") {
    const CommandResult result = run_expecting_input_error(work, {fixture("gpt2.pt"), corpus, "--device", "cuda:64"});
    CHECK_THAT(result.err, Contains("--device cuda:64: "));
    if (!torch::cuda::is_available()) {
      const CommandResult plain = run_expecting_input_error(work, {fixture("gpt2.pt"), corpus, "--device", "cuda"});
      CHECK_THAT(plain.err, Contains("--device cuda: ") && Contains("--device cpu"));
    }
  }
}

TEST_CASE("cli: a missing model file is reported by name", "[cli][errors]") {
  TempDir work;
  const std::string corpus = small_corpus(work);
  const std::string model = (work / "missing.pt").string();

  SECTION("the message names the file and says what to give") {
    const CommandResult result = run_expecting_input_error(work, {model, corpus});
    CHECK_THAT(result.err, Contains(model) && Contains("not found") && Contains("torch.jit.save"));
  }
  SECTION("the missing parents of the output directory are not created") {
    run_expecting_input_error(work, {model, corpus}, "new/nested/report");
    CHECK_FALSE(fs::exists(work / "new"));
  }
}

TEST_CASE("cli: a file that is not a TorchScript archive is rejected", "[cli][errors][e2e]") {
  TempDir work;
  const std::string corpus = small_corpus(work);

  SECTION("a text file named .pt") {
    const std::string model = work.write("x.pt", "hello, I am text\n");
    const CommandResult result = run_expecting_input_error(work, {model, corpus});
    CHECK_THAT(result.err, Contains(model) && Contains("expected a TorchScript archive") &&
                               Contains("a file starting with \"hello, I\"") &&
                               Contains("torch.jit.trace or torch.jit.script"));
  }
  SECTION("a 0-byte file") {
    const std::string model = work.write("zero.pt", "");
    const CommandResult result = run_expecting_input_error(work, {model, corpus});
    CHECK_THAT(result.err, Contains(model) && Contains("found an empty file"));
  }
  SECTION("an empty zip archive: only the end-of-central-directory record") {
    const std::string model = work.write("empty.pt", std::string("PK\x05\x06", 4) + std::string(18, '\0'));
    const CommandResult result = run_expecting_input_error(work, {model, corpus});
    CHECK_THAT(result.err, Contains(model) && Contains("expected a TorchScript archive") &&
                               Contains("found an empty zip archive"));
  }
  SECTION("a truncated TorchScript archive: a zip signature but no central directory") {
    const std::string model = work.write("cut.pt", slurp(fixture("gpt2.pt")).substr(0, 2000));
    const CommandResult result = run_expecting_input_error(work, {model, corpus});
    CHECK_THAT(result.err, Contains(model) && Contains("damaged zip archive") &&
                               Contains("central directory") && Contains("torch.jit.save"));
  }
  SECTION("a directory") {
    fs::create_directory(work / "model.pt");
    const CommandResult result = run_expecting_input_error(work, {(work / "model.pt").string(), corpus});
    CHECK_THAT(result.err, Contains("model.pt") && Contains("found a directory"));
  }
}

TEST_CASE("cli: a model without attention softmax is rejected", "[cli][errors][e2e]") {
  TempDir work;
  const CommandResult result = run_expecting_input_error(work, {fixture("no_attention.pt"), small_corpus(work)});
  CHECK_THAT(result.err, Contains("no_attention.pt") && Contains("found no attention") &&
                             Contains("0 softmax op(s)") && Contains("eager attention"));
}

TEST_CASE("cli: a model with fused attention names the op and how to export without it", "[cli][errors][e2e]") {
  TempDir work;
  const std::string corpus = small_corpus(work);

  SECTION("nn.MultiheadAttention's fast path") {
    const CommandResult result = run_expecting_input_error(work, {fixture("mha_fused.pt"), corpus});
    CHECK_THAT(result.err, Contains("mha_fused.pt") && Contains("aten::_native_multi_head_attention") &&
                               Contains("need_weights=True") && Contains("attn_implementation=\"eager\""));
  }
  SECTION("nn.TransformerEncoderLayer's fast path") {
    const CommandResult result = run_expecting_input_error(work, {fixture("transformer_encoder_fused.pt"), corpus});
    CHECK_THAT(result.err, Contains("transformer_encoder_fused.pt") &&
                               Contains("aten::_transformer_encoder_layer_fwd") && Contains("eager attention"));
  }
}

TEST_CASE("cli: a forward that does not take int64 [B,T] ids shows its signature", "[cli][errors][e2e]") {
  TempDir work;
  const CommandResult result = run_expecting_input_error(work, {fixture("float_input.pt"), small_corpus(work)});
  CHECK_THAT(result.err, Contains("float_input.pt") && Contains("expected forward(input_ids)") &&
                             Contains("found forward(self, pixels: List[Tensor]) -> Tensor") &&
                             Contains("wrapper module"));
}

TEST_CASE("cli: a token id beyond the embedding says the tokenizer does not match", "[cli][errors][e2e]") {
  TempDir work;
  // small_embedding.pt has 16 token rows; its embedded tokenizer gives w63 the id 63.
  const std::string corpus = work.write("corpus.txt", "w3 w4 w63 w5\nw6 w7\n");
  const CommandResult result = run_expecting_input_error(work, {fixture("small_embedding.pt"), corpus});
  CHECK_THAT(result.err, Contains("small_embedding.pt") && Contains("token id 63") && Contains("16 rows") &&
                             Contains("the tokenizer does not match the model") && Contains("--tokenizer"));
}

TEST_CASE("cli: a model without a tokenizer asks for --tokenizer", "[cli][errors][e2e]") {
  TempDir work;
  const std::string corpus = small_corpus(work);

  SECTION("without --tokenizer") {
    const CommandResult result = run_expecting_input_error(work, {fixture("gpt2_no_tokenizer.pt"), corpus});
    CHECK_THAT(result.err, Contains("gpt2_no_tokenizer.pt") && Contains("no tokenizer") &&
                               Contains("--tokenizer") && Contains("_extra_files"));
  }
  SECTION("with --tokenizer it succeeds") {
    const CommandResult result = run_headscan({fixture("gpt2_no_tokenizer.pt"), corpus, "--tokenizer",
                                               fixture("tokenizer.json"), "-o", (work / "report").string(), "-q"});
    INFO("stderr: " << result.err);
    REQUIRE(result.exit_code == 0);
    CHECK(fs::is_regular_file(work / "report" / "heads.json"));
  }
  SECTION("a --tokenizer file that does not exist") {
    const std::string tokenizer = (work / "absent.json").string();
    const CommandResult result =
        run_expecting_input_error(work, {fixture("gpt2_no_tokenizer.pt"), corpus, "--tokenizer", tokenizer});
    CHECK_THAT(result.err, Contains(tokenizer) && Contains("found nothing at this path"));
  }
}

TEST_CASE("cli: bad usage exits 2 with a message", "[cli][errors][e2e]") {
  TempDir work;
  const std::string corpus = small_corpus(work);
  const std::string model = fixture("gpt2.pt");

  SECTION("an unknown option") {
    const CommandResult result = run_expecting_input_error(work, {model, corpus, "--bogus"});
    CHECK_THAT(result.err, Contains("--bogus") && Contains("--help"));
  }
  SECTION("no corpus argument") {
    const CommandResult result = run_expecting_input_error(work, {model});
    CHECK_THAT(result.err, Contains("corpus is required"));
  }
  SECTION("--threshold without NAME=") {
    const CommandResult result = run_expecting_input_error(work, {model, corpus, "--threshold", "nonsense"});
    CHECK_THAT(result.err, Contains("--threshold nonsense") && Contains("NAME=VALUE"));
  }
  SECTION("--threshold with a value that is not a number") {
    const CommandResult result = run_expecting_input_error(work, {model, corpus, "--threshold", "entropy=high"});
    CHECK_THAT(result.err, Contains("--threshold entropy=high") && Contains("a number from 0 to 1"));
  }
  SECTION("--threshold with an unknown name lists the known ones") {
    const CommandResult result =
        run_expecting_input_error(work, {model, corpus, "--threshold", "unknown_name=0.3"});
    CHECK_THAT(result.err, Contains("unknown_name") && Contains("known thresholds") &&
                               Contains("previous_token") && Contains("first_token") && Contains("entropy"));
  }
  SECTION("--batch-size 0") {
    const CommandResult result = run_expecting_input_error(work, {model, corpus, "--batch-size", "0"});
    CHECK_THAT(result.err, Contains("--batch-size") && Contains("must be at least 1, found 0"));
    CHECK(result.err.size() < 200);  // no range with DBL_MAX written out
  }
  SECTION("--threads -1") {
    const CommandResult result = run_expecting_input_error(work, {model, corpus, "--threads", "-1"});
    CHECK_THAT(result.err, Contains("--threads") && Contains("must be at least 0, found -1"));
  }
  SECTION("--threads beyond the machine's cores: refused at once, not a hang") {
    const CommandResult result = run_expecting_input_error(work, {model, corpus, "--threads", "1000000"});
    CHECK_THAT(result.err, Contains("--threads 1000000") && Contains("cores"));
  }
  SECTION("--parser with an unknown parser") {
    const CommandResult result = run_expecting_input_error(work, {model, corpus, "--parser", "spacy"});
    CHECK_THAT(result.err, Contains("--parser") && Contains("spacy") && Contains("link-grammar"));
  }
  SECTION("--max-length 1") {
    const CommandResult result = run_expecting_input_error(work, {model, corpus, "--max-length", "1"});
    CHECK_THAT(result.err, Contains("--max-length"));
  }
  SECTION("--seed out of range: negative, 2^64, or not decimal (CLI11 once wrapped -1 to 2^64 - 1)") {
    for (const char* seed : {"-1", "18446744073709551616", "0x10", "1.5"}) {
      const CommandResult result = run_expecting_input_error(work, {model, corpus, "--seed", seed});
      CHECK_THAT(result.err, Contains(std::string("--seed ") + seed) && Contains("0 to 18446744073709551615"));
    }
    CHECK_THAT(run_expecting_input_error(work, {model, corpus, "--seed", "-1"}).err, Contains("a negative number"));
  }
  SECTION("--sink and --window take the range of their thresholds, and neither gives the cache a second size") {
    CHECK_THAT(run_expecting_input_error(work, {model, corpus, "--window", "0"}).err, Contains("--window"));
    CHECK_THAT(run_expecting_input_error(work, {model, corpus, "--threshold", "streaming_window=0"}).err,
               Contains("a whole number from 1 to 1000000000"));
    CHECK_THAT(run_expecting_input_error(work, {model, corpus, "--sink", "1000000001"}).err, Contains("--sink"));
    const CommandResult both =
        run_expecting_input_error(work, {model, corpus, "--sink", "4", "--threshold", "streaming_sink=8"});
    CHECK_THAT(both.err, Contains("--sink 4 and --threshold streaming_sink=8") && Contains("two sizes"));
  }
  SECTION("a text given where a path belongs is quoted by its first bytes only") {
    const std::string long_text(10000, 'x');
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{long_text, corpus}, {model, long_text}, {model, corpus, "--idf", long_text}}) {
      const CommandResult result = run_expecting_input_error(work, args);
      CHECK_THAT(result.err, Contains("10000 bytes") && Contains(std::string(200, 'x') + "…"));
      CHECK(result.err.size() < 600);
    }
  }
  SECTION("control characters of a file name reach the terminal escaped") {
    const CommandResult result =
        run_expecting_input_error(work, {model, (work / "corpus\x1B[31m\x07.txt").string()});
    CHECK_THAT(result.err, Contains("corpus\\x1B[31m\\x07.txt"));
    CHECK(result.err.find('\x1B') == std::string::npos);
    CHECK(result.err.find('\x07') == std::string::npos);
  }
}
