// Pre-tokenizers of tokenizer.json (Metaspace, Split with every behavior, Digits, Punctuation,
// BertPreTokenizer, CharDelimiterSplit): the words a WordLevel model sees, with byte spans.

#include <catch2/catch.hpp>

#include "tests/tokenizer_testing.h"

using namespace tokenizer_testing;

namespace {

// Words as (piece, begin, end), whatever their ids: the model maps unknown words to <unk>, so
// the vocabulary lists every expected word.
using Words = std::vector<std::tuple<std::string, std::size_t, std::size_t>>;

const json kVocab = {{"<unk>", 0}, {"<s>", 1},  {"a", 2},     {"-", 3},    {"b", 4},    {"c", 5},     {"a-", 6},
                     {"b-", 7},    {"-b", 8},   {"-c", 9},    {"--", 10},  {"123", 11}, {"45", 12},   {"1", 13},
                     {"2", 14},    {"3", 15},   {"hi", 16},   {"!", 17},   {"?", 18},   {"Hello", 19}, {",", 20},
                     {"world", 21}, {"▁Hey▁", 22}, {"how▁", 23}, {"are▁", 24}, {"▁you", 25}, {"▁Hey", 26}, {"▁", 27},
                     {"▁how", 28}, {"▁are", 29}, {"x", 30},   {"y", 31},   {"٣", 32},   {"$", 33},
                     {"how", 34}};

Words words(const json& pre_tokenizer, std::string_view text) {
  const auto tokenizer = build(tokenizer_spec(wordlevel_model(kVocab), nullptr, pre_tokenizer,
                                              json::array({added_token(0, "<unk>"), added_token(1, "<s>")})));
  Words result;
  for (const auto& [id, piece, begin, end] : encode(*tokenizer, text)) {
    CHECK(id != 0);  // every expected word is in the vocabulary
    result.emplace_back(piece, begin, end);
  }
  return result;
}

json split(const char* behavior, bool invert = false) {
  return {{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behavior}, {"invert", invert}};
}

}  // namespace

TEST_CASE("Split pre-tokenizer behaviors", "[tokenizer][pre_tokenizer]") {
  const std::string text = "a-b--c";
  CHECK(words(split("Removed"), text) == Words{{"a", 0, 1}, {"b", 2, 3}, {"c", 5, 6}});
  CHECK(words(split("Isolated"), text) == Words{{"a", 0, 1}, {"-", 1, 2}, {"b", 2, 3}, {"-", 3, 4}, {"-", 4, 5}, {"c", 5, 6}});
  CHECK(words(split("MergedWithPrevious"), text) == Words{{"a-", 0, 2}, {"b-", 2, 4}, {"-", 4, 5}, {"c", 5, 6}});
  CHECK(words(split("MergedWithNext"), text) == Words{{"a", 0, 1}, {"-b", 1, 3}, {"-", 3, 4}, {"-c", 4, 6}});
  CHECK(words(split("Contiguous"), text) == Words{{"a", 0, 1}, {"-", 1, 2}, {"b", 2, 3}, {"--", 3, 5}, {"c", 5, 6}});
  CHECK(words(split("Removed", /*invert=*/true), text) == Words{{"-", 1, 2}, {"-", 3, 4}, {"-", 4, 5}});

  SECTION("a regex pattern: Llama 3's numbers in groups of at most three") {
    const json digits = {{"type", "Split"}, {"pattern", {{"Regex", "\\p{N}{1,3}"}}}, {"behavior", "Isolated"},
                         {"invert", false}};
    CHECK(words(digits, "12345") == Words{{"123", 0, 3}, {"45", 3, 5}});
  }
  SECTION("an unknown behavior and a pattern that does not compile are errors") {
    CHECK_THAT(build_error(tokenizer_spec(wordlevel_model(kVocab), nullptr, split("Merged"))),
               Catch::Contains("pre_tokenizer.behavior") && Catch::Contains("MergedWithNext"));
    json bad = split("Isolated");
    bad["pattern"] = {{"Regex", "(unclosed"}};
    CHECK_THAT(build_error(tokenizer_spec(wordlevel_model(kVocab), nullptr, bad)),
               Catch::Contains("pre_tokenizer.pattern"));
  }
}

TEST_CASE("Metaspace prepend schemes", "[tokenizer][pre_tokenizer]") {
  auto metaspace = [](const char* scheme, bool split_words) {
    return json{{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", scheme}, {"split", split_words}};
  };
  SECTION("always, split: every word starts with ▁") {
    CHECK(words(metaspace("always", true), "Hey  you") == Words{{"▁Hey", 0, 3}, {"▁", 3, 4}, {"▁you", 4, 8}});
  }
  SECTION("first: only text at the start of the line gets ▁ (here the text between added tokens)") {
    // As the tokenizers library's own test (pre_tokenizers/metaspace.rs, non_legacy_meta_space).
    CHECK(words(metaspace("first", false), " Hey <s>how <s>are <s> you") == Words{{"▁Hey▁", 0, 5},
                                                                                  {"<s>", 5, 8},
                                                                                  {"how▁", 8, 12},
                                                                                  {"<s>", 12, 15},
                                                                                  {"are▁", 15, 19},
                                                                                  {"<s>", 19, 22},
                                                                                  {"▁you", 22, 26}});
    CHECK(words(metaspace("first", true), "how<s>how") == Words{{"▁how", 0, 3}, {"<s>", 3, 6}, {"how", 6, 9}});
  }
  SECTION("always: text after an added token gets ▁ too") {
    CHECK(words(metaspace("always", true), "how<s>how") == Words{{"▁how", 0, 3}, {"<s>", 3, 6}, {"▁how", 6, 9}});
  }
  SECTION("older files: add_prefix_space instead of prepend_scheme") {
    const json old = {{"type", "Metaspace"}, {"replacement", "▁"}, {"add_prefix_space", false}};
    CHECK(words(old, "how are") == Words{{"how", 0, 3}, {"▁are", 3, 7}});
    json contradiction = old;
    contradiction["prepend_scheme"] = "always";
    CHECK_THAT(build_error(tokenizer_spec(wordlevel_model(kVocab), nullptr, contradiction)),
               Catch::Contains("add_prefix_space"));
  }
}

TEST_CASE("Digits, Punctuation, BertPreTokenizer, CharDelimiterSplit", "[tokenizer][pre_tokenizer]") {
  CHECK(words({{"type", "Digits"}, {"individual_digits", true}}, "a123b") ==
        Words{{"a", 0, 1}, {"1", 1, 2}, {"2", 2, 3}, {"3", 3, 4}, {"b", 4, 5}});
  CHECK(words({{"type", "Digits"}, {"individual_digits", false}}, "a123b") ==
        Words{{"a", 0, 1}, {"123", 1, 4}, {"b", 4, 5}});
  // ٣ (ARABIC-INDIC DIGIT THREE) is numeric too.
  CHECK(words({{"type", "Digits"}, {"individual_digits", true}}, "a٣") == Words{{"a", 0, 1}, {"٣", 1, 3}});
  CHECK(words({{"type", "Punctuation"}, {"behavior", "Isolated"}}, "hi!?") ==
        Words{{"hi", 0, 2}, {"!", 2, 3}, {"?", 3, 4}});
  // "$" is a symbol (Sc), but BERT counts every ASCII non-alphanumeric as punctuation.
  CHECK(words({{"type", "BertPreTokenizer"}}, "Hello, world! $") ==
        Words{{"Hello", 0, 5}, {",", 5, 6}, {"world", 7, 12}, {"!", 12, 13}, {"$", 14, 15}});
  CHECK(words({{"type", "CharDelimiterSplit"}, {"delimiter", "-"}}, "x-y--a") ==
        Words{{"x", 0, 1}, {"y", 2, 3}, {"a", 5, 6}});
  SECTION("an unknown pre-tokenizer lists the supported ones") {
    CHECK_THAT(build_error(tokenizer_spec(wordlevel_model(kVocab), nullptr, {{"type", "UnicodeScripts"}})),
               Catch::Contains("\"UnicodeScripts\"") && Catch::Contains("ByteLevel") && Catch::Contains("Metaspace"));
  }
}
