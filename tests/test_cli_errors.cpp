// The command line's errors (DESIGN.md, "Errors and output"): bad usage or bad input exits 2 with
// one "headscan: error: " message that names the file, what was expected, what was found and what
// to do; no C++ backtrace; and a failed run writes nothing: no report, no staging directory, no
// created parent, an existing directory left byte for byte as it was.

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/cuda.h>

#include "tests/fixtures.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using headscan::testing::CommandResult;
using headscan::testing::fixture;
using headscan::testing::read_json;
using headscan::testing::run_headscan;
using headscan::testing::TempDir;
using headscan::testing::word_corpus;

namespace {

constexpr int kExitBadInput = 2;

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every entry under `root` (hidden ones included): relative path → contents ("<dir>" for a
// directory), to show that a failed run changed nothing.
std::map<std::string, std::string> snapshot(const fs::path& root) {
  std::map<std::string, std::string> entries;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    const std::string name = fs::relative(entry.path(), root).string();
    entries[name] = entry.is_directory() ? "<dir>" : slurp(entry.path());
  }
  return entries;
}

// Names in `dir` that look like a staging directory (".NAME.headscan-XXXXXX").
std::vector<std::string> staging_leftovers(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.front() == '.' && name.find(".headscan-") != std::string::npos) names.push_back(name);
  }
  return names;
}

// What every error shares: exit 2, nothing on stdout, one message with the prefix, no backtrace.
void check_input_error(const CommandResult& result) {
  INFO("stderr: " << result.err);
  CHECK(result.exit_code == kExitBadInput);
  CHECK(result.out.empty());
  CHECK_THAT(result.err, StartsWith("headscan: error: "));
  CHECK_THAT(result.err, !Contains("Exception raised from") && !Contains("frame #") && !Contains("libtorch") &&
                             !Contains("terminate called"));
}

// Runs headscan in the directory `work` (with the report going to `output` inside it unless
// `args` already names one), expects a bad-input error and that `work` is exactly as before.
CommandResult run_expecting_input_error(const TempDir& work, std::vector<std::string> args,
                                        const std::string& output = "report") {
  args.push_back("-o");
  args.push_back((work / output).string());
  const auto before = snapshot(work.path());
  const CommandResult result = run_headscan(args);
  check_input_error(result);
  CHECK_FALSE(fs::exists(work / output));
  CHECK(staging_leftovers(work.path()).empty());
  CHECK(snapshot(work.path()) == before);
  return result;
}

std::string small_corpus(const TempDir& work) { return work.write("corpus.txt", word_corpus({6, 9, 4, 12})); }

}  // namespace

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

TEST_CASE("cli: an empty corpus is rejected", "[cli][errors][e2e]") {
  TempDir work;

  SECTION("only blank lines") {
    const std::string corpus = work.write("blank.txt", "\n\n\r\n\n");
    const CommandResult result = run_expecting_input_error(work, {fixture("gpt2.pt"), corpus});
    CHECK_THAT(result.err, Contains(corpus) && Contains("the corpus is empty") && Contains("(4 lines read)") &&
                               Contains("one document per line"));
  }
  SECTION("a 0-byte file") {
    const std::string corpus = work.write("zero.txt", "");
    const CommandResult result = run_expecting_input_error(work, {fixture("gpt2.pt"), corpus});
    CHECK_THAT(result.err, Contains(corpus) && Contains("the corpus is empty") && Contains("(0 lines read)"));
  }
  SECTION("a missing file") {
    const std::string corpus = (work / "absent.txt").string();
    const CommandResult result = run_expecting_input_error(work, {fixture("gpt2.pt"), corpus});
    CHECK_THAT(result.err, Contains(corpus) && Contains("found nothing at this path"));
  }
}

TEST_CASE("cli: a binary file as corpus is rejected", "[cli][errors][e2e]") {
  TempDir work;
  const std::string corpus = work.write("corpus.txt", std::string("w3 w4\0w5 w6\n", 12));
  const CommandResult result = run_expecting_input_error(work, {fixture("gpt2.pt"), corpus});
  CHECK_THAT(result.err, Contains(corpus) && Contains("expected a UTF-8 text corpus") &&
                             Contains("binary data (NUL byte at offset 5)"));
}

TEST_CASE("cli: malformed CoNLL-U is reported with its line", "[cli][errors][e2e]") {
  TempDir work;
  const std::string good = "1\tw3\t_\t_\t_\t_\t2\tnsubj\t_\t_\n2\tw4\t_\t_\t_\t_\t0\troot\t_\t_\n\n";
  SECTION("a HEAD beyond the sentence, in the second sentence") {
    const std::string corpus =
        work.write("corpus.conllu", good + "# sent_id = 2\n1\tw5\t_\t_\t_\t_\t3\tobj\t_\t_\n2\tw6\t_\t_\t_\t_\t0\troot\t_\t_\n");
    const CommandResult result = run_expecting_input_error(work, {fixture("gpt2.pt"), corpus});
    CHECK_THAT(result.err, Contains(corpus + ":5:") && Contains("HEAD"));
  }
  SECTION("a line with too few columns") {
    const std::string corpus = work.write("corpus.conllu", good + "1\tw5\t_\t_\n");
    const CommandResult result = run_expecting_input_error(work, {fixture("gpt2.pt"), corpus});
    CHECK_THAT(result.err, Contains(corpus + ":4:") && Contains("10 tab-separated fields") && Contains("found 4"));
  }
}

TEST_CASE("cli: an existing non-empty output directory is replaced only with --force", "[cli][errors][e2e]") {
  TempDir work;
  const std::string corpus = small_corpus(work);
  fs::create_directories(work / "report" / "old");
  work.write("report/notes.txt", "keep me\n");
  work.write("report/old/heads.json", "{\"mine\": true}\n");

  SECTION("without --force: exit 2 and the directory untouched") {
    const auto before = snapshot(work.path());
    const CommandResult result = run_headscan({fixture("gpt2.pt"), corpus, "-o", (work / "report").string()});
    check_input_error(result);
    CHECK_THAT(result.err, Contains("report") && Contains("exists and is not empty") && Contains("--force"));
    CHECK(snapshot(work.path()) == before);
  }
  SECTION("with --force, a directory that holds other files than a report: exit 2 and untouched") {
    const auto before = snapshot(work.path());
    const CommandResult result =
        run_headscan({fixture("gpt2.pt"), corpus, "-o", (work / "report").string(), "--force", "--quiet"});
    check_input_error(result);
    CHECK_THAT(result.err, Contains("notes.txt") && Contains("not part of a headscan report"));
    CHECK(snapshot(work.path()) == before);
  }
  SECTION("with --force, a directory that holds an input: exit 2 and the input kept") {
    fs::create_directories(work / "data");
    const std::string inside = work.write("data/corpus.txt", word_corpus({5, 7, 9}));
    work.write("data/heads.json", "{}\n");
    const auto before = snapshot(work.path());
    const CommandResult result =
        run_headscan({fixture("gpt2.pt"), inside, "-o", (work / "data").string(), "--force", "--quiet"});
    check_input_error(result);
    CHECK_THAT(result.err, Contains("an input of this run"));
    CHECK(snapshot(work.path()) == before);
  }
  SECTION("with --force, an earlier report: replaced by the new one") {
    const std::vector<std::string> quick = {"--quiet", "--no-html", "--no-plots", "--parser", "none"};
    std::vector<std::string> args = {fixture("gpt2.pt"), corpus, "-o", (work / "earlier").string()};
    args.insert(args.end(), quick.begin(), quick.end());
    REQUIRE(run_headscan(args).exit_code == 0);
    work.write("earlier/heads.json", "{\"stale\": true}\n");
    args.emplace_back("--force");
    const CommandResult result = run_headscan(args);
    INFO("stderr: " << result.err);
    REQUIRE(result.exit_code == 0);
    CHECK(read_json(work / "earlier" / "heads.json").contains("heads"));
    CHECK(staging_leftovers(work.path()).empty());
  }
}

TEST_CASE("cli: an output directory that cannot be written is rejected", "[cli][errors][e2e]") {
  TempDir work;
  const std::string corpus = small_corpus(work);
  work.write("file.txt", "a regular file\n");

  SECTION("its parent is a regular file") {
    const CommandResult result = run_expecting_input_error(work, {fixture("gpt2.pt"), corpus}, "file.txt/out");
    CHECK_THAT(result.err, Contains("file.txt") && Contains("-o DIR"));
  }
  SECTION("it is a regular file") {
    const auto before = snapshot(work.path());
    const CommandResult result = run_headscan({fixture("gpt2.pt"), corpus, "-o", (work / "file.txt").string()});
    check_input_error(result);
    CHECK_THAT(result.err, Contains("file.txt") && Contains("not a directory") && Contains("-o DIR"));
    CHECK(snapshot(work.path()) == before);
  }
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

TEST_CASE("cli: options that would be ignored, prompts that are binary and standard input are named", "[cli][errors][e2e]") {
  TempDir work;
  const std::string corpus = work.write("corpus.txt", word_corpus({6, 9, 4, 12}));
  SECTION("--text-field on a corpus that is not JSON Lines") {
    const CommandResult run = run_expecting_input_error(work, {fixture("gpt2.pt"), corpus, "--text-field", "body"});
    CHECK_THAT(run.err, Contains("--text-field applies to JSON Lines corpora") && Contains(corpus));
    const CommandResult idf = run_headscan(
        {"idf", fixture("gpt2.pt"), corpus, "--text-field", "body", "-o", (work / "idf.txt").string()});
    CHECK(idf.exit_code == 2);
    CHECK_THAT(idf.err, Contains("--text-field applies to JSON Lines corpora"));
    CHECK_FALSE(std::filesystem::exists(work / "idf.txt"));
  }
  SECTION("--examples with a NUL byte past the first 64 KiB") {
    std::string prompts;
    while (prompts.size() < 70000) prompts += "w3 w4 w5 w6 w7 w8 w9\n";
    const auto line = std::count(prompts.begin(), prompts.end(), '\n') + 1;
    prompts += std::string("w3 \0 w4\n", 8);
    const std::string examples = work.write("prompts.txt", prompts);
    const CommandResult result = run_expecting_input_error(work, {fixture("gpt2.pt"), corpus, "--examples", examples});
    CHECK_THAT(result.err, Contains("--examples") && Contains("NUL byte") && Contains(":" + std::to_string(line) + ":"));
  }
  SECTION("--examples - and --examples DIR say what they are") {
    const CommandResult stdin_examples = run_expecting_input_error(work, {fixture("gpt2.pt"), corpus, "--examples", "-"});
    CHECK_THAT(stdin_examples.err, Contains("--examples -") && Contains("standard input") && Contains("write the prompts"));
    const CommandResult directory = run_expecting_input_error(work, {fixture("gpt2.pt"), corpus, "--examples", "."});
    CHECK_THAT(directory.err, Contains("--examples .") && Contains("found a directory"));
  }
  SECTION("a damaged corpus on standard input is named -") {
    const std::string binary = work.write("binary.txt", std::string("w3\0w4\n", 6));
    const std::string script = work.write("run.sh", "exec \"$1\" \"$2\" - -o \"$3\" -q < \"$4\"\n");
    const int status = std::system(("sh " + script + " " HEADSCAN_BINARY " " + fixture("gpt2.pt") + " " +
                                    (work / "out").string() + " " + binary + " 2> " + (work / "err").string())
                                       .c_str());
    CHECK(WEXITSTATUS(status) == 2);
    const std::string err = headscan::testing::read_file(work / "err");
    CHECK_THAT(err, Contains("- (standard input): expected a UTF-8 text corpus") && !Contains("headscan-stdin-"));
    CHECK_FALSE(std::filesystem::exists(work / "out"));
  }
}

// A pipe with no writer would block the open forever: headscan says what it found, at once.
TEST_CASE("cli: a pipe given as an input is rejected before it is opened", "[cli][errors][e2e]") {
  TempDir work;
  const std::string corpus = small_corpus(work);
  const TempDir elsewhere;  // outside `work`, whose files the checks read
  const std::string pipe = (elsewhere / "pipe").string();
  REQUIRE(::mkfifo(pipe.c_str(), 0600) == 0);

  SECTION("as the corpus") {
    const CommandResult result = run_expecting_input_error(work, {fixture("gpt2.pt"), pipe});
    CHECK_THAT(result.err, Contains(pipe) && Contains("a pipe (FIFO)") && Contains("write its contents to a file"));
  }
  SECTION("as the model") {
    const CommandResult result = run_expecting_input_error(work, {pipe, corpus});
    CHECK_THAT(result.err, Contains(pipe) && Contains("expected a TorchScript archive") && Contains("a pipe (FIFO)"));
  }
  SECTION("as the tokenizer") {
    const CommandResult result = run_expecting_input_error(work, {fixture("gpt2.pt"), corpus, "--tokenizer", pipe});
    CHECK_THAT(result.err, Contains(pipe) && Contains("a pipe (FIFO)"));
  }
  SECTION("as the idf file") {
    const CommandResult result = run_expecting_input_error(work, {fixture("gpt2.pt"), corpus, "--idf", pipe});
    CHECK_THAT(result.err, Contains(pipe) && Contains("a pipe (FIFO)"));
  }
}
