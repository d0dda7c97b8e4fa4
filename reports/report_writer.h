#pragma once
// Everything in the report directory besides heads.json: index.html, heads/L{l}H{h}.html and
// plots/*.png (DESIGN.md, "Reports").

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace headscan {

// One example sequence with the attention of every layer and head, kept for the pictures. The
// set of examples is small and bounded (at most kMaxExamples of at most kMaxExampleTokens), so a
// report does not grow with the corpus.
struct ExampleSequence {
  static constexpr std::size_t kMaxExamples = 8;
  static constexpr std::size_t kMaxExampleTokens = 64;

  std::string source;               // "corpus line 12", "probe 0"
  std::vector<std::string> tokens;  // display text of each token, e.g. "<s>", "Ġthe", "##ing"
  std::vector<bool> special;        // per token
  int layers = 0;
  int heads = 0;
  std::vector<float> attention;     // [layers][heads][T][T], row-major, T = tokens.size()

  float weight(int layer, int head, std::size_t query, std::size_t key) const {
    const std::size_t length = tokens.size();
    return attention[((static_cast<std::size_t>(layer) * heads + head) * length + query) * length + key];
  }
};

struct ReportOptions {
  bool html = true;   // --no-html turns it off
  bool plots = true;  // --no-plots turns it off
};

// Writes the HTML pages and PNG plots into `directory` (the staging directory of the report).
// `heads` is the heads.json document; `examples` are corpus examples, `probes` probe examples
// (for the induction stripe; may be empty).
void write_reports(const std::filesystem::path& directory, const nlohmann::ordered_json& heads,
                   const std::vector<ExampleSequence>& examples, const std::vector<ExampleSequence>& probes,
                   const ReportOptions& options);

}  // namespace headscan
