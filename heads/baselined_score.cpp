#include "heads/baselined_score.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "heads/saved_statistics.h"

namespace headscan {

// The base class keeps the mean without a label: this class labels, with the baseline.
BaselinedScoreClassifier::BaselinedScoreClassifier(HeadType type)
    : MeanScoreClassifier(HeadType{{type.scores.front()}}), type_(std::move(type)) {}

void BaselinedScoreClassifier::begin(const ModelShape& shape) {
  MeanScoreClassifier::begin(shape);
  baseline_ = QueryMean();
}

nlohmann::json BaselinedScoreClassifier::save() const {
  return {{"means", MeanScoreClassifier::save()}, {"baseline", baseline_.save()}};
}

void BaselinedScoreClassifier::merge(const nlohmann::json& saved) {
  const std::string path = saved_statistics_path(name());
  means_.merge(saved_field(saved, "means", path), path + ".means");
  baseline_.merge(saved_field(saved, "baseline", path), path + ".baseline");
}

void BaselinedScoreClassifier::finalize(int layer, int head, const Thresholds& thresholds, HeadVerdict& verdict) const {
  MeanScoreClassifier::finalize(layer, head, thresholds, verdict);
  const std::string& own = type_.name();
  const double score = means_.mean(layer, head);
  const double baseline = baseline_.mean();
  put_score(verdict.scores, (own + "_baseline").c_str(), baseline);
  if (std::isnan(score) || std::isnan(baseline)) return;
  if (score > thresholds.at(own) && score >= baseline + thresholds.at(own + "_margin")) {
    verdict.labels.push_back(type_.label);
  }
}

}  // namespace headscan
