#include "heads/mean_score.h"

#include <cmath>

#include <nlohmann/json.hpp>

namespace headscan {

MeanScoreClassifier::MeanScoreClassifier(std::string score, std::optional<ScoreLabel> label)
    : score_(std::move(score)), label_(std::move(label)) {}

Thresholds MeanScoreClassifier::default_thresholds() const {
  if (!label_) return {};
  return {{score_, label_->threshold}};
}

nlohmann::json MeanScoreClassifier::save() const { return means_.save(); }

void MeanScoreClassifier::merge(const nlohmann::json& saved) { means_.merge(saved); }

void MeanScoreClassifier::finalize(int layer, int head, const Thresholds& thresholds, HeadVerdict& verdict) const {
  const double score = means_.mean(layer, head);
  put_score(verdict.scores, score_.c_str(), score);
  if (!label_ || std::isnan(score)) return;
  const double threshold = thresholds.at(score_);
  if (label_->strict ? score > threshold : score >= threshold) verdict.labels.push_back(label_->label);
}

}  // namespace headscan
