#pragma once
// Hand-made inputs for the report writer, without a model: a heads.json and example sequences whose
// attention follows planted patterns (previous token, first token, uniform, self, induction,
// duplicate token), with scores measured on them. Shared by test_reports.cpp and the program that
// writes the reports the browser tests open.

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "reports/report_writer.h"

namespace headscan::testing {

enum class FixtureText {
  plain,     // English words
  hostile,   // markup, quotes and script in tokens, model name, paths and warnings
  scripts,   // Chinese, Cyrillic, emoji, Arabic tokens
};

// Token lists of `count` example sequences (BOS first), each `length` tokens long.
std::vector<std::vector<std::string>> fixture_token_lists(FixtureText text, std::size_t count, std::size_t length);

// Examples with planted attention: the pattern of head h in layer l is (l + h) % 6.
std::vector<ExampleSequence> fixture_examples(int layers, int heads, const std::vector<std::vector<std::string>>& tokens);

// `count` probes [BOS] R R R R with R of `repeat` distinct tokens.
std::vector<ExampleSequence> fixture_probes(int layers, int heads, std::size_t repeat, std::size_t count);

// heads.json for the planted heads, scores measured on `examples` and `probes`; with `text` ==
// hostile the model name, paths and warnings carry markup.
nlohmann::ordered_json fixture_heads_json(int layers, int heads, const std::vector<ExampleSequence>& examples,
                                          const std::vector<ExampleSequence>& probes, FixtureText text,
                                          long corpus_tokens = 12345);

}  // namespace headscan::testing
