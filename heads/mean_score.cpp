#include "heads/mean_score.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "heads/saved_statistics.h"

namespace headscan {

MeanScoreClassifier::MeanScoreClassifier(HeadType type, LabelRule rule, BatchSource source)
    : type_(std::move(type)), rule_(rule), source_(source) {}

void MeanScoreClassifier::begin(const ModelShape& shape) {
  means_.resize(shape);
  causal_ = shape.causal;
}

nlohmann::json MeanScoreClassifier::save() const { return means_.save(); }

void MeanScoreClassifier::merge(const nlohmann::json& saved) { means_.merge(saved, saved_statistics_path(name())); }

void MeanScoreClassifier::finalize(int layer, int head, const Thresholds& thresholds, HeadVerdict& verdict) const {
  const std::string& name = type_.name();
  const double score = means_.mean(layer, head);
  put_score(verdict.scores, name.c_str(), score);
  if (type_.label.empty() || std::isnan(score) || (type_.causal_only && !causal_)) return;
  const double threshold = thresholds.at(name);
  if (rule_.strict ? score > threshold : score >= threshold) verdict.labels.push_back(type_.label);
}

}  // namespace headscan
