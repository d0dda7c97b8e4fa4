// Normalizers of tokenizer.json (Unicode forms through utf8proc, accents, Strip, Replace, Prepend,
// BertNormalizer): the normalized words a WordLevel model sees, with spans on the original bytes.

#include <catch2/catch.hpp>

#include "tests/tokenizer_testing.h"

using namespace tokenizer_testing;

namespace {

// The whole normalized text is one word; the vocabulary holds the expected forms.
const json kVocab = {{"<unk>", 0}, {"e\xCC\x81", 1}, {"\xC3\xA9", 2}, {"fix", 3},  {"alborg", 4},
                     {"全角AB", 5}, {"hi", 6},          {"a b", 7},       {"▁a▁b", 8}, {"e", 9},
                     {"hello", 10}, {"世", 11},         {"界", 12},       {"x", 13},   {"1⁄4", 14},
                     {"i\xCC\x87stanbul", 15}};

std::unique_ptr<headscan::Tokenizer> with_normalizer(const json& normalizer, const json& pre_tokenizer = nullptr) {
  return build(tokenizer_spec(wordlevel_model(kVocab), normalizer, pre_tokenizer));
}

json sequence(const json& normalizers) { return {{"type", "Sequence"}, {"normalizers", normalizers}}; }

}  // namespace

TEST_CASE("Unicode normalization forms through utf8proc", "[tokenizer][normalizer]") {
  SECTION("NFD decomposes é; both output characters span the original é") {
    CHECK(encode(*with_normalizer({{"type", "NFD"}}), "\xC3\xA9") == Tokens{{1, "e\xCC\x81", 0, 2}});
  }
  SECTION("NFC composes e + combining acute; the result spans both original characters") {
    CHECK(encode(*with_normalizer({{"type", "NFC"}}), "e\xCC\x81") == Tokens{{2, "\xC3\xA9", 0, 3}});
  }
  SECTION("NFKC expands the ligature ﬁ and the vulgar fraction ¼") {
    CHECK(encode(*with_normalizer({{"type", "NFKC"}}), "ﬁx") == Tokens{{3, "fix", 0, 4}});
    // U+2044 FRACTION SLASH, not "/".
    CHECK(encode(*with_normalizer({{"type", "NFKC"}}), "¼") == Tokens{{14, "1⁄4", 0, 2}});
  }
  SECTION("NFKC folds full-width Latin next to Chinese, which stays as it is") {
    const auto tokenizer = with_normalizer({{"type", "NFKC"}});
    CHECK(encode(*tokenizer, "全角ＡＢ") == Tokens{{5, "全角AB", 0, 12}});
  }
  SECTION("spans of the words after NFKD stay on their own characters") {
    const auto tokenizer = with_normalizer({{"type", "NFKD"}}, {{"type", "WhitespaceSplit"}});
    CHECK(encode(*tokenizer, "ﬁx \xC3\xA9") == Tokens{{3, "fix", 0, 4}, {1, "e\xCC\x81", 5, 7}});
  }
  SECTION("ASCII and already normalized text pass unchanged") {
    CHECK(encode(*with_normalizer({{"type", "NFC"}}), "hi") == Tokens{{6, "hi", 0, 2}});
    CHECK(encode(*with_normalizer({{"type", "NFC"}}), "世") == Tokens{{11, "世", 0, 3}});
  }
}

TEST_CASE("Accents, case, Strip, Replace and Prepend", "[tokenizer][normalizer]") {
  SECTION("NFKD + StripAccents + Lowercase (BERT uncased without BertNormalizer)") {
    const auto tokenizer =
        with_normalizer(sequence({{{"type", "NFKD"}}, {{"type", "StripAccents"}}, {{"type", "Lowercase"}}}));
    CHECK(encode(*tokenizer, "Ålborg") == Tokens{{4, "alborg", 0, 7}});
  }
  SECTION("StripAccents alone does not decompose: a precomposed é stays") {
    CHECK(encode(*with_normalizer({{"type", "StripAccents"}}), "\xC3\xA9") == Tokens{{2, "\xC3\xA9", 0, 2}});
    CHECK(encode(*with_normalizer({{"type", "StripAccents"}}), "e\xCC\x81") == Tokens{{9, "e", 0, 1}});
  }
  SECTION("Lowercase through utf8proc keeps İ → i̇ (SpecialCasing)") {
    CHECK(encode(*with_normalizer({{"type", "Lowercase"}}), "X") == Tokens{{13, "x", 0, 1}});
    CHECK(encode(*with_normalizer({{"type", "Lowercase"}}), "İstanbul") == Tokens{{15, "i\xCC\x87stanbul", 0, 9}});
  }
  SECTION("Strip removes whitespace at either end") {
    CHECK(encode(*with_normalizer({{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}}), " \u3000hi  ") ==
          Tokens{{6, "hi", 4, 6}});
    CHECK(encode(*with_normalizer({{"type", "Strip"}, {"strip_left", false}, {"strip_right", true}}), "hi  ") ==
          Tokens{{6, "hi", 0, 2}});
  }
  SECTION("Replace with a regex pattern") {
    const json replace = {{"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", " "}};
    CHECK(encode(*with_normalizer(replace), "a    b") == Tokens{{7, "a b", 0, 6}});
  }
  SECTION("Prepend and Replace: the SentencePiece-style ▁") {
    const json normalizer = sequence({{{"type", "Prepend"}, {"prepend", "▁"}},
                                      {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}}});
    CHECK(encode(*with_normalizer(normalizer), "a b") == Tokens{{8, "▁a▁b", 0, 3}});
    CHECK(encode(*with_normalizer(normalizer), "").empty());
  }
  SECTION("BertNormalizer: control characters dropped, tabs to spaces, CJK spaced, accents stripped") {
    const json bert = {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true},
                       {"strip_accents", nullptr}, {"lowercase", true}};
    const auto tokenizer = with_normalizer(bert, {{"type", "WhitespaceSplit"}});
    CHECK(encode(*tokenizer, "H\xC3\xA9llo\x01\t世界") ==
          Tokens{{10, "hello", 0, 6}, {11, "世", 8, 11}, {12, "界", 11, 14}});
    CHECK(encode(*tokenizer, "HELLO\x7F") == Tokens{{10, "hello", 0, 5}});
  }
  SECTION("an unknown normalizer type is an error that lists the supported ones") {
    CHECK_THAT(build_error(tokenizer_spec(wordlevel_model(kVocab), {{"type", "Precompiled"}}, nullptr)),
               Catch::Contains("\"Precompiled\"") && Catch::Contains("NFKC") && Catch::Contains("BertNormalizer"));
  }
}
