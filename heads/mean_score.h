#pragma once
// Base of the classifiers whose score is one per-query mean (previous_token, first_token,
// entropy, confidence, mean_distance, self), optionally labelled at a threshold. Subclasses
// compute the per-query values in observe() and add them to `means_`.

#include "heads/classifier.h"
#include "heads/head_means.h"

namespace headscan {

// How a type with a label compares its score with the threshold of the score's name.
// Labels of a type that is HeadType::causal_only are given only to heads of causal models.
struct LabelRule {
  bool strict = false;  // label when score > threshold (else score >= threshold)
};

class MeanScoreClassifier : public HeadClassifier {
 public:
  // The mean is type.name(); when type.label is set, heads are labelled by `rule`.
  MeanScoreClassifier(HeadType type, LabelRule rule = {}, BatchSource source = BatchSource::corpus);

  HeadType type() const override { return type_; }
  BatchSource source() const override { return source_; }
  void begin(const ModelShape& shape) override;
  nlohmann::json save() const override;
  void merge(const nlohmann::json& saved) override;
  void finalize(int layer, int head, const Thresholds& thresholds, HeadVerdict& verdict) const override;

 protected:
  HeadMeans means_;

 private:
  HeadType type_;
  LabelRule rule_;
  BatchSource source_;
  bool causal_ = true;
};

}  // namespace headscan
