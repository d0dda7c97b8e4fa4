#include "heads/registry.h"

#include <algorithm>

#include <fmt/format.h>

#include "analyzer/errors.h"

namespace headscan {

namespace {

using ClassifierFactory = std::unique_ptr<HeadClassifier> (*)();

// Every head type, in the order their scores appear in heads.json. A new head type is its own
// file (its statistics, its definition and its HeadType) plus one line here.
constexpr ClassifierFactory kClassifiers[] = {
    make_previous_token_classifier,
    make_positional_classifier,
    make_first_token_classifier,
    make_entropy_classifier,
    make_confidence_classifier,
    make_mean_distance_classifier,
    make_self_attention_classifier,
    make_induction_classifier,
    make_duplicate_token_classifier,
    make_induction_text_classifier,
    make_rare_word_classifier,
    make_syntactic_classifier,
    make_separator_classifier,
    make_punctuation_classifier,
    make_streaming_classifier,
    make_streaming_duo_classifier,
    make_retrieval_classifier,
};

}  // namespace

std::vector<std::unique_ptr<HeadClassifier>> make_classifiers() {
  std::vector<std::unique_ptr<HeadClassifier>> classifiers;
  for (const ClassifierFactory make : kClassifiers) classifiers.push_back(make());
  return classifiers;
}

const std::vector<HeadType>& head_types() {
  static const std::vector<HeadType> types = [] {
    std::vector<HeadType> described;
    for (const ClassifierFactory make : kClassifiers) described.push_back(make()->type());
    return described;
  }();
  return types;
}

Thresholds resolve_thresholds(const Thresholds& overrides) {
  Thresholds thresholds;
  for (const HeadType& type : head_types()) {
    for (const auto& [name, value] : type.thresholds) thresholds[name] = value;
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
  static const std::vector<std::string> order = [] {
    std::vector<const HeadType*> labelled;
    for (const HeadType& type : head_types()) {
      if (!type.label.empty()) labelled.push_back(&type);
    }
    std::stable_sort(labelled.begin(), labelled.end(),
                     [](const HeadType* a, const HeadType* b) { return a->primary_rank < b->primary_rank; });
    std::vector<std::string> labels;
    for (const HeadType* type : labelled) labels.push_back(type->label);
    return labels;
  }();
  return order;
}

std::string primary_label(const std::vector<std::string>& labels) {
  for (const std::string& label : primary_label_order()) {
    if (std::find(labels.begin(), labels.end(), label) != labels.end()) return label;
  }
  return "none";
}

void sort_labels(std::vector<std::string>& labels) {
  const auto& order = primary_label_order();
  auto rank = [&](const std::string& label) { return std::find(order.begin(), order.end(), label) - order.begin(); };
  std::stable_sort(labels.begin(), labels.end(), [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
}

}  // namespace headscan
