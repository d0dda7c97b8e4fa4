#pragma once
// Where a query's token occurred before: the statistic behind induction, duplicate-token and
// induction_text scores (Olsson et al. 2022).

#include <cstdint>
#include <memory>

#include <ATen/core/Tensor.h>

#include "heads/classifier.h"
#include "heads/mean_score.h"

namespace headscan {

// [B, T, T] bool: entry [b, i, s] is true when s < i holds the same non-special token as query i
// (both real tokens, i a query).
at::Tensor earlier_occurrences(const BatchContext& context);

// [B, T, T] bool: entry [b, i, j] is true when j = s + 1 for an earlier occurrence s < i - 1 of
// query i's token: the key an induction head attends to ("the token after the last time").
at::Tensor induction_targets(const at::Tensor& occurrences);

// Base of the classifiers whose per-query value is the attention on a set of target keys,
// sum_j A[i, j] over targets, averaged over queries that have at least one target. Targets
// depend on the batch only, so they are computed once per batch and reused for every layer.
class TargetAttentionClassifier : public MeanScoreClassifier {
 public:
  using MeanScoreClassifier::MeanScoreClassifier;
  void observe(int layer, const at::Tensor& attention, const BatchContext& context) override;

 protected:
  // [B, T, T] bool targets for the batch.
  virtual at::Tensor targets(const BatchContext& context) const = 0;

 private:
  struct Cache;
  std::shared_ptr<Cache> cache_;
};

}  // namespace headscan
