// WordPiece (BERT) and Unigram (SentencePiece unigram, T5) tokenizers from tokenizer.json: exact
// ids and byte spans on small vocabularies.

#include <catch2/catch.hpp>

#include "tests/tokenizer_testing.h"

using namespace tokenizer_testing;

namespace {

// BERT uncased: BertNormalizer (lowercase, strip accents, Chinese characters spaced),
// BertPreTokenizer, WordPiece with "##" and at most 12 characters per word.
json bert_spec() {
  const json vocab = {{"[UNK]", 0}, {"[CLS]", 1}, {"[SEP]", 2}, {"un", 3},   {"##aff", 4}, {"##able", 5},
                      {"run", 6},   {"##s", 7},   {"!", 8},     {"cafe", 9}, {"世", 10},   {"界", 11}};
  const json model = {{"type", "WordPiece"},
                      {"unk_token", "[UNK]"},
                      {"continuing_subword_prefix", "##"},
                      {"max_input_chars_per_word", 12},
                      {"vocab", vocab}};
  const json normalizer = {{"type", "BertNormalizer"},
                           {"clean_text", true},
                           {"handle_chinese_chars", true},
                           {"strip_accents", nullptr},
                           {"lowercase", true}};
  const json post_processor = {{"type", "BertProcessing"}, {"sep", {"[SEP]", 2}}, {"cls", {"[CLS]", 1}}};
  return tokenizer_spec(model, normalizer, {{"type", "BertPreTokenizer"}},
                        json::array({added_token(0, "[UNK]"), added_token(1, "[CLS]"), added_token(2, "[SEP]")}),
                        post_processor);
}

// Unigram with scores chosen so that the best segmentation is not the greedy one.
json unigram_spec(bool byte_fallback = false) {
  json vocab = json::array({{"<unk>", 0.0},
                            {"a", -1.0},
                            {"b", -1.0},
                            {"ab", -1.5},
                            {"abc", -5.0},
                            {"c", -2.0},
                            {"▁", -1.0},
                            {"▁ab", -1.0}});
  if (byte_fallback) vocab.insert(vocab.end(), {{"<0x78>", -3.0}, {"<0x79>", -3.0}});
  const json model = {{"type", "Unigram"}, {"unk_id", 0}, {"vocab", vocab}, {"byte_fallback", byte_fallback}};
  const json metaspace = {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "never"}, {"split", true}};
  return tokenizer_spec(model, nullptr, metaspace);
}

}  // namespace

TEST_CASE("WordPiece with ## continuation and [UNK]", "[tokenizer][wordpiece]") {
  const auto tokenizer = build(bert_spec());
  SECTION("greedy longest match; the normalizer lowercases") {
    CHECK(encode(*tokenizer, "UnAffable runs!") == Tokens{{3, "un", 0, 2},
                                                          {4, "##aff", 2, 5},
                                                          {5, "##able", 5, 9},
                                                          {6, "run", 10, 13},
                                                          {7, "##s", 13, 14},
                                                          {8, "!", 14, 15}});
  }
  SECTION("a word with an unmatched part is one [UNK] over the whole word") {
    CHECK(encode(*tokenizer, "runx runs") == Tokens{{0, "[UNK]", 0, 4}, {6, "run", 5, 8}, {7, "##s", 8, 9}});
  }
  SECTION("a word longer than max_input_chars_per_word is [UNK]") {
    // 13 characters, though "un" + "##able" pieces would match a prefix.
    CHECK(encode(*tokenizer, "unableunableu") == Tokens{{0, "[UNK]", 0, 13}});
  }
  SECTION("accents are stripped after NFD; spans stay on the original bytes") {
    CHECK(encode(*tokenizer, "Café!") == Tokens{{9, "cafe", 0, 5}, {8, "!", 5, 6}});
  }
  SECTION("Chinese characters become words of their own") {
    CHECK(encode(*tokenizer, "世界!") == Tokens{{10, "世", 0, 3}, {11, "界", 3, 6}, {8, "!", 6, 7}});
  }
  SECTION("BertProcessing: [CLS] before the text, [SEP] after it") {
    CHECK(tokenizer->template_prefix() == std::vector<std::string>{"[CLS]"});
    CHECK(tokenizer->template_suffix() == std::vector<std::string>{"[SEP]"});
    CHECK(tokenizer->is_special(0));
  }
  SECTION("unk_token missing from the vocabulary is an error at load") {
    json spec = bert_spec();
    spec["model"]["unk_token"] = "<unk>";
    CHECK_THAT(build_error(spec), Catch::Contains("\"<unk>\"") && Catch::Contains("WordPiece"));
  }
}

TEST_CASE("Unigram best segmentation", "[tokenizer][unigram]") {
  const auto tokenizer = build(unigram_spec());
  SECTION("the highest total score wins over the longest piece") {
    // abc: a+b+c = -4, ab+c = -3.5, abc = -5.
    CHECK(encode(*tokenizer, "abc") == Tokens{{3, "ab", 0, 2}, {5, "c", 2, 3}});
    // ▁ab alone (-1) beats ▁ + ab (-2.5).
    CHECK(encode(*tokenizer, "c ab") == Tokens{{5, "c", 0, 1}, {7, "▁ab", 1, 4}});
  }
  SECTION("unknown characters score lowest - 10 and fuse into one <unk>") {
    CHECK(encode(*tokenizer, "xab") == Tokens{{0, "<unk>", 0, 1}, {3, "ab", 1, 3}});
    CHECK(encode(*tokenizer, "xyab") == Tokens{{0, "<unk>", 0, 2}, {3, "ab", 2, 4}});
    CHECK(encode(*tokenizer, "a你c") == Tokens{{1, "a", 0, 1}, {0, "<unk>", 1, 4}, {5, "c", 4, 5}});
    CHECK(tokenizer->is_special(0));
  }
  SECTION("byte fallback spells an unknown run in <0xNN> pieces, each spanning the run") {
    const auto with_bytes = build(unigram_spec(/*byte_fallback=*/true));
    CHECK(encode(*with_bytes, "xyab") == Tokens{{8, "<0x78>", 0, 2}, {9, "<0x79>", 0, 2}, {3, "ab", 2, 4}});
    // A run with a byte missing from the vocabulary stays <unk>.
    CHECK(encode(*with_bytes, "xz") == Tokens{{0, "<unk>", 0, 2}});
  }
  SECTION("without unk_id an uncovered character is an error that names it") {
    json spec = unigram_spec();
    spec["model"]["unk_id"] = nullptr;
    CHECK_THROWS_WITH(build(spec)->encode("a你"), Catch::Contains("你") && Catch::Contains("unk_id"));
  }
  SECTION("unk_id outside the vocabulary") {
    json spec = unigram_spec();
    spec["model"]["unk_id"] = 99;
    CHECK_THAT(build_error(spec), Catch::Contains("unk_id") && Catch::Contains("99"));
  }
}
