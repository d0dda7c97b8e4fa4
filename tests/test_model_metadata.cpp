// headscan.json: every field's type and range, the size bound, and messages that quote what the
// file holds (issue 12: max_length 2.5 was accepted, 2^65 was reported as a negative number).

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "analyzer/errors.h"
#include "analyzer/model/model_metadata.h"

using Catch::Contains;
using headscan::parse_model_metadata;

namespace {

constexpr const char* kOrigin = "m.pt:headscan.json";

std::string error_of(const std::string& text) {
  try {
    parse_model_metadata(text, kOrigin);
  } catch (const headscan::InputError& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE("headscan.json: a full file and an empty one", "[metadata]") {
  const headscan::ModelMetadata metadata = parse_model_metadata(
      R"({"name": "gpt2", "bos_token": "<|endoftext|>", "max_length": 1024, "causal": true, "n_kv_heads": 4})",
      kOrigin);
  CHECK(metadata.name == "gpt2");
  CHECK(metadata.bos_token == "<|endoftext|>");
  CHECK(metadata.max_length == 1024);
  CHECK(metadata.causal == true);
  CHECK(metadata.n_kv_heads == 4);
  const headscan::ModelMetadata defaults = parse_model_metadata("", kOrigin);
  CHECK_FALSE(defaults.max_length.has_value());
  CHECK_FALSE(defaults.causal.has_value());
  const headscan::ModelMetadata nulls = parse_model_metadata(R"({"max_length": null, "name": null})", kOrigin);
  CHECK_FALSE(nulls.max_length.has_value());
  CHECK(nulls.name.empty());
}

TEST_CASE("headscan.json: max_length is a whole number from 2 to 1048576", "[metadata][errors]") {
  CHECK(parse_model_metadata(R"({"max_length": 2})", kOrigin).max_length == 2);
  CHECK(parse_model_metadata(R"({"max_length": 1048576})", kOrigin).max_length == 1048576);
  SECTION("a fraction") {
    CHECK_THAT(error_of(R"({"max_length": 2.5})"),
               Contains(kOrigin) && Contains("expected max_length to be an integer from 2 to 1048576") &&
                   Contains("found number 2.5") && Contains("fix headscan.json"));
  }
  SECTION("2^65 is reported as written, not wrapped") {
    const std::string message = error_of(R"({"max_length": 36893488147419103232})");
    CHECK_THAT(message, Contains("found number 3.6893488147419103e+19"));
    CHECK_THAT(message, !Contains("-9223372036854775808"));
  }
  SECTION("beyond the bound, below 2, negative") {
    CHECK_THAT(error_of(R"({"max_length": 1000000000000})"), Contains("found number 1000000000000"));
    CHECK_THAT(error_of(R"({"max_length": 1})"), Contains("found number 1"));
    CHECK_THAT(error_of(R"({"max_length": -5})"), Contains("found number -5"));
    CHECK_THAT(error_of(R"({"max_length": 18446744073709551615})"), Contains("found number 18446744073709551615"));
  }
  SECTION("a string") { CHECK_THAT(error_of(R"({"max_length": "512"})"), Contains("found string \"512\"")); }
}

TEST_CASE("headscan.json: n_kv_heads is a whole number from 1 to 4096", "[metadata][errors]") {
  CHECK(parse_model_metadata(R"({"n_kv_heads": 1})", kOrigin).n_kv_heads == 1);
  CHECK_THAT(error_of(R"({"n_kv_heads": 0})"), Contains("n_kv_heads to be an integer from 1 to 4096"));
  CHECK_THAT(error_of(R"({"n_kv_heads": -1})"), Contains("found number -1"));
  CHECK_THAT(error_of(R"({"n_kv_heads": 4294967297})"), Contains("found number 4294967297"));
  CHECK_THAT(error_of(R"({"n_kv_heads": 2.0})"), Contains("found number 2.0"));
}

TEST_CASE("headscan.json: step is a checkpoint's whole training step", "[metadata][errors]") {
  CHECK_FALSE(parse_model_metadata(R"({"name": "m"})", kOrigin).step.has_value());
  CHECK(parse_model_metadata(R"({"step": 0})", kOrigin).step == 0);
  CHECK(parse_model_metadata(R"({"step": 12000})", kOrigin).step == 12000);
  CHECK_THAT(error_of(R"({"step": -1})"), Contains("step to be an integer from 0 to") && Contains("found number -1"));
  CHECK_THAT(error_of(R"({"step": 1.5})"), Contains("found number 1.5"));
  CHECK_THAT(error_of(R"({"step": "500"})"), Contains("step"));
}

TEST_CASE("headscan.json: types of the other fields, the document and its size", "[metadata][errors]") {
  CHECK_THAT(error_of(R"({"causal": 1})"), Contains("expected causal to be true or false, found number 1"));
  CHECK_THAT(error_of(R"({"name": ["a"]})"), Contains("expected name to be a string, found array [\"a\"]"));
  CHECK_THAT(error_of("[1, 2]"), Contains("found array [1,2]"));
  CHECK_THAT(error_of("{"), Contains("found invalid JSON"));
  SECTION("a long value is quoted in part") {
    const std::string message = error_of("{\"bos_token\": [\"" + std::string(100000, 'x') + "\"]}");
    CHECK_THAT(message, Contains("[\"xxxx") && Contains("..."));
    CHECK(message.size() < 400);
  }
  SECTION("more than 1 MiB") {
    const std::string big = "{\"name\": \"" + std::string(headscan::kMaxMetadataBytes, 'x') + "\"}";
    CHECK_THAT(error_of(big), Contains("1048588 bytes (the limit is 1048576)"));
  }
}

TEST_CASE("headscan.json: checked_length is a whole number from 2 to 1048576", "[metadata][errors]") {
  CHECK_FALSE(parse_model_metadata(R"({"max_length": 512})", kOrigin).checked_length.has_value());
  CHECK(parse_model_metadata(R"({"checked_length": 4096})", kOrigin).checked_length == 4096);
  CHECK_THAT(error_of(R"({"checked_length": 1048577})"),
             Contains("expected checked_length to be an integer from 2 to 1048576") && Contains("found number 1048577"));
  CHECK_THAT(error_of(R"({"checked_length": 64.5})"), Contains("found number 64.5"));
}

// The documents the exporters' checker (analyzer/python/headscan/_export/headscan_json.py) reads
// too, in tests/python/test_export.py: both must accept and refuse the same ones.
TEST_CASE("headscan.json: the cases the exporters' checker agrees on", "[metadata][errors]") {
  std::ifstream file(std::string(HEADSCAN_SOURCE_DIR) + "/tests/fixtures/headscan_json_cases.json");
  REQUIRE(file);
  std::stringstream contents;
  contents << file.rdbuf();
  const nlohmann::json cases = nlohmann::json::parse(contents.str()).at("cases");
  REQUIRE(cases.size() > 50);
  for (const nlohmann::json& entry : cases) {
    std::string text;
    if (entry.contains("text")) {
      text = entry.at("text").get<std::string>();
    } else if (entry.contains("nest")) {
      const auto arrays = static_cast<std::size_t>(entry.at("nest").get<int>() - 1);
      text = "{\"x\": " + std::string(arrays, '[') + std::string(arrays, ']') + "}";
    } else {
      text = "{\"x\": \"" + std::string(entry.at("pad").get<std::size_t>(), 'a') + "\"}";
    }
    INFO("case " << entry.dump().substr(0, 200));
    const std::string message = error_of(text);
    CHECK(message.empty() == entry.at("accepted").get<bool>());
    if (entry.contains("field")) CHECK_THAT(message, Contains(entry.at("field").get<std::string>()));
  }
}
