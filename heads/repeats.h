#pragma once
// Where a query's token occurred before: the statistic behind induction, duplicate-token and
// induction_text scores (Olsson et al. 2022).

#include <cstdint>
#include <map>
#include <memory>
#include <utility>

#include <ATen/core/Tensor.h>

#include "heads/classifier.h"
#include "heads/mean_score.h"

namespace headscan {

// For the queries i = first_row + q of a row block of `rows` queries (heads/row_block.h):
// [B, Q, T] bool, entry [b, q, s] true when s < i holds the same non-special token as query i
// (both real tokens, i a query). The whole [B, T, T] with first_row 0 and rows T.
at::Tensor earlier_occurrences(const BatchContext& context, std::int64_t first_row, std::int64_t rows);

// [B, Q, T] bool from the occurrences of the block's queries i = first_row + q: entry [b, q, j] is
// true when j = s + 1 for an earlier occurrence s < i - 1 of query i's token: the key an induction
// head attends to ("the token after the last time").
at::Tensor induction_targets(const at::Tensor& occurrences, std::int64_t first_row);

// Base of the classifiers whose per-query value is the attention on a set of target keys,
// sum_j A[i, j] over targets, averaged over queries that have at least one target. Targets
// depend on the batch only, so each row block's are computed once per batch and reused for every
// layer.
class TargetAttentionClassifier : public MeanScoreClassifier {
 public:
  using MeanScoreClassifier::MeanScoreClassifier;
  void observe(int layer, const at::Tensor& attention, const BatchContext& context) override;

 protected:
  // [B, Q, T] bool targets of the queries first_row .. first_row + rows − 1.
  virtual at::Tensor targets(const BatchContext& context, std::int64_t first_row, std::int64_t rows) const = 0;

 private:
  struct BlockTargets;
  struct Cache;
  std::shared_ptr<Cache> cache_;
};

}  // namespace headscan
