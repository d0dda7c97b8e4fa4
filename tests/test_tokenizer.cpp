// Tokenizers read from Hugging Face tokenizer.json: ids and original byte spans on small
// vocabularies, added tokens, normalizers and pre-tokenizers, and the errors for what is not
// supported.

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/errors.h"
#include "analyzer/tokenizers/tokenizer.h"
#include "tests/fixtures.h"
#include "tests/tokenizer_testing.h"

using headscan::InputError;
using headscan::Token;
using headscan::testing::TempDir;
using nlohmann::json;

namespace {

json added_token(std::int64_t id, const std::string& content, bool special = true) {
  return {{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", false}, {"special", special}};
}

// A tokenizer.json with a WordLevel model over `vocab`, as the tokenizers library writes it.
json wordlevel_spec(const json& vocab, const json& pre_tokenizer = {{"type", "WhitespaceSplit"}},
                    const json& normalizer = nullptr, const json& added_tokens = json::array()) {
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added_tokens},
          {"normalizer", normalizer},
          {"pre_tokenizer", pre_tokenizer},
          {"post_processor", nullptr},
          {"decoder", nullptr},
          {"model", {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "<unk>"}}}};
}

std::unique_ptr<headscan::Tokenizer> build(const json& spec) { return tokenizer_testing::build(spec); }

// Tokens as (id, piece, begin, end) tuples, for readable comparisons.
using TokenTuple = std::tuple<std::int64_t, std::string, std::size_t, std::size_t>;
std::vector<TokenTuple> encode(const headscan::Tokenizer& tokenizer, std::string_view text) {
  std::vector<TokenTuple> tuples;
  for (const Token& token : tokenizer.encode(text)) tuples.emplace_back(token.id, token.piece, token.begin, token.end);
  return tuples;
}

std::string error_of(const json& spec) {
  try {
    build(spec);
  } catch (const InputError& e) {
    return e.what();
  }
  FAIL("expected an InputError");
  return {};
}

const json kSpecials = json::array({added_token(0, "<s>"), added_token(1, "<unk>")});

}  // namespace

TEST_CASE("WordLevel with WhitespaceSplit and added tokens", "[tokenizer]") {
  const json vocab = {{"<s>", 0}, {"<unk>", 1}, {"w2", 2}, {"w3", 3}, {"w4", 4}, {"w5", 5}};
  const auto tokenizer = build(wordlevel_spec(vocab, {{"type", "WhitespaceSplit"}}, nullptr, kSpecials));

  SECTION("an added token in the middle of the text is cut out before pre-tokenization") {
    CHECK(encode(*tokenizer, "w3 w4  <s>w5") ==
          std::vector<TokenTuple>{{3, "w3", 0, 2}, {4, "w4", 3, 5}, {0, "<s>", 7, 10}, {5, "w5", 10, 12}});
  }
  SECTION("unknown words become the unk token with their own span") {
    CHECK(encode(*tokenizer, "w3 zz w9") ==
          std::vector<TokenTuple>{{3, "w3", 0, 2}, {1, "<unk>", 3, 5}, {1, "<unk>", 6, 8}});
  }
  SECTION("whitespace-only and empty text give no tokens") {
    CHECK(encode(*tokenizer, "").empty());
    CHECK(encode(*tokenizer, " \t ").empty());
  }
  SECTION("vocabulary queries") {
    CHECK(tokenizer->vocab_size() == 6);
    CHECK(tokenizer->describe() == "WordLevel, 6 tokens");
    CHECK(tokenizer->token_to_id("w4") == 4);
    CHECK(tokenizer->token_to_id("<s>") == 0);
    CHECK_FALSE(tokenizer->token_to_id("w9").has_value());
    CHECK(tokenizer->id_to_piece(5) == "w5");
    CHECK(tokenizer->id_to_piece(99).empty());
    CHECK(tokenizer->is_special(0));
    CHECK(tokenizer->is_special(1));
    CHECK_FALSE(tokenizer->is_special(3));
  }
  SECTION("invalid UTF-8 passes through as part of a word") {
    CHECK(encode(*tokenizer, "w2\xff w3") == std::vector<TokenTuple>{{1, "<unk>", 0, 3}, {3, "w3", 4, 6}});
  }
}

TEST_CASE("Added tokens beyond the vocabulary count in vocab_size", "[tokenizer]") {
  json added = kSpecials;
  added.push_back(added_token(3, "<mask>", false));
  const auto tokenizer =
      build(wordlevel_spec({{"<s>", 0}, {"<unk>", 1}, {"a", 2}}, {{"type", "WhitespaceSplit"}}, nullptr, added));
  CHECK(tokenizer->vocab_size() == 4);
  CHECK(tokenizer->id_to_piece(3) == "<mask>");
  CHECK_FALSE(tokenizer->is_special(3));
  CHECK(encode(*tokenizer, "a<mask>a") == std::vector<TokenTuple>{{2, "a", 0, 1}, {3, "<mask>", 1, 7}, {2, "a", 7, 8}});
}

TEST_CASE("Added tokens take the ids the tokenizers library gives them, not the file's", "[tokenizer]") {
  // The library assigns ids on load and only warns when the file says otherwise: a piece of the
  // vocabulary keeps its id, the same content its first id, others the next free id in file order.
  json added = kSpecials;
  added.push_back(added_token(9, "<mask>", false));
  added.push_back(added_token(4, "<x>"));
  added.push_back(added_token(7, "a"));
  added.push_back(added_token(8, "<mask>"));
  const auto tokenizer =
      build(wordlevel_spec({{"<s>", 0}, {"<unk>", 1}, {"a", 2}}, {{"type", "WhitespaceSplit"}}, nullptr, added));
  CHECK(tokenizer->token_to_id("<mask>") == 3);
  CHECK(tokenizer->token_to_id("<x>") == 4);
  CHECK(tokenizer->token_to_id("a") == 2);
  CHECK(tokenizer->vocab_size() == 5);
  CHECK(encode(*tokenizer, "a<mask><x>") == std::vector<TokenTuple>{{2, "a", 0, 1}, {3, "<mask>", 1, 7}, {4, "<x>", 7, 10}});
}

TEST_CASE("Added token matching follows the tokenizers library", "[tokenizer]") {
  const json vocab = {{"<unk>", 0}, {"a", 1}, {"b", 2}, {"ab", 3}};
  auto spec_with = [&](json token) {
    json added = json::array({added_token(0, "<unk>"), token});
    return wordlevel_spec(vocab, {{"type", "WhitespaceSplit"}}, nullptr, added);
  };

  SECTION("longest match first") {
    json added = json::array({added_token(4, "<s>"), added_token(5, "<s>x")});
    const auto tokenizer = build(wordlevel_spec(vocab, {{"type", "WhitespaceSplit"}}, nullptr, added));
    CHECK(encode(*tokenizer, "<s>x<s>") == std::vector<TokenTuple>{{5, "<s>x", 0, 4}, {4, "<s>", 4, 7}});
  }
  SECTION("lstrip takes the whitespace before the token into its span") {
    json mask = added_token(4, "<mask>");
    mask["lstrip"] = true;
    CHECK(encode(*build(spec_with(mask)), "a  <mask> b") ==
          std::vector<TokenTuple>{{1, "a", 0, 1}, {4, "<mask>", 1, 9}, {2, "b", 10, 11}});
  }
  SECTION("rstrip takes the whitespace after it") {
    json mask = added_token(4, "<mask>");
    mask["rstrip"] = true;
    CHECK(encode(*build(spec_with(mask)), "a <mask>  b") ==
          std::vector<TokenTuple>{{1, "a", 0, 1}, {4, "<mask>", 2, 10}, {2, "b", 10, 11}});
  }
  SECTION("single_word tokens match only between non-word characters") {
    json word = added_token(3, "ab", false);  // also the vocabulary's "ab"
    word["single_word"] = true;
    CHECK(encode(*build(spec_with(word)), "ab abc,ab") ==
          std::vector<TokenTuple>{{3, "ab", 0, 2}, {0, "<unk>", 3, 7}, {3, "ab", 7, 9}});
  }
  SECTION("normalized tokens are matched after the normalizer ran") {
    json mask = added_token(4, "[MASK]", false);
    mask["normalized"] = true;
    json added = json::array({added_token(0, "<unk>"), mask});
    const auto tokenizer = build(wordlevel_spec(vocab, {{"type", "WhitespaceSplit"}}, {{"type", "Lowercase"}}, added));
    CHECK(encode(*tokenizer, "A[Mask]b") ==
          std::vector<TokenTuple>{{1, "a", 0, 1}, {4, "[MASK]", 1, 7}, {2, "b", 7, 8}});
  }
}

TEST_CASE("Lowercase keeps spans on the original bytes", "[tokenizer][normalizer]") {
  // "İ" (2 bytes) lowercases to "i̇" (3 bytes) and "ẞ" (3 bytes) to "ß" (2 bytes).
  const json vocab = {{"<unk>", 0}, {"àb", 1}, {"x", 2}, {"i\xCC\x87", 3}, {"aßb", 4}};
  const json lowercase = {{"type", "Lowercase"}};
  const json sequence = {{"type", "Sequence"}, {"normalizers", json::array({lowercase})}};
  for (const json& normalizer : {lowercase, sequence}) {
    const auto tokenizer = build(wordlevel_spec(vocab, {{"type", "WhitespaceSplit"}}, normalizer));
    CHECK(encode(*tokenizer, "x ÀB") == std::vector<TokenTuple>{{2, "x", 0, 1}, {1, "àb", 2, 5}});
    CHECK(encode(*tokenizer, "İ X aẞB") ==
          std::vector<TokenTuple>{{3, "i\xCC\x87", 0, 2}, {2, "x", 3, 4}, {4, "aßb", 5, 10}});
  }
}

TEST_CASE("Whitespace pre-tokenizer splits words and punctuation", "[tokenizer][pre_tokenizer]") {
  const json vocab = {{"<unk>", 0}, {"Hello", 1}, {",", 2}, {"world", 3}, {"!", 4}, {"café", 5}, {"'", 6}, {"s", 7}};
  const auto tokenizer = build(wordlevel_spec(vocab, {{"type", "Whitespace"}}));
  CHECK(encode(*tokenizer, "Hello, world!") ==
        std::vector<TokenTuple>{{1, "Hello", 0, 5}, {2, ",", 5, 6}, {3, "world", 7, 12}, {4, "!", 12, 13}});
  SECTION("\\w is Unicode-aware") {
    CHECK(encode(*tokenizer, "café's") == std::vector<TokenTuple>{{5, "café", 0, 5}, {6, "'", 5, 6}, {7, "s", 6, 7}});
  }
  SECTION("in a Sequence after WhitespaceSplit") {
    const json sequence = {{"type", "Sequence"},
                           {"pretokenizers", json::array({{{"type", "WhitespaceSplit"}}, {{"type", "Whitespace"}}})}};
    CHECK(encode(*build(wordlevel_spec(vocab, sequence)), " world!!  s") ==
          std::vector<TokenTuple>{{3, "world", 1, 6}, {0, "<unk>", 6, 8}, {7, "s", 10, 11}});
  }
}

TEST_CASE("WhitespaceSplit handles Chinese, emoji and Unicode spaces", "[tokenizer][pre_tokenizer]") {
  const json vocab = {{"<unk>", 0}, {"我爱", 1}, {"你😀", 2}, {"ok", 3}};
  const auto tokenizer = build(wordlevel_spec(vocab));
  // U+3000 IDEOGRAPHIC SPACE (3 bytes) separates the first two words.
  CHECK(encode(*tokenizer, "我爱\u3000你😀 ok") ==
        std::vector<TokenTuple>{{1, "我爱", 0, 6}, {2, "你😀", 9, 16}, {3, "ok", 17, 19}});
}

TEST_CASE("Without pre-tokenizer the whole text is one word", "[tokenizer]") {
  const auto tokenizer = build(wordlevel_spec({{"<unk>", 0}, {"a b", 1}}, nullptr));
  CHECK(encode(*tokenizer, "a b") == std::vector<TokenTuple>{{1, "a b", 0, 3}});
}

TEST_CASE("WordLevel unk_token", "[tokenizer]") {
  SECTION("null: an unknown word is an error naming it") {
    json spec = wordlevel_spec({{"a", 0}});
    spec["model"]["unk_token"] = nullptr;
    const auto tokenizer = build(spec);
    CHECK(encode(*tokenizer, "a a") == std::vector<TokenTuple>{{0, "a", 0, 1}, {0, "a", 2, 3}});
    CHECK_THROWS_WITH(tokenizer->encode("a zebra"), Catch::Contains("\"zebra\"") && Catch::Contains("unk_token"));
  }
  SECTION("not in the vocabulary: an error at load") {
    json spec = wordlevel_spec({{"a", 0}});
    spec["model"]["unk_token"] = "[UNK]";
    const std::string message = error_of(spec);
    CHECK_THAT(message, Catch::Contains("test/tokenizer.json") && Catch::Contains("\"[UNK]\""));
  }
  SECTION("the unk id is special") {
    const auto tokenizer = build(wordlevel_spec({{"<unk>", 3}, {"a", 0}}));
    CHECK(tokenizer->is_special(3));
    CHECK_FALSE(tokenizer->is_special(0));
  }
}

TEST_CASE("Unsupported or malformed tokenizer.json", "[tokenizer][errors]") {
  const json vocab = {{"<unk>", 0}};
  SECTION("an unknown model type lists the supported models") {
    json spec = wordlevel_spec(vocab);
    spec["model"] = {{"type", "CharLevel"}, {"vocab", vocab}};
    CHECK_THAT(error_of(spec), Catch::Contains("test/tokenizer.json") && Catch::Contains("\"CharLevel\"") &&
                                   Catch::Contains("supported: BPE, WordPiece, Unigram, WordLevel"));
  }
  SECTION("a model without type is recognised by its fields") {
    json spec = wordlevel_spec(vocab);
    spec["model"] = {{"vocab", vocab}, {"merges", json::array()}};
    CHECK(headscan::tokenizer_from_hf_json(spec.dump(), "t.json")->describe() == "BPE, 1 tokens");
  }
  SECTION("malformed JSON") {
    CHECK_THROWS_WITH(headscan::tokenizer_from_hf_json("{\"model\": ", "m.pt:tokenizer.json"),
                      Catch::Contains("m.pt:tokenizer.json") && Catch::Contains("malformed JSON"));
  }
  SECTION("unknown pre-tokenizer") {
    CHECK_THAT(error_of(wordlevel_spec(vocab, {{"type", "UnicodeScripts"}})),
               Catch::Contains("\"UnicodeScripts\"") && Catch::Contains("Whitespace, WhitespaceSplit"));
  }
  SECTION("unknown pre-tokenizer inside a Sequence names its place") {
    const json sequence = {{"type", "Sequence"},
                           {"pretokenizers", json::array({{{"type", "Whitespace"}}, {{"type", "UnicodeScripts"}}})}};
    CHECK_THAT(error_of(wordlevel_spec(vocab, sequence)),
               Catch::Contains("pre_tokenizer.pretokenizers[1]") && Catch::Contains("\"UnicodeScripts\""));
  }
  SECTION("unknown normalizer") {
    CHECK_THAT(error_of(wordlevel_spec(vocab, nullptr, {{"type", "Precompiled"}})),
               Catch::Contains("\"Precompiled\"") && Catch::Contains("Lowercase"));
  }
  SECTION("unknown post-processor") {
    json spec = wordlevel_spec(vocab);
    spec["post_processor"] = {{"type", "Foo"}};
    CHECK_THAT(error_of(spec), Catch::Contains("post_processor") && Catch::Contains("TemplateProcessing"));
  }
  SECTION("missing vocab") {
    json spec = wordlevel_spec(vocab);
    spec["model"].erase("vocab");
    CHECK_THAT(error_of(spec), Catch::Contains("model.vocab") && Catch::Contains("missing"));
  }
  SECTION("a vocabulary id that is not an integer") {
    CHECK_THAT(error_of(wordlevel_spec({{"<unk>", 0}, {"a", "1"}})), Catch::Contains("model.vocab[\"a\"]"));
  }
  SECTION("no model") {
    json spec = wordlevel_spec(vocab);
    spec.erase("model");
    CHECK_THAT(error_of(spec), Catch::Contains("expected model to be"));
  }
}

TEST_CASE("load_tokenizer_file", "[tokenizer]") {
  TempDir dir;
  SECTION("a .json file") {
    const std::string path = dir.write("tokenizer.json", wordlevel_spec({{"<unk>", 0}, {"hi", 1}}).dump());
    CHECK(encode(*headscan::load_tokenizer_file(path), "hi") == std::vector<TokenTuple>{{1, "hi", 0, 2}});
  }
  SECTION("a .model file that is not a SentencePiece model") {
    const std::string path = dir.write("spm.model", "binary");
    CHECK_THROWS_AS(headscan::load_tokenizer_file(path), InputError);
    CHECK_THROWS_WITH(headscan::load_tokenizer_file(path),
                      Catch::Contains("spm.model") && Catch::Contains("SentencePiece"));
  }
  SECTION("another extension lists the supported formats") {
    const std::string path = dir.write("vocab.txt", "a\nb\n");
    CHECK_THROWS_WITH(headscan::load_tokenizer_file(path),
                      Catch::Contains("vocab.txt") && Catch::Contains("tokenizer.json") && Catch::Contains(".model"));
  }
  SECTION("a missing file") {
    const std::string path = (dir / "absent.json").string();
    CHECK_THROWS_AS(headscan::load_tokenizer_file(path), InputError);
    CHECK_THROWS_WITH(headscan::load_tokenizer_file(path), Catch::Contains("absent.json"));
  }
  SECTION("a directory") {
    CHECK_THROWS_WITH(headscan::load_tokenizer_file(dir.path().string()), Catch::Contains("directory"));
  }
  SECTION("errors inside the file name it") {
    const std::string path = dir.write("bad.json", "[1, 2");
    CHECK_THROWS_WITH(headscan::load_tokenizer_file(path), Catch::Contains("bad.json") && Catch::Contains("malformed"));
  }
}
