#include "heads/registry.h"

#include <algorithm>

#include <fmt/format.h>

#include "analyzer/errors.h"

namespace headscan {

std::vector<std::unique_ptr<HeadClassifier>> make_classifiers() {
  std::vector<std::unique_ptr<HeadClassifier>> classifiers;
  classifiers.push_back(make_previous_token_classifier());
  classifiers.push_back(make_positional_classifier());
  classifiers.push_back(make_first_token_classifier());
  classifiers.push_back(make_entropy_classifier());
  classifiers.push_back(make_confidence_classifier());
  classifiers.push_back(make_mean_distance_classifier());
  classifiers.push_back(make_self_attention_classifier());
  classifiers.push_back(make_induction_classifier());
  classifiers.push_back(make_duplicate_token_classifier());
  classifiers.push_back(make_induction_text_classifier());
  classifiers.push_back(make_rare_word_classifier());
  classifiers.push_back(make_syntactic_classifier());
  return classifiers;
}

Thresholds resolve_thresholds(const std::vector<std::unique_ptr<HeadClassifier>>& classifiers,
                              const Thresholds& overrides) {
  Thresholds thresholds;
  for (const auto& classifier : classifiers) {
    for (const auto& [name, value] : classifier->default_thresholds()) thresholds[name] = value;
  }
  for (const auto& [name, value] : overrides) {
    if (thresholds.count(name) == 0) {
      std::vector<std::string> names;
      for (const auto& entry : thresholds) names.push_back(entry.first);
      throw InputError(fmt::format("--threshold {}: no threshold of that name; known thresholds: {}", name,
                                   fmt::join(names, ", ")));
    }
    thresholds[name] = value;
  }
  return thresholds;
}

const std::vector<std::string>& primary_label_order() {
  static const std::vector<std::string> order = {"induction", "duplicate-token", "previous-token", "syntactic",
                                                 "rare-word", "positional",      "first-token",    "broad"};
  return order;
}

std::string primary_label(const std::vector<std::string>& labels) {
  for (const std::string& label : primary_label_order()) {
    if (std::find(labels.begin(), labels.end(), label) != labels.end()) return label;
  }
  return "none";
}

}  // namespace headscan
