// The command line's errors for what a run reads besides the model (test_cli_errors.cpp says what
// every error shares): an empty or binary corpus, malformed CoNLL-U, options that would be ignored,
// binary --examples prompts, a damaged corpus on standard input, and a pipe given as any input.

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/cli_error_testing.h"
#include "tests/fixtures.h"

using Catch::Matchers::Contains;
using headscan::testing::CommandResult;
using headscan::testing::fixture;
using headscan::testing::run_expecting_input_error;
using headscan::testing::run_headscan;
using headscan::testing::small_corpus;
using headscan::testing::TempDir;
using headscan::testing::word_corpus;

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
