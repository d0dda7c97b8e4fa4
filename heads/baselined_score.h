#pragma once
// Base of the head types whose mean comes with its chance level over the same queries (rare_word,
// separator, punctuation): it saves and merges {"means", "baseline"} (the shard reader's
// "baselined" layout, heads/statistic_limits.cpp), writes the score `<name>_baseline`, and labels a
// head when its score > the threshold `<name>` and ≥ the baseline + the threshold `<name>_margin`:
// where most keys are of the kind, an argmax or a weight lands on one by chance. Subclasses add the
// per-query values to `means_` and their chance levels to `baseline_`.

#include "heads/head_means.h"
#include "heads/mean_score.h"

namespace headscan {

class BaselinedScoreClassifier : public MeanScoreClassifier {
 public:
  // `type`: the score first, then `<name>_baseline`; its label and thresholds.
  explicit BaselinedScoreClassifier(HeadType type);

  HeadType type() const override { return type_; }
  void begin(const ModelShape& shape) override;
  nlohmann::json save() const override;
  void merge(const nlohmann::json& saved) override;
  void finalize(int layer, int head, const Thresholds& thresholds, HeadVerdict& verdict) const override;

 protected:
  QueryMean baseline_;

 private:
  HeadType type_;
};

}  // namespace headscan
