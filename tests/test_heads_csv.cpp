// heads.csv: the columns, RFC 4180 quoting, and the best syntactic relation.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "reports/heads_csv.h"
#include "reports/heads_json.h"

TEST_CASE("fields are quoted only when they must be", "[reports][csv]") {
  CHECK(headscan::csv_field("previous-token") == "previous-token");
  CHECK(headscan::csv_field("a,b") == "\"a,b\"");
  CHECK(headscan::csv_field("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(headscan::csv_field("two\nlines") == "\"two\nlines\"");
  CHECK(headscan::csv_field("") == "");
}

TEST_CASE("heads.csv has a row per head and a column per score", "[reports][csv]") {
  const auto document = nlohmann::ordered_json::parse(R"({"heads": [
    {"layer": 0, "head": 0, "kv_group": 0, "primary": "previous-token", "labels": ["previous-token", "positional"],
     "scores": {"previous_token": 0.91, "positional": {"offset": -1, "weight": 0.91, "argmax_rate": 1.0},
                "induction": null,
                "syntactic": {"nsubj": {"direction": "d2h", "accuracy": 0.5, "baseline": 0.1, "baseline_offset": 2,
                                        "support": 30, "passed": true},
                              "obj": {"direction": "h2d", "accuracy": 0.9, "baseline": 0.2, "baseline_offset": -1,
                                      "support": 25, "passed": false}}}},
    {"layer": 0, "head": 1, "kv_group": 0, "primary": "none", "labels": [],
     "scores": {"previous_token": 0.000001, "positional": {"offset": 1, "weight": 0.2, "argmax_rate": 0.25},
                "induction": 0.5, "syntactic": {}, "importance": 1.25e-7}}]})");
  const std::string csv = headscan::heads_csv(document);
  const std::string header =
      "layer,head,kv_group,primary,labels,previous_token,positional_offset,positional_weight,positional_argmax_rate,"
      "induction,syntactic_relation,syntactic_direction,syntactic_accuracy,syntactic_baseline,syntactic_support,"
      "syntactic_passed,importance\r\n";
  // The passed relation is the best, though the other has the larger margin.
  const std::string first = "0,0,0,previous-token,previous-token;positional,0.91,-1,0.91,1.0,,nsubj,d2h,0.5,0.1,30,true,\r\n";
  const std::string second = "0,1,0,none,,1e-06,1,0.2,0.25,0.5,,,,,,,1.25e-07\r\n";
  CHECK(csv == header + first + second);
}

TEST_CASE("heads.json names a checkpoint's step only when headscan.json gives one", "[reports]") {
  headscan::ModelSummary model;
  const auto without = headscan::make_heads_json(model, {}, {}, {}, nlohmann::ordered_json::array(), {}, {});
  CHECK_FALSE(without.at("model").contains("step"));
  model.step = 500;
  const auto with = headscan::make_heads_json(model, {}, {}, {}, nlohmann::ordered_json::array(), {}, {});
  CHECK(with.at("model").at("step") == 500);
}
