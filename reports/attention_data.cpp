#include "reports/attention_data.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/text.h"

namespace headscan {

namespace {

unsigned char quantize(float weight) {
  if (!std::isfinite(weight)) return 0;
  return static_cast<unsigned char>(std::lround(std::clamp(weight, 0.0f, 1.0f) * 255.0f));
}

std::size_t stored_bytes(const ExampleSequence& example, bool triangular) {
  const std::size_t length = example.tokens.size();
  return triangular ? length * (length + 1) / 2 : length * length;
}

void check_shape(const ExampleSequence& example, int layers, int heads) {
  const std::size_t length = example.tokens.size();
  const std::size_t expected = static_cast<std::size_t>(layers) * heads * length * length;
  if (example.layers != layers || example.heads != heads || example.attention.size() != expected) {
    throw std::runtime_error(fmt::format(
        "example \"{}\": attention must be [layers={}][heads={}][T={}][T] = {} weights, got [{}][{}] with {} weights",
        example.source, layers, heads, length, expected, example.layers, example.heads, example.attention.size()));
  }
}

}  // namespace

bool is_lower_triangular(const ExampleSequence& example) {
  const std::size_t length = example.tokens.size();
  for (int layer = 0; layer < example.layers; ++layer) {
    for (int head = 0; head < example.heads; ++head) {
      for (std::size_t query = 0; query < length; ++query) {
        for (std::size_t key = query + 1; key < length; ++key) {
          if (quantize(example.weight(layer, head, query, key)) != 0) return false;
        }
      }
    }
  }
  return true;
}

ViewerSelection select_viewer_examples(const std::vector<ExampleSequence>& examples,
                                       const std::vector<ExampleSequence>& probes, int layers, int heads) {
  ViewerSelection selection;
  selection.probe = !probes.empty();
  const std::size_t head_count = static_cast<std::size_t>(std::max(layers, 0)) * static_cast<std::size_t>(std::max(heads, 0));
  std::size_t used = 0;
  for (const auto& example : examples) {
    const std::size_t cost = stored_bytes(example, is_lower_triangular(example)) * head_count;
    // The first example always goes in: a viewer with nothing to show helps no one.
    if (selection.corpus_examples > 0 && used + cost > kViewerBudgetBytes) break;
    used += cost;
    ++selection.corpus_examples;
  }
  return selection;
}

std::vector<unsigned char> quantize_head(const ExampleSequence& example, int layer, int head, bool triangular) {
  const std::size_t length = example.tokens.size();
  std::vector<unsigned char> bytes;
  bytes.reserve(stored_bytes(example, triangular));
  for (std::size_t query = 0; query < length; ++query) {
    const std::size_t keys = triangular ? query + 1 : length;
    for (std::size_t key = 0; key < keys; ++key) bytes.push_back(quantize(example.weight(layer, head, query, key)));
  }
  return bytes;
}

std::string base64(const std::vector<unsigned char>& bytes) {
  static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const unsigned a = bytes[i];
    const unsigned b = i + 1 < bytes.size() ? bytes[i + 1] : 0;
    const unsigned c = i + 2 < bytes.size() ? bytes[i + 2] : 0;
    const unsigned triple = (a << 16) | (b << 8) | c;
    out += alphabet[(triple >> 18) & 63];
    out += alphabet[(triple >> 12) & 63];
    out += i + 1 < bytes.size() ? alphabet[(triple >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? alphabet[triple & 63] : '=';
  }
  return out;
}

void write_attention_data(const std::filesystem::path& directory, const std::vector<ExampleSequence>& examples,
                          const std::vector<ExampleSequence>& probes, const ViewerSelection& selection,
                          const std::vector<int>& map_layers, int heads) {
  const int layers = static_cast<int>(map_layers.size());
  std::vector<const ExampleSequence*> chosen;
  for (std::size_t i = 0; i < selection.corpus_examples && i < examples.size(); ++i) chosen.push_back(&examples[i]);
  if (selection.probe && !probes.empty()) chosen.push_back(&probes.front());

  std::vector<bool> triangular;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const ExampleSequence* example : chosen) {
    check_shape(*example, layers, heads);
    triangular.push_back(is_lower_triangular(*example));
    nlohmann::ordered_json tokens = nlohmann::ordered_json::array();
    for (const auto& token : example->tokens) tokens.push_back(display_token(token, 40));
    nlohmann::ordered_json special = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < example->tokens.size(); ++i) special.push_back(i < example->special.size() && example->special[i]);
    list.push_back({{"source", valid_utf8(example->source)},
                    {"probe", !probes.empty() && example == &probes.front()},
                    {"triangular", static_cast<bool>(triangular.back())},
                    {"tokens", std::move(tokens)},
                    {"special", std::move(special)}});
  }
  const auto data = directory / "data";
  std::filesystem::create_directories(data);
  write_text_file(data / "examples.js", "headscan.receive(\"examples\", " + json_for_script(list) + ");\n");

  for (int layer = 0; layer < layers; ++layer) {
    for (int head = 0; head < heads; ++head) {
      const int named = map_layers[static_cast<std::size_t>(layer)];
      std::string text = fmt::format("headscan.receive(\"L{}H{}\", [", named, head);
      for (std::size_t i = 0; i < chosen.size(); ++i) {
        if (i) text += ",\n";
        text += '"' + base64(quantize_head(*chosen[i], layer, head, triangular[i])) + '"';
      }
      text += "]);\n";
      write_text_file(data / fmt::format("L{}H{}.js", named, head), text);
    }
  }
}

std::vector<ConfidentQuery> most_confident_queries(const std::vector<ExampleSequence>& examples, int layer, int head,
                                                   std::size_t count) {
  std::vector<ConfidentQuery> queries;
  for (std::size_t e = 0; e < examples.size(); ++e) {
    const auto& example = examples[e];
    const std::size_t length = example.tokens.size();
    for (std::size_t query = 0; query < length; ++query) {
      if (query < example.special.size() && example.special[query]) continue;
      ConfidentQuery best{e, query, 0, -1.0f};
      for (std::size_t key = 0; key < length; ++key) {
        const float weight = example.weight(layer, head, query, key);
        if (weight > best.weight) {
          best.key = key;
          best.weight = weight;
        }
      }
      if (best.weight >= 0) queries.push_back(best);
    }
  }
  std::stable_sort(queries.begin(), queries.end(),
                   [](const ConfidentQuery& a, const ConfidentQuery& b) { return a.weight > b.weight; });
  if (queries.size() > count) queries.resize(count);
  return queries;
}

}  // namespace headscan
