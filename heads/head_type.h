#pragma once
// What a head type is, described once: the scores it writes into heads.json and what they mean,
// the label it gives and its default thresholds, its source, and how reports show the label. Each
// classifier describes itself (HeadClassifier::type()); the reports read the descriptions through
// the registry (heads/registry.h) and nothing else.

#include <map>
#include <string>
#include <vector>

namespace headscan {

// Thresholds by name ("previous_token" → 0.5), as written in heads.json.
using Thresholds = std::map<std::string, double>;

struct ScoreDescription {
  std::string name;     // key in a head's "scores" object of heads.json
  std::string meaning;  // one line for the reports
};

struct HeadType {
  std::vector<ScoreDescription> scores{};  // in heads.json order; the first is the type's own score
  std::string label{};                   // the label it gives, e.g. "previous-token"; "" if none
  Thresholds thresholds{};               // default thresholds, by the names --threshold takes
  std::string source{};                  // where the definition comes from
  std::string colour{};                  // "#rrggbb" of the label (Paul Tol's "muted" scheme)
  std::string tag{};                     // short tag of the label on map cells, e.g. "prev"
  int primary_rank = 0;                  // among labels, the lower rank is the primary label
  // Its label is given only to heads of causal models (copying earlier tokens, a streaming cache):
  // a bidirectional model's heads see later tokens too, and the reports state no threshold for it.
  bool causal_only = false;

  const std::string& name() const { return scores.front().name; }
};

}  // namespace headscan
