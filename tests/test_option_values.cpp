// --threshold NAME=VALUE (issue 12: =2, =-1 and =nan were accepted).

#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <utility>

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
  for (const std::string value : {",", "1,,2", "1,", "-1", "1.5", " 1", "9007199254740993", "99999999999999999999",
                                  "1;2"}) {
    CAPTURE(value);
    CHECK_THROWS_WITH(parse_steps_option(value), Contains("expected the training step of each run"));
  }
  // Given empty (an unset shell variable): said so, not taken for the default order.
  CHECK_THROWS_WITH(parse_steps_option(""), Contains("--steps is empty"));
}

TEST_CASE("seed values: whole numbers from 0 to 2^64 - 1 in decimal digits", "[cli][options]") {
  using headscan::parse_seed_option;
  CHECK(parse_seed_option("0") == 0);
  CHECK(parse_seed_option("42") == 42);
  CHECK(parse_seed_option("18446744073709551615") == UINT64_MAX);
  CHECK_THROWS_WITH(parse_seed_option("-1"), Contains("--seed -1") && Contains("a negative number"));
  CHECK_THROWS_WITH(parse_seed_option("18446744073709551616"), Contains("0 to 18446744073709551615") &&
                                                                   Contains("a number past it"));
  for (const std::string value : {"", "+1", "0x10", "1.5", "1e3", " 1", "1 "}) {
    CAPTURE(value);
    CHECK_THROWS_WITH(parse_seed_option(value), Contains("expected a whole number from 0 to 18446744073709551615"));
  }
}

TEST_CASE("attention block values: auto or whole numbers of rows from 1 to 2^31", "[cli][options]") {
  using headscan::parse_attention_block_option;
  CHECK(parse_attention_block_option("auto") == 0);
  CHECK(parse_attention_block_option("1") == 1);
  CHECK(parse_attention_block_option("256") == 256);
  CHECK(parse_attention_block_option("2147483648") == (std::int64_t{1} << 31));
  for (const std::string value : {"", "0", "-1", "+7", "2147483649", "99999999999999999999", "7.5", "Auto", " 7"}) {
    CAPTURE(value);
    CHECK_THROWS_WITH(parse_attention_block_option(value),
                      Contains("--attention-block") && Contains("expected auto or a number of query rows"));
  }
}

TEST_CASE("the options --sink and --window share their thresholds' range and value", "[cli][options]") {
  CHECK(headscan::count_threshold_minimum("streaming_sink") == 0);
  CHECK(headscan::count_threshold_minimum("streaming_window") == 1);
  CHECK(headscan::count_threshold_minimum("syntactic_support") == 0);
  CHECK_THROWS_WITH(parse_threshold_option("streaming_window=0"), Contains("a whole number from 1 to 1000000000"));
  CHECK(parse_threshold_option("streaming_sink=0").value == 0);
  std::map<std::string, double> thresholds = headscan::parse_threshold_options({"streaming_sink=8"});
  headscan::set_streaming_size(thresholds, "--sink", "streaming_sink", 8);  // the same size: one cache
  headscan::set_streaming_size(thresholds, "--window", "streaming_window", 32);
  CHECK(thresholds.at("streaming_sink") == 8);
  CHECK(thresholds.at("streaming_window") == 32);
  CHECK_THROWS_WITH(headscan::set_streaming_size(thresholds, "--sink", "streaming_sink", 4),
                    Contains("--sink 4 and --threshold streaming_sink=8") && Contains("two sizes"));
}

TEST_CASE("a text where a path belongs is refused when no path can be that long, quoting its start", "[cli][options]") {
  CHECK_NOTHROW(headscan::check_path_option("--idf", "idf.txt"));
  CHECK_NOTHROW(headscan::check_path_option("--idf", ""));
  CHECK_NOTHROW(headscan::check_path_option("--idf", std::string(255, 'a') + "/" + std::string(255, 'b')));
  const std::string long_text(10000, 'x');
  CHECK_THROWS_WITH(headscan::check_path_option("the model path", long_text),
                    Contains("the model path " + std::string(headscan::kShownPathBytes, 'x') + "… (10000 bytes)") &&
                        !Contains(std::string(headscan::kShownPathBytes + 1, 'x')));
  CHECK_THROWS_WITH(headscan::check_path_option("--idf", "dir/" + std::string(256, 'n')),
                    Contains("a name of 256 bytes"));
  // Cut at a character boundary: 199 bytes of 'a', then "é" (2 bytes) across the limit.
  CHECK(headscan::shown_path(std::string(199, 'a') + "é" + std::string(100, 'z')) ==
        std::string(199, 'a') + "… (301 bytes)");
  CHECK(headscan::shown_path("short/path.txt") == "short/path.txt");
}

TEST_CASE("needle lengths values: whole numbers separated by commas, sorted and distinct", "[cli][options]") {
  using headscan::parse_needle_lengths_option;
  CHECK(parse_needle_lengths_option("4096") == std::vector<std::int64_t>{4096});
  CHECK(parse_needle_lengths_option("16384,4096,8192,4096") == std::vector<std::int64_t>{4096, 8192, 16384});
  CHECK(parse_needle_lengths_option("1048576") == std::vector<std::int64_t>{std::int64_t{1} << 20});
  for (const std::string value : {"", ",", "4096,", "4k", "-4096", "0", "1.5", " 64", "1048577", "99999999999999999999",
                                  "64;128"}) {
    CAPTURE(value);
    CHECK_THROWS_WITH(parse_needle_lengths_option(value), Contains("expected the needle probes' lengths in tokens"));
  }
}

TEST_CASE("probes values: default, none or N for both kinds, or per kind; anything else refused", "[cli][options]") {
  using headscan::kPlannedProbes;
  using headscan::parse_probes_option;
  using headscan::ProbeBudget;
  auto both = [](const ProbeBudget& budget) { return std::pair<std::int64_t, std::int64_t>{budget.induction, budget.needles}; };
  using Pair = std::pair<std::int64_t, std::int64_t>;
  CHECK(both(parse_probes_option("default")) == Pair{kPlannedProbes, kPlannedProbes});
  CHECK(both(parse_probes_option("none")) == Pair{0, 0});
  CHECK(both(parse_probes_option("3")) == Pair{3, 3});
  CHECK(both(parse_probes_option("1000")) == Pair{1000, 1000});
  CHECK(both(parse_probes_option("needles=none")) == Pair{kPlannedProbes, 0});
  CHECK(both(parse_probes_option("induction=7")) == Pair{7, kPlannedProbes});
  CHECK(both(parse_probes_option("needles=2,induction=none")) == Pair{0, 2});
  CHECK(both(parse_probes_option("induction=default,needles=default")) == Pair{kPlannedProbes, kPlannedProbes});
  const std::string expected = "expected default, none, a number N from 1 to 1000";
  const std::pair<std::string, std::string> refused[] = {
      {"", "found \"\""},
      {"0", "found \"0\""},
      {"1001", "found \"1001\""},
      {"-1", "found \"-1\""},
      {"all", "found \"all\""},
      {" 3", "found \" 3\""},
      {"needles=0", "found \"0\" for needles"},
      {"needles=", "found \"\" for needles"},
      {"induction=5,", "found \"\" without a kind"},
      {"induction=5,3", "found \"3\" without a kind"},
      {"retrieval=none", "found the kind \"retrieval\" (the kinds are induction and needles)"},
      {"induction=1,induction=2", "found induction given twice"},
      {"Needles=none", "found the kind \"Needles\""}};
  for (const auto& [value, found] : refused) {
    CAPTURE(value);
    CHECK_THROWS_AS(parse_probes_option(value), headscan::InputError);
    CHECK_THROWS_WITH(parse_probes_option(value), Contains(expected) && Contains(found) &&
                                                      Contains("--probes " + value + ":"));
  }
}
