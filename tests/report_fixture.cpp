#include "tests/report_fixture.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

namespace headscan::testing {

namespace {

using Json = nlohmann::ordered_json;

enum Pattern { previous, first, uniform, self, induction, duplicate };

Pattern pattern_of(int layer, int head) { return static_cast<Pattern>((layer + head) % 6); }

// Row `query` of a planted head; induction and duplicate heads look for earlier occurrences of the
// query's token (on corpus text mostly there are none: then they attend BOS).
std::vector<float> planted_row(Pattern pattern, const std::vector<std::string>& tokens, std::size_t query) {
  std::vector<float> row(tokens.size(), 0.0f);
  switch (pattern) {
    case previous: row[query == 0 ? 0 : query - 1] = 1; break;
    case first: row[0] = 1; break;
    case uniform:
      for (std::size_t key = 0; key <= query; ++key) row[key] = 1.0f / static_cast<float>(query + 1);
      break;
    case self: row[query] = 1; break;
    case induction:
    case duplicate: {
      std::vector<std::size_t> earlier;
      for (std::size_t s = 1; s < query; ++s) {
        if (tokens[s] == tokens[query]) earlier.push_back(pattern == induction ? s + 1 : s);
      }
      if (earlier.empty()) {
        row[0] = 1;
      } else {
        // Mostly on the targets, a little on BOS, so that the weights are not all 1.
        for (const std::size_t key : earlier) row[key] += 0.9f / static_cast<float>(earlier.size());
        row[0] += 0.1f;
      }
      break;
    }
  }
  return row;
}

ExampleSequence make_example(int layers, int heads, const std::vector<std::string>& tokens, std::string source) {
  ExampleSequence example;
  example.source = std::move(source);
  example.tokens = tokens;
  example.special.assign(tokens.size(), false);
  example.special[0] = true;
  example.layers = layers;
  example.heads = heads;
  const std::size_t length = tokens.size();
  example.attention.assign(static_cast<std::size_t>(layers) * heads * length * length, 0.0f);
  for (int layer = 0; layer < layers; ++layer) {
    for (int head = 0; head < heads; ++head) {
      for (std::size_t query = 0; query < length; ++query) {
        const auto row = planted_row(pattern_of(layer, head), tokens, query);
        std::copy(row.begin(), row.end(),
                  example.attention.begin() + static_cast<long>(((static_cast<std::size_t>(layer) * heads + head) * length + query) * length));
      }
    }
  }
  return example;
}

double round3(double value) { return std::round(value * 1000) / 1000; }
double round4(double value) { return std::round(value * 10000) / 10000; }

// The pruning curve: loss rises slowly while unimportant heads go, fast in random orders.
Json fixture_ablation_summary(int layers, int heads, FixtureText text) {
  const double base = 3.2104;
  const int total = layers * heads;
  Json points = Json::array();
  for (int step = 0; step <= 10; ++step) {
    const double fraction = step / 10.0;
    Json random = Json::array();
    double sum = 0;
    for (int order = 0; order < 3; ++order) {
      const double loss = round4(base + (2.4 + 0.5 * order) * std::pow(fraction, 0.8 + 0.2 * order) + (step % 2) * 0.03 * order);
      random.push_back(loss);
      sum += loss;
    }
    points.push_back({{"fraction", fraction},
                      {"removed", static_cast<int>(std::lround(fraction * total))},
                      {"importance_order", round4(base + 0.05 * fraction + 3.4 * std::pow(fraction, 4))},
                      {"random_order", round4(sum / 3)},
                      {"random_orders", random}});
  }
  Json summary = {{"sequences", 32}, {"requested_sequences", 32}};
  if (text == FixtureText::hostile) {
    summary["objective"] = "masked-lm";
    summary["mask_token"] = "</script><b>[MASK]</b>";
    summary["mask_rate"] = 0.15;
  } else {
    summary["objective"] = "next-token";
  }
  summary["predictions"] = 3968;
  summary["seed"] = 0;
  summary["loss"] = base;
  summary["pruning"] = {{"step", 0.1}, {"random_orders", 3}, {"points", points}};
  return summary;
}

}  // namespace

double fixture_importance(int layer, int head) {
  return round4(0.03 + 0.07 * ((layer * 5 + head * 3) % 7) + 0.004 * head + 0.002 * layer);
}

double fixture_ablation_loss(int layer, int head) {
  return round4(0.6 * fixture_importance(layer, head) - 0.05 + 0.01 * ((layer + 2 * head) % 3));
}

std::vector<std::vector<std::string>> fixture_token_lists(FixtureText text, std::size_t count, std::size_t length) {
  std::vector<std::string> words;
  switch (text) {
    case FixtureText::plain:
      words = {"Ġthe", "Ġcat", "Ġsat", "Ġon", "Ġa", "Ġmat", "Ġand", "Ġlooked", "Ġat", "Ġbirds", "Ġin", "Ġtrees", ".", "Ġwhile", "Ġdogs", "Ġslept"};
      break;
    case FixtureText::hostile:
      words = {"<script>alert(1)</script>", "</script>", "\"quoted\"", "'single'", "a&b", "<!--", "<img src=x onerror=alert(1)>",
               "Ġthe", "Ġcat", "\\u003c", "${x}", "\t", " "};
      break;
    case FixtureText::scripts:
      words = {"你好", "世界", "注意力", "机制", "привет", "мир", "😀", "🚀", "مرحبا", "Ġthe", "é", "ß"};
      break;
  }
  std::vector<std::vector<std::string>> lists;
  for (std::size_t n = 0; n < count; ++n) {
    std::vector<std::string> tokens = {"<s>"};
    for (std::size_t i = 1; i < length; ++i) tokens.push_back(words[(n * 5 + i * 7) % words.size()]);
    lists.push_back(std::move(tokens));
  }
  return lists;
}

std::vector<ExampleSequence> fixture_examples(int layers, int heads, const std::vector<std::vector<std::string>>& tokens) {
  std::vector<ExampleSequence> examples;
  for (std::size_t n = 0; n < tokens.size(); ++n) {
    examples.push_back(make_example(layers, heads, tokens[n], "corpus line " + std::to_string(3 * n + 1)));
  }
  return examples;
}

std::vector<ExampleSequence> fixture_probes(int layers, int heads, std::size_t repeat, std::size_t count) {
  std::vector<ExampleSequence> probes;
  for (std::size_t n = 0; n < count; ++n) {
    std::vector<std::string> tokens = {"<s>"};
    for (int copy = 0; copy < 4; ++copy) {
      for (std::size_t i = 0; i < repeat; ++i) tokens.push_back("t" + std::to_string((i * 7 + n * 3) % 50 + 3));
    }
    probes.push_back(make_example(layers, heads, tokens, "probe " + std::to_string(n)));
  }
  return probes;
}

Json fixture_heads_json(int layers, int heads, const std::vector<ExampleSequence>& examples,
                        const std::vector<ExampleSequence>& probes, FixtureText text, long corpus_tokens,
                        FixtureAblation ablation) {
  const bool hostile = text == FixtureText::hostile;
  Json document;
  document["headscan_version"] = "0.1.0";
  document["model"] = {{"path", hostile ? "/tmp/\"model\" <b>.pt" : "/models/demo.pt"},
                       {"name", hostile ? "</script><script>alert(1)</script>" : "demo-gpt"},
                       {"layers", layers}, {"heads", heads}, {"kv_heads", heads}, {"causal", true},
                       {"causal_source", "detected"}, {"capture", "graph"}, {"dtype", "float32"},
                       {"tokenizer", "WordLevel, 64 tokens"}, {"bos_token", "<s>"}, {"max_length", 128},
                       {"repeat_loss", 0.42}};
  document["corpus"] = {{"path", hostile ? "corpus '<x>'.txt" : "corpus.txt"}, {"format", "text"},
                        {"lines", corpus_tokens / 10},  {"documents", corpus_tokens / 10},
                        {"sequences", corpus_tokens / 10}, {"tokens", corpus_tokens},
                        {"parser", "link-grammar"},     {"parsed_sentences", corpus_tokens / 12}};
  document["thresholds"] = {{"entropy", 0.8}, {"first_token", 0.6}, {"positional", 0.8}, {"previous_token", 0.5},
                            {"induction", 0.4}, {"duplicate_token", 0.4}, {"syntactic", 0.1}};
  Json list = Json::array();
  for (int layer = 0; layer < layers; ++layer) {
    for (int head = 0; head < heads; ++head) {
      // Scores measured on the examples (DESIGN.md definitions, over all queries i >= 1).
      double previous_sum = 0, first_sum = 0, self_sum = 0, confidence_sum = 0, distance_sum = 0, entropy_sum = 0;
      double queries = 0, entropy_queries = 0;
      double offset_sum[4] = {0, 0, 0, 0};
      for (const auto& example : examples) {
        const std::size_t length = example.tokens.size();
        for (std::size_t i = 1; i < length; ++i) {
          previous_sum += example.weight(layer, head, i, i - 1);
          first_sum += example.weight(layer, head, i, 0);
          self_sum += example.weight(layer, head, i, i);
          double best = 0, distance = 0, entropy = 0;
          for (std::size_t j = 0; j <= i; ++j) {
            const double w = example.weight(layer, head, i, j);
            best = std::max(best, w);
            distance += w * static_cast<double>(i - j);
            if (w > 0) entropy -= w * std::log(w);
          }
          confidence_sum += best;
          distance_sum += distance;
          entropy_sum += entropy / std::log(static_cast<double>(i + 1));
          ++entropy_queries;
          if (i >= 2) offset_sum[0] += example.weight(layer, head, i, i - 2);
          offset_sum[1] += example.weight(layer, head, i, i - 1);
          ++queries;
        }
      }
      double induction_sum = 0, duplicate_sum = 0, probe_queries = 0;
      for (const auto& probe : probes) {
        const std::size_t length = probe.tokens.size();
        const std::size_t repeat = (length - 1) / 4;
        for (std::size_t i = 1 + repeat; i < length; ++i) {
          for (std::size_t s = i - repeat; s >= 1; s -= repeat) {
            induction_sum += probe.weight(layer, head, i, s + 1);
            duplicate_sum += probe.weight(layer, head, i, s);
            if (s <= repeat) break;
          }
          ++probe_queries;
        }
      }
      const double q = std::max(queries, 1.0);
      const double previous_token = round3(previous_sum / q);
      const double first_token = round3(first_sum / q);
      const double entropy = round3(entropy_sum / std::max(entropy_queries, 1.0));
      const double induction_score = round3(induction_sum / std::max(probe_queries, 1.0));
      const double duplicate_score = round3(duplicate_sum / std::max(probe_queries, 1.0));
      Json scores = {{"previous_token", previous_token},
                     {"positional", {{"offset", offset_sum[0] > offset_sum[1] ? -2 : -1},
                                     {"weight", round3(std::max(offset_sum[0], offset_sum[1]) / q)},
                                     {"argmax_rate", round3(std::max(offset_sum[0], offset_sum[1]) / q)}}},
                     {"first_token", first_token},
                     {"entropy", entropy},
                     {"confidence", round3(confidence_sum / q)},
                     {"mean_distance", round3(distance_sum / q)},
                     {"self", round3(self_sum / q)},
                     {"induction", probes.empty() ? Json(nullptr) : Json(induction_score)},
                     {"duplicate_token", probes.empty() ? Json(nullptr) : Json(duplicate_score)}};
      // Some heads have no rare_word value (null), some have a relation table.
      scores["rare_word"] = (layer + head) % 4 == 3 ? Json(nullptr) : Json(round3(0.05 * ((layer * 7 + head * 3) % 13)));
      const bool syntactic = pattern_of(layer, head) == previous && layer % 2 == 1;
      if ((layer + head) % 3 == 0 || syntactic) {
        scores["syntactic"] = {
            {hostile ? "<b>nsubj</b>" : "nsubj",
             {{"direction", "d2h"}, {"accuracy", syntactic ? 0.71 : 0.3}, {"baseline", 0.45}, {"baseline_offset", -1},
              {"support", 812}, {"passed", syntactic}}},
            {"det", {{"direction", "h2d"}, {"accuracy", 0.52}, {"baseline", 0.5}, {"baseline_offset", 1}, {"support", 300}, {"passed", false}}}};
      }
      std::vector<std::string> labels;
      if (!probes.empty() && induction_score >= 0.4) labels.push_back("induction");
      if (!probes.empty() && duplicate_score >= 0.4) labels.push_back("duplicate-token");
      if (previous_token >= 0.5) labels.push_back("previous-token");
      if (syntactic) labels.push_back("syntactic");
      if (scores["positional"]["weight"].get<double>() > 0.8) labels.push_back("positional");
      if (first_token >= 0.6) labels.push_back("first-token");
      if (entropy >= 0.8) labels.push_back("broad");
      const bool induction_head = std::find(labels.begin(), labels.end(), "induction") != labels.end();
      const bool duplicate_head = std::find(labels.begin(), labels.end(), "duplicate-token") != labels.end();
      Json entry = {{"layer", layer}, {"head", head}, {"kv_group", head}, {"primary", labels.empty() ? "none" : labels.front()},
                    {"labels", labels}, {"scores", scores}};
      if (ablation == FixtureAblation::full) {
        double layer_norm = 0;
        for (int other = 0; other < heads; ++other) layer_norm += std::pow(fixture_importance(layer, other), 2);
        entry["scores"]["importance"] = fixture_importance(layer, head);
        entry["scores"]["importance_layer_normalized"] = round4(fixture_importance(layer, head) / std::sqrt(layer_norm));
        entry["scores"]["ablation_loss"] = fixture_ablation_loss(layer, head);
        if (induction_head) entry["scores"]["ablation_repeat_loss"] = round4(0.4 + 0.1 * layer + 0.01 * head);
        if (induction_head || duplicate_head) {
          std::vector<std::pair<double, Json>> links;
          for (int earlier = 0; earlier < layer; ++earlier) {
            for (int other = 0; other < heads; ++other) {
              double drop = 0;
              if (pattern_of(earlier, other) == previous) drop = 0.5 + 0.1 * earlier;
              if (pattern_of(earlier, other) == first) drop = 0.01 * (1 + earlier + other);
              if (drop > 0) links.push_back({drop, {{"layer", earlier}, {"head", other}, {"drop", round4(drop)}}});
            }
          }
          std::stable_sort(links.begin(), links.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
          Json depends_on = Json::array();
          for (std::size_t k = 0; k < links.size() && k < 5; ++k) depends_on.push_back(links[k].second);
          entry["circuit"] = {{"score", induction_head ? "induction" : "duplicate_token"},
                              {"baseline", induction_head ? induction_score : duplicate_score},
                              {"depends_on", depends_on}};
        }
      }
      list.push_back(std::move(entry));
    }
  }
  document["heads"] = list;
  document["warnings"] = hostile ? Json::array({"line 3: <img src=x onerror=alert(1)> & \"quotes\""}) : Json::array();
  document["run"] = {{"seconds", 1.5}, {"tokens_per_second", 8230}, {"threads", 2}};
  if (ablation == FixtureAblation::full) document["ablation"] = fixture_ablation_summary(layers, heads, text);
  return document;
}

}  // namespace headscan::testing
