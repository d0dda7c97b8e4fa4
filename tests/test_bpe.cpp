// BPE tokenizers from tokenizer.json: GPT-2 byte-level and SentencePiece-style byte fallback, on
// small vocabularies whose expected ids and byte spans follow by hand from the format's rules.

#include <catch2/catch.hpp>

#include "tests/tokenizer_testing.h"

using namespace tokenizer_testing;

namespace {

// GPT-2 style: ByteLevel pre-tokenizer (GPT-2 regex, bytes as "Ġ"-style characters), BPE merges
// in rank order: 0 "Ġ w", 1 "o r", 2 "Ġw or", 3 "l d", 4 "Ġwor ld", 5 "H e", 6 "l l", 7 "He ll",
// 8 "' m", 9 "Ġ h", 10 "e r", 11 "Ġh er", 12 "ä ½", 13 "' t", 14 "Ġh i".
const json kGpt2Vocab = {
    {"<|endoftext|>", 0}, {"H", 1},      {"e", 2},    {"l", 3},     {"o", 4},     {"Ġ", 5},     {"w", 6},
    {"r", 7},             {"d", 8},      {",", 9},    {"I", 10},    {"'", 11},    {"m", 12},    {"h", 13},
    {"t", 14},            {"n", 15},     {"Ġw", 16},  {"or", 17},   {"Ġwor", 18}, {"ld", 19},   {"Ġworld", 20},
    {"He", 21},           {"ll", 22},    {"Hell", 23}, {"'m", 24},  {"Ġh", 25},   {"er", 26},   {"Ġher", 27},
    {"ä", 28},            {"½", 29},     {"ł", 30},   {"ä½", 31},   {"Ã", 32},    {"©", 33},    {"ð", 34},
    {"Ł", 35},            {"ĺ", 36},     {"Ģ", 37},   {"'t", 38},   {"a", 39},    {"i", 40},    {"Ġhi", 41}};
const json kGpt2Merges = {"Ġ w", "o r",  "Ġw or", "l d", "Ġwor ld", "H e", "l l", "He ll",
                          "' m", "Ġ h", "e r",   "Ġh er", "ä ½",   "' t", "Ġh i"};

json gpt2_spec(bool add_prefix_space = false, const json& merges = kGpt2Merges) {
  const json model = {{"type", "BPE"},        {"dropout", nullptr},       {"unk_token", nullptr},
                      {"continuing_subword_prefix", ""}, {"end_of_word_suffix", ""}, {"fuse_unk", false},
                      {"byte_fallback", false}, {"vocab", kGpt2Vocab},   {"merges", merges}};
  const json pre_tokenizer = {
      {"type", "ByteLevel"}, {"add_prefix_space", add_prefix_space}, {"trim_offsets", true}, {"use_regex", true}};
  return tokenizer_spec(model, nullptr, pre_tokenizer, json::array({added_token(0, "<|endoftext|>")}),
                        {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}});
}

// LLaMA-2 style: normalizer Prepend("▁") + Replace(" " → "▁"), no pre-tokenizer, BPE with
// byte_fallback over <0x00>..<0xFF> (ids 3..258), merges "▁ H", "▁H i".
json llama_vocab() {
  json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  for (int byte = 0; byte < 256; ++byte) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", byte);
    vocab[name] = 3 + byte;
  }
  vocab.update({{"▁", 259}, {"H", 260}, {"i", 261}, {"▁H", 262}, {"▁Hi", 263}, {"好", 264}});
  return vocab;
}

json llama_spec(bool byte_fallback = true, bool fuse_unk = true, const json& merges = {"▁ H", "▁H i"}) {
  const json model = {{"type", "BPE"},          {"dropout", nullptr},        {"unk_token", "<unk>"},
                      {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr},
                      {"fuse_unk", fuse_unk},   {"byte_fallback", byte_fallback}, {"vocab", llama_vocab()},
                      {"merges", merges}};
  const json normalizer = {
      {"type", "Sequence"},
      {"normalizers", json::array({{{"type", "Prepend"}, {"prepend", "▁"}},
                                   {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}}})}};
  const json template_processing = {
      {"type", "TemplateProcessing"},
      {"single", json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                              {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
      {"pair", json::array()},
      {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}};
  return tokenizer_spec(model, normalizer, nullptr,
                        json::array({added_token(0, "<unk>"), added_token(1, "<s>"), added_token(2, "</s>")}),
                        template_processing);
}

}  // namespace

TEST_CASE("GPT-2 byte-level BPE", "[tokenizer][bpe]") {
  const auto tokenizer = build(gpt2_spec());
  CHECK(tokenizer->describe() == "BPE, 42 tokens");

  SECTION("leading spaces become Ġ and merges apply lowest rank first") {
    CHECK(encode(*tokenizer, "Hello world, I'm here") == Tokens{{23, "Hell", 0, 4},
                                                                {4, "o", 4, 5},
                                                                {20, "Ġworld", 5, 11},
                                                                {9, ",", 11, 12},
                                                                {5, "Ġ", 12, 13},
                                                                {10, "I", 13, 14},
                                                                {24, "'m", 14, 16},
                                                                {27, "Ġher", 16, 20},
                                                                {2, "e", 20, 21}});
  }
  SECTION("the GPT-2 regex: a space before a space stands alone, contractions split off") {
    CHECK(encode(*tokenizer, "  hi") == Tokens{{5, "Ġ", 0, 1}, {41, "Ġhi", 1, 4}});
    CHECK(encode(*tokenizer, "don't") ==
          Tokens{{8, "d", 0, 1}, {4, "o", 1, 2}, {15, "n", 2, 3}, {38, "'t", 3, 5}});
    CHECK(encode(*tokenizer, "I'm") == Tokens{{10, "I", 0, 1}, {24, "'m", 1, 3}});
  }
  SECTION("multi-byte characters become several byte tokens, each spanning the whole character") {
    CHECK(encode(*tokenizer, "é") == Tokens{{32, "Ã", 0, 2}, {33, "©", 0, 2}});
    CHECK(encode(*tokenizer, "你") == Tokens{{31, "ä½", 0, 3}, {30, "ł", 0, 3}});
    CHECK(encode(*tokenizer, "😀") == Tokens{{34, "ð", 0, 4}, {35, "Ł", 0, 4}, {36, "ĺ", 0, 4}, {37, "Ģ", 0, 4}});
  }
  SECTION("Chinese and emoji in a sentence") {
    // Words: "I", " 你" (a letter run with its space), "😀" (a symbol run).
    CHECK(encode(*tokenizer, "I 你😀") == Tokens{{10, "I", 0, 1},
                                                 {5, "Ġ", 1, 2},
                                                 {31, "ä½", 2, 5},
                                                 {30, "ł", 2, 5},
                                                 {34, "ð", 5, 9},
                                                 {35, "Ł", 5, 9},
                                                 {36, "ĺ", 5, 9},
                                                 {37, "Ģ", 5, 9}});
  }
  SECTION("an added token in the middle of the text") {
    CHECK(encode(*tokenizer, "Hi<|endoftext|>I'm") ==
          Tokens{{1, "H", 0, 1}, {40, "i", 1, 2}, {0, "<|endoftext|>", 2, 15}, {10, "I", 15, 16}, {24, "'m", 16, 18}});
    CHECK(tokenizer->is_special(0));
  }
  SECTION("the ByteLevel post-processor adds no token before the text") {
    CHECK(tokenizer->template_prefix().empty());
  }
  SECTION("add_prefix_space: every piece between added tokens gets a space aligned to its first character") {
    const auto prefixed = build(gpt2_spec(/*add_prefix_space=*/true));
    CHECK(encode(*prefixed, "hi<|endoftext|>hi") ==
          Tokens{{41, "Ġhi", 0, 2}, {0, "<|endoftext|>", 2, 15}, {41, "Ġhi", 15, 17}});
    CHECK(encode(*prefixed, " hi") == Tokens{{41, "Ġhi", 0, 3}});
  }
  SECTION("merges written as [\"a\", \"b\"] pairs mean the same") {
    json pairs = json::array();
    for (const json& merge : kGpt2Merges) {
      const std::string text = merge.get<std::string>();
      pairs.push_back({text.substr(0, text.find(' ')), text.substr(text.find(' ') + 1)});
    }
    CHECK(encode(*build(gpt2_spec(false, pairs)), "Hello world") ==
          Tokens{{23, "Hell", 0, 4}, {4, "o", 4, 5}, {20, "Ġworld", 5, 11}});
  }
  SECTION("characters missing from a vocabulary without unk_token are dropped, as the tokenizers library does") {
    CHECK(encode(*tokenizer, "Hz") == Tokens{{1, "H", 0, 1}});
  }
}

TEST_CASE("SentencePiece-style BPE with byte fallback", "[tokenizer][bpe]") {
  const auto tokenizer = build(llama_spec());

  SECTION("▁ prefix, spaces as ▁, <0xNN> tokens for characters missing from the vocabulary") {
    // "Hi 你好" normalizes to "▁Hi▁你好"; 你 = E4 BD A0 is not in the vocabulary, 好 is.
    CHECK(encode(*tokenizer, "Hi 你好") == Tokens{{263, "▁Hi", 0, 2},
                                                  {259, "▁", 2, 3},
                                                  {3 + 0xE4, "<0xE4>", 3, 6},
                                                  {3 + 0xBD, "<0xBD>", 3, 6},
                                                  {3 + 0xA0, "<0xA0>", 3, 6},
                                                  {264, "好", 6, 9}});
  }
  SECTION("an emoji becomes four byte tokens") {
    CHECK(encode(*tokenizer, "😀") == Tokens{{259, "▁", 0, 4},
                                             {3 + 0xF0, "<0xF0>", 0, 4},
                                             {3 + 0x9F, "<0x9F>", 0, 4},
                                             {3 + 0x98, "<0x98>", 0, 4},
                                             {3 + 0x80, "<0x80>", 0, 4}});
  }
  SECTION("added tokens are cut out first; the normalizer runs on each piece") {
    CHECK(encode(*tokenizer, "Hi<s>Hi") == Tokens{{263, "▁Hi", 0, 2}, {1, "<s>", 2, 5}, {263, "▁Hi", 5, 7}});
  }
  SECTION("the template's <s> is the BOS candidate, never added by encode") {
    CHECK(tokenizer->template_prefix() == std::vector<std::string>{"<s>"});
    CHECK(tokenizer->template_suffix().empty());  // Llama's "<s> $A"
    CHECK(tokenizer->is_special(1));
    CHECK_FALSE(tokenizer->is_special(3 + 0xE4));
  }
  SECTION("without byte fallback unknown characters fuse into one <unk> when fuse_unk is set") {
    CHECK(encode(*build(llama_spec(false, true)), "Hi 你你") ==
          Tokens{{263, "▁Hi", 0, 2}, {259, "▁", 2, 3}, {0, "<unk>", 3, 9}});
    CHECK(encode(*build(llama_spec(false, false)), "Hi 你你") ==
          Tokens{{263, "▁Hi", 0, 2}, {259, "▁", 2, 3}, {0, "<unk>", 3, 6}, {0, "<unk>", 6, 9}});
  }
  SECTION("merges as pairs") {
    const json pairs = json::array({json::array({"▁", "H"}), json::array({"▁H", "i"})});
    CHECK(encode(*build(llama_spec(true, true, pairs)), "Hi") == Tokens{{263, "▁Hi", 0, 2}});
  }
}

TEST_CASE("BPE options", "[tokenizer][bpe]") {
  auto bpe = [](const json& vocab, const json& merges) {
    return json{{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"unk_token", "<unk>"}};
  };
  const json whitespace = {{"type", "WhitespaceSplit"}};

  SECTION("continuing_subword_prefix: the merge result drops the right part's prefix") {
    json model = bpe({{"<unk>", 0}, {"u", 1}, {"##n", 2}, {"un", 3}, {"##d", 4}}, {"u ##n"});
    model["continuing_subword_prefix"] = "##";
    CHECK(encode(*build(tokenizer_spec(model, nullptr, whitespace)), "und") ==
          Tokens{{3, "un", 0, 2}, {4, "##d", 2, 3}});
  }
  SECTION("end_of_word_suffix goes on the last character") {
    json model = bpe({{"<unk>", 0}, {"b", 1}, {"a</w>", 2}, {"ba</w>", 3}, {"a", 4}}, {"b a</w>"});
    model["end_of_word_suffix"] = "</w>";
    CHECK(encode(*build(tokenizer_spec(model, nullptr, whitespace)), "ba ab") ==
          Tokens{{3, "ba</w>", 0, 2}, {4, "a", 3, 4}, {0, "<unk>", 4, 5}});
  }
  SECTION("ignore_merges: a word in the vocabulary is one token") {
    // The merges alone would give "ab" "c"; "abc" is in the vocabulary.
    json model = bpe({{"<unk>", 0}, {"a", 1}, {"b", 2}, {"c", 3}, {"ab", 4}, {"abc", 5}}, {"a b"});
    CHECK(encode(*build(tokenizer_spec(model, nullptr, whitespace)), "abc") == Tokens{{4, "ab", 0, 2}, {3, "c", 2, 3}});
    model["ignore_merges"] = true;
    CHECK(encode(*build(tokenizer_spec(model, nullptr, whitespace)), "abc cab") ==
          Tokens{{5, "abc", 0, 3}, {3, "c", 4, 5}, {4, "ab", 5, 7}});
  }
  SECTION("byte fallback with missing byte tokens: the unknown token waits, as in the tokenizers library") {
    // 你 (E4 BD A0) has no byte tokens here, é (C3 A9) has: 你 becomes a pending <unk> that is
    // only added after the bytes of é, at the end of the word.
    json model = bpe({{"<unk>", 0}, {"<0xC3>", 1}, {"<0xA9>", 2}}, json::array());
    model["byte_fallback"] = true;
    CHECK(encode(*build(tokenizer_spec(model, nullptr, whitespace)), "你é") ==
          Tokens{{1, "<0xC3>", 3, 5}, {2, "<0xA9>", 3, 5}, {0, "<unk>", 0, 3}});
  }
  SECTION("equal ranks: the leftmost pair merges first") {
    json model = bpe({{"<unk>", 0}, {"a", 1}, {"aa", 2}}, {"a a"});
    CHECK(encode(*build(tokenizer_spec(model, nullptr, whitespace)), "aaa") == Tokens{{2, "aa", 0, 2}, {1, "a", 2, 3}});
  }
  SECTION("errors") {
    CHECK_THAT(build_error(tokenizer_spec(bpe({{"a", 0}}, {"a b"}), nullptr, whitespace)),
               Catch::Contains("\"b\"") && Catch::Contains("model.merges"));
    CHECK_THAT(build_error(tokenizer_spec(bpe({{"a", 0}}, {"a a a"}), nullptr, whitespace)),
               Catch::Contains("model.merges[0]"));
    json random = bpe({{"a", 0}}, json::array());
    random["dropout"] = 0.1;
    CHECK_THAT(build_error(tokenizer_spec(random, nullptr, whitespace)), Catch::Contains("dropout"));
    json unk_missing = bpe({{"a", 0}}, json::array());
    const auto tokenizer = build(tokenizer_spec(unk_missing, nullptr, whitespace));
    CHECK_THROWS_WITH(tokenizer->encode("ab"), Catch::Contains("<unk>") && Catch::Contains("not in model.vocab"));
  }
}
