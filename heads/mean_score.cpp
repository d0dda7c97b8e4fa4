#include "heads/mean_score.h"

#include <cmath>

#include <nlohmann/json.hpp>

namespace headscan {

MeanScoreClassifier::MeanScoreClassifier(std::string score, std::optional<ScoreLabel> label, BatchSource source)
    : score_(std::move(score)), label_(std::move(label)), source_(source) {}

void MeanScoreClassifier::begin(const ModelShape& shape) {
  means_.resize(shape);
  causal_ = shape.causal;
}

Thresholds MeanScoreClassifier::default_thresholds() const {
  if (!label_) return {};
  return {{score_, label_->threshold}};
}

nlohmann::json MeanScoreClassifier::save() const { return means_.save(); }

void MeanScoreClassifier::merge(const nlohmann::json& saved) { means_.merge(saved); }

void MeanScoreClassifier::finalize(int layer, int head, const Thresholds& thresholds, HeadVerdict& verdict) const {
  const double score = means_.mean(layer, head);
  put_score(verdict.scores, score_.c_str(), score);
  if (!label_ || std::isnan(score) || (label_->causal_only && !causal_)) return;
  const double threshold = thresholds.at(score_);
  if (label_->strict ? score > threshold : score >= threshold) verdict.labels.push_back(label_->label);
}

}  // namespace headscan
