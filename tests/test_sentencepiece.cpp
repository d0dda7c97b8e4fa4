// SentencePiece .model tokenizers: models trained at test time with Debian's spm_train, ids
// checked against spm_encode on the same text, spans checked against the text.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/errors.h"
#include "analyzer/tokenizers/tokenizer.h"
#include "tests/fixtures.h"

using headscan::testing::TempDir;

namespace {

// Lines unlike the training text too: characters it never saw (你好, 😀) need byte fallback.
const std::vector<std::string> kProbeLines = {
    "the cat said hello",
    "she played with the ball in the sun!",
    "café  über naïve, happy dog?",
    "hello 你好 world 😀",
    "zebra quokka",
};

std::string training_text() {
  const std::vector<std::string> words = {"the", "cat",  "sat",    "on",   "mat",   "a",     "dog",   "ran",
                                          "to",  "park", "and",    "played", "with", "ball", "in",    "sun",
                                          "she", "was",  "happy",  "he",   "said",  "hello", "world", "café",
                                          "naïve", "über"};
  std::mt19937 random(7);
  std::ostringstream text;
  for (int line = 0; line < 300; ++line) {
    const int length = 3 + static_cast<int>(random() % 10);
    for (int i = 0; i < length; ++i) text << (i ? " " : "") << words[random() % words.size()];
    text << ".\n";
  }
  return text.str();
}

std::string quoted(const std::string& text) { return "'" + text + "'"; }

bool has_program(const char* name) { return std::system(("command -v " + std::string(name) + " >/dev/null").c_str()) == 0; }

void run(const std::string& command) {
  INFO(command);
  REQUIRE(std::system(command.c_str()) == 0);
}

// spm_encode's ids for each line of `lines`.
std::vector<std::vector<std::int64_t>> spm_encode_ids(const TempDir& dir, const std::string& model,
                                                      const std::vector<std::string>& lines) {
  std::string input;
  for (const std::string& line : lines) input += line + "\n";
  const std::string input_path = dir.write("probe.txt", input);
  const std::string output_path = (dir / "probe.ids").string();
  run("spm_encode --model=" + quoted(model) + " --output_format=id < " + quoted(input_path) + " > " +
      quoted(output_path));
  std::ifstream in(output_path);
  std::vector<std::vector<std::int64_t>> ids;
  for (std::string line; std::getline(in, line);) {
    std::istringstream numbers(line);
    ids.emplace_back();
    for (std::int64_t id = 0; numbers >> id;) ids.back().push_back(id);
  }
  return ids;
}

}  // namespace

TEST_CASE("SentencePiece .model trained with spm_train gives spm_encode's ids", "[tokenizer][sentencepiece]") {
  if (!has_program("spm_train") || !has_program("spm_encode")) {
    FAIL("spm_train/spm_encode not found: install Debian's sentencepiece package "
         "(HEADSCAN_WITH_TESTS=1 scripts/setup.sh does)");
  }
  TempDir dir;
  const std::string corpus = dir.write("corpus.txt", training_text());
  for (const std::string model_type : {"bpe", "unigram"}) {
    DYNAMIC_SECTION("model_type " << model_type) {
      const std::string prefix = (dir / ("m_" + model_type)).string();
      run("spm_train --input=" + quoted(corpus) + " --model_prefix=" + quoted(prefix) +
          " --vocab_size=300 --model_type=" + model_type +
          " --byte_fallback=true --character_coverage=1.0 --hard_vocab_limit=false --minloglevel=2 "
          "> /dev/null 2>&1");
      const std::string model = prefix + ".model";
      const auto tokenizer = headscan::load_tokenizer_file(model);
      const auto expected = spm_encode_ids(dir, model, kProbeLines);
      REQUIRE(expected.size() == kProbeLines.size());

      for (std::size_t i = 0; i < kProbeLines.size(); ++i) {
        const std::string& line = kProbeLines[i];
        INFO("line: " << line);
        const std::vector<headscan::Token> tokens = tokenizer->encode(line);
        std::vector<std::int64_t> ids;
        for (const headscan::Token& token : tokens) ids.push_back(token.id);
        CHECK(ids == expected[i]);
        for (const headscan::Token& token : tokens) {
          CHECK(token.begin <= token.end);
          CHECK(token.end <= line.size());
          CHECK(token.piece == tokenizer->id_to_piece(token.id));
        }
      }

      SECTION("byte pieces span the whole character they belong to") {
        const std::string line = "hello 你好 world 😀";
        std::vector<std::pair<std::size_t, std::size_t>> byte_spans;
        for (const headscan::Token& token : tokenizer->encode(line)) {
          if (token.piece.rfind("<0x", 0) == 0) byte_spans.emplace_back(token.begin, token.end);
        }
        const std::size_t ni = line.find("你");
        const std::size_t emoji = line.find("😀");
        CHECK(byte_spans == std::vector<std::pair<std::size_t, std::size_t>>{{ni, ni + 3},
                                                                              {ni, ni + 3},
                                                                              {ni, ni + 3},
                                                                              {ni + 3, ni + 6},
                                                                              {ni + 3, ni + 6},
                                                                              {ni + 3, ni + 6},
                                                                              {emoji, emoji + 4},
                                                                              {emoji, emoji + 4},
                                                                              {emoji, emoji + 4},
                                                                              {emoji, emoji + 4}});
      }
      SECTION("vocabulary queries, special pieces and the BOS of the model") {
        CHECK(tokenizer->token_to_id("<s>") == 1);
        CHECK(tokenizer->token_to_id("<unk>") == 0);
        CHECK_FALSE(tokenizer->token_to_id("no such piece").has_value());
        CHECK(tokenizer->is_special(0));  // <unk>
        CHECK(tokenizer->is_special(1));  // <s>
        CHECK(tokenizer->is_special(2));  // </s>
        CHECK_FALSE(tokenizer->is_special(*tokenizer->token_to_id("<0xE4>")));
        CHECK(tokenizer->template_prefix() == std::vector<std::string>{"<s>"});
        CHECK_THAT(tokenizer->describe(), Catch::StartsWith("SentencePiece, "));
      }
    }
  }
}

TEST_CASE("A file that is not a SentencePiece model", "[tokenizer][sentencepiece]") {
  TempDir dir;
  const std::string path = dir.write("tokenizer.model", "{\"not\": \"a model\"}");
  CHECK_THROWS_AS(headscan::load_tokenizer_file(path), headscan::InputError);
  CHECK_THROWS_WITH(headscan::load_tokenizer_file(path),
                    Catch::Contains("tokenizer.model") && Catch::Contains("SentencePiece model"));
}
