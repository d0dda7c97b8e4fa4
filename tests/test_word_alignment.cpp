// Tokens to words by character spans, windows of a long sentence, and the relation statistics
// behind the syntactic score (DESIGN.md, "Syntactic heads").
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "analyzer/corpus/word_alignment.h"
#include "analyzer/run/sequences/sequences.h"
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

TEST_CASE("a lone prefix ▁ belongs to no word, ▁ merged with the first character does", "[syntax][alignment]") {
  // "Designed by Juan" as a Metaspace tokenizer gives it when "▁D" is not in the vocabulary: the
  // prepended "▁" is a token of its own, aligned to the "D" it was put before.
  const std::string text = "Designed by Juan";
  const ParsedSentence sentence = words_at({{0, 8}, {9, 11}, {12, 16}});
  const auto tokenizer = tokenizer_with_special_zero();
  SECTION("▁ alone") {
    const std::vector<Token> tokens = {
        {2, "▁", 0, 1}, {2, "D", 0, 1}, {2, "esigned", 1, 8}, {2, "▁by", 8, 11}, {2, "▁Juan", 11, 16}};
    CHECK(headscan::align_tokens_to_words(tokens, text, sentence, *tokenizer) == std::vector<int>{-1, 0, 0, 1, 2});
  }
  SECTION("▁Designed as one token") {
    const std::vector<Token> tokens = {{2, "▁Designed", 0, 8}, {2, "▁by", 8, 11}, {2, "▁Juan", 11, 16}};
    CHECK(headscan::align_tokens_to_words(tokens, text, sentence, *tokenizer) == std::vector<int>{0, 1, 2});
  }
}

TEST_CASE("pieces that stand for whitespace only belong to no word wherever they are aligned", "[syntax][alignment]") {
  // Every token below spans the "D" of "Dog", as a space a normalizer put before it would.
  const std::string text = "Dog";
  const ParsedSentence sentence = words_at({{0, 3}});
  auto word_of = [&](const headscan::Tokenizer& tokenizer, const std::string& piece) {
    return headscan::align_tokens_to_words({{2, piece, 0, 1}}, text, sentence, tokenizer).at(0);
  };
  SECTION("SentencePiece style: ▁ runs and byte-fallback pieces of whitespace bytes") {
    const auto tokenizer = tokenizer_with_special_zero();
    for (const std::string piece : {"▁", "▁▁", "<0x20>", "<0x0A>", "<0x09>", " "}) {
      INFO("piece " << piece);
      CHECK(word_of(*tokenizer, piece) == -1);
    }
    for (const std::string piece : {"D", "▁D", "<0x44>", "<0xC2>", "<0x2>", "Ġ", "Ċ"}) {
      INFO("piece " << piece);  // Ġ and Ċ are letters here (Maltese), not bytes
      CHECK(word_of(*tokenizer, piece) == 0);
    }
  }
  SECTION("byte-level: pieces whose bytes are whitespace") {
    using namespace tokenizer_testing;
    const json model = {{"type", "BPE"}, {"vocab", {{"<unk>", 0}, {"x", 1}}}, {"merges", json::array()}};
    const auto tokenizer = build(tokenizer_spec(model, nullptr, {{"type", "ByteLevel"}, {"add_prefix_space", true}}));
    REQUIRE(tokenizer->byte_level());
    for (const std::string piece : {"Ġ", "ĠĠ", "Ċ", "ĉ", "čĊ", "Âł" /* U+00A0 no-break space */}) {
      INFO("piece " << piece);
      CHECK(word_of(*tokenizer, piece) == -1);
    }
    for (const std::string piece : {"D", "ĠD", "Â" /* part of a character */, "<0x20>" /* literal text */}) {
      INFO("piece " << piece);
      CHECK(word_of(*tokenizer, piece) == 0);
    }
  }
}

TEST_CASE("a Metaspace tokenizer's prefix ▁ before a capital belongs to no word", "[syntax][alignment]") {
  using namespace tokenizer_testing;
  const std::string text = "Designed by Juan";
  const ParsedSentence sentence = words_at({{0, 8}, {9, 11}, {12, 16}});
  SECTION("Unigram behind a Metaspace pre-tokenizer (T5, ALBERT, SentencePiece conversions)") {
    const json vocab = json::array(
        {{"<unk>", 0.0}, {"▁", -2.0}, {"D", -3.0}, {"esigned", -3.0}, {"▁by", -2.0}, {"▁Juan", -2.0}, {"▁D", -20.0}});
    // "▁D" is in the vocabulary but ▁ + D scores better: Unigram keeps them apart.
    const json model = {{"type", "Unigram"}, {"unk_id", 0}, {"vocab", vocab}};
    const json metaspace = {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "always"}, {"split", true}};
    const auto tokenizer = build(tokenizer_spec(model, nullptr, metaspace));
    const std::vector<Token> tokens = tokenizer->encode(text);
    REQUIRE(encode(*tokenizer, text) ==
            Tokens{{1, "▁", 0, 1}, {2, "D", 0, 1}, {3, "esigned", 1, 8}, {4, "▁by", 8, 11}, {5, "▁Juan", 11, 16}});
    CHECK(headscan::align_tokens_to_words(tokens, text, sentence, *tokenizer) == std::vector<int>{-1, 0, 0, 1, 2});
  }
  SECTION("Llama 2 style: Prepend(▁) and Replace normalizers, BPE with byte fallback") {
    json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}, {"▁", 3}, {"D", 4}, {"e", 5}, {"s", 6}, {"i", 7},
                  {"g", 8},     {"n", 9},   {"d", 10},   {"b", 11}, {"y", 12}, {"J", 13}, {"u", 14}, {"a", 15},
                  {"▁b", 16},   {"▁by", 17}, {"▁J", 18}, {"▁Ju", 19}, {"an", 20}, {"▁Juan", 21}, {"es", 22},
                  {"ig", 23},   {"ned", 24}, {"ne", 25}, {"esig", 26}, {"esigned", 27}, {"<0x20>", 28}};
    const json merges = {"▁ b", "▁b y", "▁ J", "▁J u", "a n", "▁Ju an", "e s", "i g", "n e", "ne d", "es ig",
                         "esig ned"};
    const json model = {{"type", "BPE"},       {"unk_token", "<unk>"}, {"fuse_unk", true},
                        {"byte_fallback", true}, {"vocab", vocab},      {"merges", merges}};
    const json normalizer = {
        {"type", "Sequence"},
        {"normalizers", json::array({{{"type", "Prepend"}, {"prepend", "▁"}},
                                     {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}}})}};
    const auto tokenizer = build(tokenizer_spec(model, normalizer, nullptr,
                                                json::array({added_token(0, "<unk>"), added_token(1, "<s>"),
                                                             added_token(2, "</s>")})));
    const std::vector<Token> tokens = tokenizer->encode(text);
    REQUIRE(encode(*tokenizer, text) ==
            Tokens{{3, "▁", 0, 1}, {4, "D", 0, 1}, {27, "esigned", 1, 8}, {17, "▁by", 8, 11}, {21, "▁Juan", 11, 16}});
    CHECK(headscan::align_tokens_to_words(tokens, text, sentence, *tokenizer) == std::vector<int>{-1, 0, 0, 1, 2});
  }
  SECTION("byte-level BPE with add_prefix_space: a lone Ġ before the first word") {
    const json vocab = {{"<unk>", 0}, {"Ġ", 1}, {"D", 2}, {"e", 3}, {"ĠJ", 4}, {"Ġb", 5}, {"y", 6}, {"Ġby", 7},
                        {"u", 8}, {"a", 9}, {"n", 10}, {"J", 11}, {"b", 12}, {"s", 13}, {"i", 14}, {"g", 15}, {"d", 16},
                        {"De", 17}};
    const json merges = {"Ġ b", "Ġb y", "Ġ J", "D e"};
    const json model = {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}};
    const json pre_tokenizer = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
    const auto tokenizer = build(tokenizer_spec(model, nullptr, pre_tokenizer));
    const std::string short_text = "De by J";
    const std::vector<Token> tokens = tokenizer->encode(short_text);
    REQUIRE(encode(*tokenizer, short_text) ==
            Tokens{{1, "Ġ", 0, 1}, {17, "De", 0, 2}, {7, "Ġby", 2, 5}, {4, "ĠJ", 5, 7}});
    const ParsedSentence words = words_at({{0, 2}, {3, 5}, {6, 7}});
    CHECK(headscan::align_tokens_to_words(tokens, short_text, words, *tokenizer) == std::vector<int>{-1, 0, 1, 2});
  }
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
