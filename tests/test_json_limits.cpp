// Bounds on untrusted JSON (issue 12): nesting depth and the quoting of values in errors, through
// the two readers that use them (tokenizer.json, headscan.json). A 100,000-deep document used to
// overflow the stack when an error message serialized it.

#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "analyzer/errors.h"
#include "analyzer/json_limits.h"
#include "analyzer/model/model_metadata.h"
#include "analyzer/tokenizers/tokenizer.h"

using Catch::Contains;

namespace {

std::string nested_arrays(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// The message of the InputError `body` throws; fails the test when it throws none.
template <typename Body>
std::string input_error(Body&& body) {
  try {
    body();
  } catch (const headscan::InputError& e) {
    return e.what();
  }
  FAIL("no InputError");
  return {};
}

}  // namespace

TEST_CASE("check_json_depth counts brackets outside strings only", "[json][limits]") {
  CHECK_NOTHROW(headscan::check_json_depth(nested_arrays(512), "f.json"));
  CHECK_THROWS_WITH(headscan::check_json_depth(nested_arrays(513), "f.json"),
                    Contains("f.json:1:") && Contains("nested at most 512 deep"));
  SECTION("brackets in strings and escaped quotes do not count") {
    const std::string text = "{\"a\": \"[[[[\\\"[[[[\", \"b\": [1]}";
    CHECK_NOTHROW(headscan::check_json_depth(text, "f.json", 2));
    CHECK_THROWS(headscan::check_json_depth(text, "f.json", 1));
  }
  SECTION("the line of the excess is named") {
    CHECK_THROWS_WITH(headscan::check_json_depth("{\n\"a\":\n[[", "f.json", 2), Contains("f.json:3:"));
  }
}

TEST_CASE("quote_json shows a bounded prefix of any value", "[json][limits]") {
  CHECK(headscan::quote_json(nlohmann::json(42)) == "42");
  CHECK(headscan::quote_json(nlohmann::json{{"a", {1, 2}}}) == "{\"a\":[1,2]}");
  const nlohmann::json long_array(std::vector<int>(1000, 7));
  const std::string quoted = headscan::quote_json(long_array, 20);
  CHECK(quoted == "[7,7,7,7,7,7,7,7,...");
  SECTION("a deep value costs what is shown, not its depth") {
    nlohmann::json deep = nlohmann::json::array();
    for (int i = 0; i < 100000; ++i) deep = nlohmann::json::array({std::move(deep)});
    CHECK(headscan::quote_json(deep, 10) == "[[[[[[[...");
  }
  SECTION("a cut never splits a character") {
    CHECK(headscan::quote_json(nlohmann::json(std::string(30, 'a') + "é"), 33) == "\"" + std::string(29, 'a') + "...");
  }
}

TEST_CASE("a 100000-deep tokenizer.json is an input error, not a stack overflow", "[json][limits][tokenizer]") {
  SECTION("as the whole file") {
    CHECK_THAT(input_error([] { headscan::tokenizer_from_hf_json(nested_arrays(100000), "t.json"); }),
               Contains("t.json:1:") && Contains("nested at most 512 deep"));
  }
  SECTION("in its model field") {
    const std::string text = "{\"model\": " + nested_arrays(100000) + "}";
    CHECK_THAT(input_error([&] { headscan::tokenizer_from_hf_json(text, "t.json"); }),
               Contains("nested at most 512 deep"));
  }
  SECTION("a model field nested within the limit is quoted in a bounded message") {
    const std::string text = "{\"model\": " + nested_arrays(500) + "}";
    const std::string message = input_error([&] { headscan::tokenizer_from_hf_json(text, "t.json"); });
    CHECK_THAT(message, Contains("expected model to be an object") && Contains("found array [[[[["));
    CHECK(message.size() < 400);
  }
}

TEST_CASE("a 100000-deep headscan.json is an input error, not a stack overflow", "[json][limits][metadata]") {
  CHECK_THAT(input_error([] { headscan::parse_model_metadata(nested_arrays(100000), "m.pt:headscan.json"); }),
             Contains("m.pt:headscan.json:1:") && Contains("nested at most 512 deep"));
  const std::string field = "{\"name\": " + nested_arrays(100000) + "}";
  CHECK_THAT(input_error([&] { headscan::parse_model_metadata(field, "m.pt:headscan.json"); }),
             Contains("nested at most 512 deep"));
}
