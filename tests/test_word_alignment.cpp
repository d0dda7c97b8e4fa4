// Tokens to words by character spans, windows of a long sentence, and the relation statistics
// behind the syntactic score (DESIGN.md, "Syntactic heads").
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "analyzer/corpus/word_alignment.h"
#include "analyzer/run/sequences.h"
#include "heads/relation_accuracy.h"
#include "tests/tokenizer_testing.h"

using headscan::ArcDirection;
using headscan::ParsedSentence;
using headscan::ParsedWord;
using headscan::Token;

namespace {

// Words at the given byte spans, no arcs.
ParsedSentence words_at(const std::vector<std::pair<std::size_t, std::size_t>>& spans) {
  ParsedSentence sentence;
  for (const auto& [begin, end] : spans) sentence.words.push_back(ParsedWord{begin, end, -1, ""});
  return sentence;
}

std::unique_ptr<headscan::Tokenizer> tokenizer_with_special_zero() {
  using namespace tokenizer_testing;
  const json spec = tokenizer_spec(wordlevel_model({{"<s>", 0}, {"<unk>", 1}, {"x", 2}}), nullptr,
                                   {{"type", "WhitespaceSplit"}}, json::array({added_token(0, "<s>")}));
  return headscan::tokenizer_from_hf_json(spec.dump(), "test");
}

}  // namespace

TEST_CASE("a word split into several tokens: every piece belongs to it", "[syntax][alignment]") {
  // "unbelievable dogs" as un|believ|able| dogs (byte-level style, the space on the next token).
  const std::string text = "unbelievable dogs";
  const ParsedSentence sentence = words_at({{0, 12}, {13, 17}});
  const std::vector<Token> tokens = {{2, "un", 0, 2}, {2, "believ", 2, 8}, {2, "able", 8, 12}, {2, "Ġdogs", 12, 17}};
  const auto tokenizer = tokenizer_with_special_zero();
  CHECK(headscan::align_tokens_to_words(tokens, text, sentence, *tokenizer) == std::vector<int>{0, 0, 0, 1});
}

TEST_CASE("a token spanning a space belongs to the first word it overlaps", "[syntax][alignment]") {
  // "of the cat": one token "of the" (a merged multi-word piece), one "▁cat" with its space, one
  // token that is whitespace only, and one special token that overlaps text.
  const std::string text = "of the  cat x";
  const ParsedSentence sentence = words_at({{0, 2}, {3, 6}, {8, 11}, {12, 13}});
  const std::vector<Token> tokens = {{2, "of the", 0, 6}, {2, " ", 6, 7}, {2, "▁cat", 7, 11}, {0, "<s>", 11, 13}};
  const auto tokenizer = tokenizer_with_special_zero();
  CHECK(headscan::align_tokens_to_words(tokens, text, sentence, *tokenizer) == std::vector<int>{0, -1, 2, -1});
}

TEST_CASE("a token starting in the space before a word belongs to that word", "[syntax][alignment]") {
  const std::string text = "a dog";
  const ParsedSentence sentence = words_at({{0, 1}, {2, 5}});
  const std::vector<Token> tokens = {{2, "a", 0, 1}, {2, " d", 1, 3}, {2, "og", 3, 5}};
  const auto tokenizer = tokenizer_with_special_zero();
  CHECK(headscan::align_tokens_to_words(tokens, text, sentence, *tokenizer) == std::vector<int>{0, 1, 1});
}

TEST_CASE("windows of a long sentence keep the arcs whose two ends they hold", "[syntax][alignment]") {
  // Five words, one token each; windows of 3 tokens after BOS: words 0-2, then 3-4.
  ParsedSentence sentence = words_at({{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}});
  sentence.words[0].head = 1;  // 0 → 1 inside window 0
  sentence.words[0].relation = "det";
  sentence.words[2].head = 3;  // crosses the windows: dropped
  sentence.words[2].relation = "nsubj";
  sentence.words[4].head = 3;  // 4 → 3 inside window 1: local 1 → 0
  sentence.words[4].relation = "obj";
  headscan::SequenceShape shape;
  shape.bos_id = 0;
  shape.max_length = 4;
  std::vector<headscan::Sequence> sequences(2);
  sequences[0].ids = {0, 2, 2, 2};
  sequences[1].ids = {0, 2, 2};
  headscan::attach_words(sequences, {0, 1, 2, 3, 4}, sentence, shape);

  REQUIRE(sequences[0].words);
  CHECK(sequences[0].words->token_word == std::vector<int>{-1, 0, 1, 2});
  CHECK(sequences[0].words->words == 3);
  REQUIRE(sequences[0].words->arcs.size() == 1);
  CHECK(sequences[0].words->arcs[0].dependent == 0);
  CHECK(sequences[0].words->arcs[0].head == 1);
  CHECK(sequences[0].words->arcs[0].relation == "det");
  CHECK(sequences[0].words->arcs[0].offset == 1);

  CHECK(sequences[1].words->token_word == std::vector<int>{-1, 0, 1});
  REQUIRE(sequences[1].words->arcs.size() == 1);
  CHECK(sequences[1].words->arcs[0].dependent == 1);
  CHECK(sequences[1].words->arcs[0].head == 0);
  CHECK(sequences[1].words->arcs[0].offset == -1);
}

TEST_CASE("most frequent offset: ties go to the offset nearest 0, then the negative one", "[syntax][relations]") {
  CHECK(headscan::most_frequent_offset({{-3, 5}, {2, 7}, {4, 7}}) == std::pair<int, std::int64_t>{2, 7});
  CHECK(headscan::most_frequent_offset({{-2, 4}, {2, 4}, {3, 1}}) == std::pair<int, std::int64_t>{-2, 4});
  CHECK(headscan::most_frequent_offset({{1, 9}}) == std::pair<int, std::int64_t>{1, 9});
}

TEST_CASE("relation accuracy against the offset baseline, best direction, support and merge", "[syntax][relations]") {
  headscan::RelationAccuracy statistics;
  statistics.begin(/*layers=*/1, /*heads=*/2);
  // nsubj: 30 arcs each way; offsets d2h: +1 ×18, +2 ×12 (baseline 0.6); h2d mirrored.
  for (int arc = 0; arc < 30; ++arc) {
    const int offset = arc < 18 ? 1 : 2;
    statistics.add_arc("nsubj", ArcDirection::d2h, offset);
    statistics.add_arc("nsubj", ArcDirection::h2d, -offset);
  }
  for (int arc = 0; arc < 21; ++arc) statistics.add_correct("nsubj", ArcDirection::h2d, 0, 0);  // 0.7
  for (int arc = 0; arc < 20; ++arc) statistics.add_correct("nsubj", ArcDirection::d2h, 0, 0);  // 0.667
  for (int arc = 0; arc < 18; ++arc) statistics.add_correct("nsubj", ArcDirection::d2h, 0, 1);  // 0.6
  // amod: 19 arcs, below the support of 20.
  for (int arc = 0; arc < 19; ++arc) statistics.add_arc("amod", ArcDirection::d2h, 1);

  auto results = statistics.results(0, 0, 0.10, 20);
  REQUIRE(results.size() == 1);
  CHECK(results[0].relation == "nsubj");
  CHECK(results[0].direction == ArcDirection::h2d);
  CHECK(results[0].accuracy == Approx(0.7));
  CHECK(results[0].baseline == Approx(0.6));
  CHECK(results[0].baseline_offset == -1);
  CHECK(results[0].support == 30);
  CHECK(results[0].passed);  // 0.7 ≥ 0.6 + 0.1

  results = statistics.results(0, 1, 0.10, 20);
  REQUIRE(results.size() == 1);
  CHECK(results[0].direction == ArcDirection::d2h);  // d2h 0.6 against h2d 0
  CHECK_FALSE(results[0].passed);
  CHECK(statistics.results(0, 0, 0.10, 19).size() == 2);  // amod reported at support 19

  headscan::RelationAccuracy shard;
  shard.begin(1, 2);
  shard.merge(statistics.save());
  shard.merge(statistics.save());
  results = shard.results(0, 0, 0.10, 20);
  REQUIRE(results.size() == 2);  // amod now has 38 arcs
  CHECK(results[1].support == 60);
  CHECK(results[1].accuracy == Approx(0.7));

  headscan::RelationAccuracy other;
  other.begin(2, 2);
  CHECK_THROWS_AS(other.merge(statistics.save()), headscan::InputError);
}
