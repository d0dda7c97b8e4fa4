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

// Whether heads.json carries the causal evidence of --ablation (DESIGN.md, "Causal evidence").
enum class FixtureAblation {
  none,
  // "ablation" with an 11-point pruning curve and 3 random orders (masked-lm with a markup mask
  // token when the text is hostile); per head importance, importance_layer_normalized and
  // ablation_loss (fixture_importance, fixture_ablation_loss), ablation_repeat_loss on induction
  // heads, and a circuit on induction and duplicate-token heads: it depends on the previous-token
  // heads of earlier layers (drop 0.5 + 0.1 × layer) and a little on their first-token heads
  // (drop 0.01 × (1 + layer + head)), at most 5, largest drop first.
  full,
};

// The planted causal numbers of head (layer, head) (FixtureAblation::full).
double fixture_importance(int layer, int head);
double fixture_ablation_loss(int layer, int head);

// heads.json for the planted heads, scores measured on `examples` and `probes`; with `text` ==
// hostile the model name, paths and warnings carry markup.
nlohmann::ordered_json fixture_heads_json(int layers, int heads, const std::vector<ExampleSequence>& examples,
                                          const std::vector<ExampleSequence>& probes, FixtureText text,
                                          long corpus_tokens = 12345, FixtureAblation ablation = FixtureAblation::none);

}  // namespace headscan::testing
