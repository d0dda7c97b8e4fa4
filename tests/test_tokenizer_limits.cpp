// Limits of tokenizer.json found by the probe of issue 12: token ids that would size tables
// beyond memory, and regexes that backtrack without bound.

#include <catch2/catch.hpp>

#include <string>

#include "tests/tokenizer_testing.h"

using Catch::Contains;
using namespace tokenizer_testing;

TEST_CASE("token ids are bounded: 2^40 is an input error naming the token, not bad_alloc", "[tokenizer][limits]") {
  const json words = {{"type", "WhitespaceSplit"}};
  SECTION("in model.vocab") {
    CHECK_THAT(build_error(tokenizer_spec(wordlevel_model({{"<unk>", 0}, {"cat", std::int64_t{1} << 40}}), nullptr,
                                          words)),
               Contains("test/tokenizer.json") && Contains("model.vocab[\"cat\"]") &&
                   Contains("an integer id from 0 to 16777215") && Contains("found number 1099511627776"));
  }
  SECTION("beyond 64 bits and negative") {
    CHECK_THAT(build_error(tokenizer_spec(wordlevel_model({{"<unk>", 0}, {"cat", -3}}), nullptr, words)),
               Contains("model.vocab[\"cat\"]") && Contains("found number -3"));
    const std::string text = R"({"model": {"type": "WordLevel", "vocab": {"cat": 18446744073709551616}}})";
    CHECK_THROWS_WITH(headscan::tokenizer_from_hf_json(text, "t.json"), Contains("model.vocab[\"cat\"]"));
  }
  SECTION("in added_tokens") {
    CHECK_THAT(build_error(tokenizer_spec(wordlevel_model({{"<unk>", 0}}), nullptr, words,
                                          json::array({added_token(std::int64_t{1} << 40, "<s>")}))),
               Contains("added_tokens[0].id") && Contains("found number 1099511627776"));
  }
  SECTION("an id far beyond the number of tokens") {
    CHECK_THAT(build_error(tokenizer_spec(wordlevel_model({{"<unk>", 0}, {"cat", 10000000}}), nullptr, words)),
               Contains("model.vocab[\"cat\"]") && Contains("an id below 65540") && Contains("found 10000000"));
    CHECK_THAT(build_error(tokenizer_spec(wordlevel_model({{"<unk>", 0}}), nullptr, words,
                                          json::array({added_token(200000, "<s>")}))),
               Contains("added_tokens[0].id") && Contains("found 200000"));
  }
  SECTION("dense vocabularies with added tokens after them are fine") {
    json vocab = json::object();
    for (int i = 0; i < 1000; ++i) vocab["w" + std::to_string(i)] = i;
    vocab["<unk>"] = 1000;
    CHECK(build_error(tokenizer_spec(wordlevel_model(vocab), nullptr, words,
                                     json::array({added_token(1001, "<s>"), added_token(66000, "<pad>")}))) == "");
  }
}

TEST_CASE("a regex that hits PCRE2's match limit is an input error naming the file and pattern",
          "[tokenizer][limits][regex]") {
  const json split = {{"type", "Split"},
                      {"pattern", {{"Regex", "(a|aa)+$"}}},
                      {"behavior", "Isolated"},
                      {"invert", false}};
  const auto tokenizer = build(tokenizer_spec(wordlevel_model({{"<unk>", 0}}), nullptr, split));
  CHECK(encode(*tokenizer, "xaa").size() == 2);  // "x", then "aa" matched
  CHECK_THROWS_AS(tokenizer->encode(std::string(60, 'a') + "b"), headscan::InputError);
  CHECK_THROWS_WITH(tokenizer->encode(std::string(60, 'a') + "b"),
                    Contains("test/tokenizer.json: pre_tokenizer.pattern: regex /(a|aa)+$/") &&
                        Contains("limit") && Contains("give a tokenizer whose pattern has no nested repetition"));
}
