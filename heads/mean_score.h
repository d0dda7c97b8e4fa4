#pragma once
// Base of the classifiers whose score is one per-query mean (previous_token, first_token,
// entropy, confidence, mean_distance, self), optionally labelled at a threshold. Subclasses
// compute the per-query values in observe() and add them to `means_`.

#include <optional>
#include <string>

#include "heads/classifier.h"
#include "heads/head_means.h"

namespace headscan {

struct ScoreLabel {
  std::string label;          // e.g. "previous-token"
  double threshold;           // default; heads.json and --threshold use the score's name
  bool strict;                // label when score > threshold (else score >= threshold)
  bool causal_only = false;   // label only heads of causal models
};

class MeanScoreClassifier : public HeadClassifier {
 public:
  MeanScoreClassifier(std::string score, std::optional<ScoreLabel> label,
                      BatchSource source = BatchSource::corpus);

  std::string name() const override { return score_; }
  Thresholds default_thresholds() const override;
  bool wants_corpus() const override { return source_ == BatchSource::corpus; }
  bool wants_probes() const override { return source_ == BatchSource::probe; }
  void begin(const ModelShape& shape) override;
  nlohmann::json save() const override;
  void merge(const nlohmann::json& saved) override;
  void finalize(int layer, int head, const Thresholds& thresholds, HeadVerdict& verdict) const override;

 protected:
  HeadMeans means_;

 private:
  std::string score_;
  std::optional<ScoreLabel> label_;
  BatchSource source_;
  bool causal_ = true;
};

}  // namespace headscan
