#pragma once
// The example attention the pages draw in the browser: data/examples.js (tokens of each example)
// and one data/L{l}H{h}.js per head (weights quantized to 1/255, base64). Pages load them with
// <script src>, which works from file:// where fetch() does not. The budget caps how many corpus
// examples the viewer gets, so the directory stays a few MB even for models with many heads.

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "reports/report_writer.h"

namespace headscan {

// Quantized weights of all heads' data files together stay under this many bytes (plus the
// first probe of each head).
constexpr std::size_t kViewerBudgetBytes = 3'000'000;

struct ViewerSelection {
  std::size_t corpus_examples = 0;  // the first n corpus examples go to the viewer
  bool probe = false;               // the first probe example goes too
};

ViewerSelection select_viewer_examples(const std::vector<ExampleSequence>& examples,
                                       const std::vector<ExampleSequence>& probes, int layers, int heads);

// True when every weight above the diagonal quantizes to 0 in every layer and head (causal
// attention): the rows are then stored only up to the diagonal.
bool is_lower_triangular(const ExampleSequence& example);

// Weights of one head as bytes round(255·w): rows 0..T-1, row i holding keys 0..i when
// `triangular`, else keys 0..T-1.
std::vector<unsigned char> quantize_head(const ExampleSequence& example, int layer, int head, bool triangular);

std::string base64(const std::vector<unsigned char>& bytes);

// Writes directory/data/examples.js and directory/data/L{l}H{h}.js for every head, l the model's
// index of the head's layer: `map_layers` holds it for each attention map of the examples.
void write_attention_data(const std::filesystem::path& directory, const std::vector<ExampleSequence>& examples,
                          const std::vector<ExampleSequence>& probes, const ViewerSelection& selection,
                          const std::vector<int>& map_layers, int heads);

struct ConfidentQuery {
  std::size_t example = 0;
  std::size_t query = 0;
  std::size_t key = 0;  // argmax key of the query
  float weight = 0;
};

// The `count` queries (non-special, over all examples) with the largest maximum weight of the
// head, largest first; ties in example and position order.
std::vector<ConfidentQuery> most_confident_queries(const std::vector<ExampleSequence>& examples, int layer, int head,
                                                   std::size_t count);

}  // namespace headscan
