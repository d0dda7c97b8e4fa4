#pragma once
// Helpers for the tokenizer tests: tokenizer.json documents built in code, and tokens as
// (id, piece, begin, end) tuples with byte offsets into the original text.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/errors.h"
#include "analyzer/tokenizers/tokenizer.h"

namespace tokenizer_testing {

using nlohmann::json;
using TokenTuple = std::tuple<std::int64_t, std::string, std::size_t, std::size_t>;
using Tokens = std::vector<TokenTuple>;

inline json added_token(std::int64_t id, const std::string& content, bool special = true) {
  return {{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", false}, {"special", special}};
}

// A tokenizer.json as the tokenizers library writes it.
inline json tokenizer_spec(const json& model, const json& normalizer, const json& pre_tokenizer,
                           const json& added_tokens = json::array(), const json& post_processor = nullptr) {
  return {{"version", "1.0"},           {"truncation", nullptr},         {"padding", nullptr},
          {"added_tokens", added_tokens}, {"normalizer", normalizer},      {"pre_tokenizer", pre_tokenizer},
          {"post_processor", post_processor}, {"decoder", nullptr},     {"model", model}};
}

// A WordLevel model over `vocab` with "<unk>" as unknown token: shows the words a pipeline makes.
inline json wordlevel_model(const json& vocab) {
  return {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "<unk>"}};
}

// With HEADSCAN_TOKENIZER_DUMP=DIR in the environment, every tokenizer.json that builds is also
// written into DIR, so that tests/fixtures/check_tokenizers.py compares headscan with the
// tokenizers library on each of them.
inline std::unique_ptr<headscan::Tokenizer> build(const json& spec) {
  const std::string text = spec.dump();
  auto tokenizer = headscan::tokenizer_from_hf_json(text, "test/tokenizer.json");
  if (const char* dump = std::getenv("HEADSCAN_TOKENIZER_DUMP")) {
    char name[32];
    std::snprintf(name, sizeof name, "/%016zx.json", std::hash<std::string>{}(text));
    std::ofstream(std::string(dump) + name, std::ios::binary) << text;
  }
  return tokenizer;
}

inline Tokens encode(const headscan::Tokenizer& tokenizer, std::string_view text) {
  Tokens tuples;
  for (const headscan::Token& token : tokenizer.encode(text)) {
    tuples.emplace_back(token.id, token.piece, token.begin, token.end);
  }
  return tuples;
}

// The message of the InputError that building `spec` throws; empty if it throws none.
inline std::string build_error(const json& spec) {
  try {
    build(spec);
  } catch (const headscan::InputError& e) {
    return e.what();
  }
  return {};
}

}  // namespace tokenizer_testing
