// --threshold NAME=VALUE (issue 12: =2, =-1 and =nan were accepted).

#include <catch2/catch.hpp>

#include <string>

#include "analyzer/cli/option_values.h"
#include "analyzer/errors.h"

using Catch::Contains;
using headscan::parse_threshold_option;

TEST_CASE("threshold values: fractions from 0 to 1 and whole counts", "[cli][options]") {
  CHECK(parse_threshold_option("previous_token=0.6").value == 0.6);
  CHECK(parse_threshold_option("previous_token=0.6").name == "previous_token");
  CHECK(parse_threshold_option("induction=0").value == 0);
  CHECK(parse_threshold_option("induction=1").value == 1);
  CHECK(parse_threshold_option("rare_word=5e-1").value == 0.5);
  CHECK(parse_threshold_option("syntactic_support=20").value == 20);
  const auto all = headscan::parse_threshold_options({"entropy=0.7", "first_token=0.5"});
  CHECK(all.at("entropy") == 0.7);
  CHECK(all.at("first_token") == 0.5);
}

TEST_CASE("threshold values: out of range or not numbers are refused", "[cli][options][errors]") {
  for (const std::string value : {"2", "-1", "1.0000001", "nan", "inf", "-inf", "0.5x", "", " 0.5", "0x1p-1", "+0.5"}) {
    CAPTURE(value);
    CHECK_THROWS_WITH(parse_threshold_option("previous_token=" + value),
                      Contains("--threshold previous_token=" + value) &&
                          Contains("expected a number from 0 to 1") && Contains("found \"" + value + "\"") &&
                          Contains("e.g. --threshold previous_token=0.6"));
  }
  SECTION("counts are whole numbers") {
    for (const std::string value : {"2.5", "-1", "nan", "1e10"}) {
      CAPTURE(value);
      CHECK_THROWS_WITH(parse_threshold_option("syntactic_support=" + value),
                        Contains("expected a whole number from 0 to 1000000000"));
    }
  }
  SECTION("no NAME=") {
    CHECK_THROWS_WITH(parse_threshold_option("0.5"), Contains("expected NAME=VALUE"));
    CHECK_THROWS_WITH(parse_threshold_option("=0.5"), Contains("expected NAME=VALUE"));
  }
  SECTION("a name given twice") {
    CHECK_THROWS_WITH(headscan::parse_threshold_options({"entropy=0.7", "entropy=0.8"}),
                      Contains("--threshold entropy=0.8") && Contains("given twice"));
  }
  SECTION("control characters are not echoed") {
    CHECK_THROWS_WITH(parse_threshold_option("entropy=\x1b[31m"), Contains("found \"?[31m\""));
  }
}

TEST_CASE("compare's steps values: one whole number per run", "[cli][options]") {
  using headscan::parse_steps_option;
  CHECK(parse_steps_option("0") == std::vector<std::int64_t>{0});
  CHECK(parse_steps_option("0,500,1000") == std::vector<std::int64_t>{0, 500, 1000});
  CHECK(parse_steps_option("9007199254740992") == std::vector<std::int64_t>{std::int64_t{1} << 53});
  for (const std::string value : {"", ",", "1,,2", "1,", "-1", "1.5", " 1", "9007199254740993", "99999999999999999999",
                                  "1;2"}) {
    CAPTURE(value);
    CHECK_THROWS_WITH(parse_steps_option(value), Contains("expected the training step of each run"));
  }
}
