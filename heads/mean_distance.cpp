// mean_distance: mean over queries of sum_j A[i, j] * |i - j|, in tokens.
#include <torch/torch.h>

#include "heads/mean_score.h"
#include "heads/registry.h"
#include "heads/row_block.h"
#include "heads/row_summary.h"

namespace headscan {
namespace {

class MeanDistanceClassifier : public MeanScoreClassifier {
 public:
  MeanDistanceClassifier() : MeanScoreClassifier(HeadType{{{"mean_distance", "mean Σ_j A[i,j]·|i−j| (tokens)"}}}) {}

  void observe(int layer, const at::Tensor& attention, const BatchContext& context) override {
    RowSummary local;
    // A distance within a window of T tokens is at most T - 1.
    means_.add(layer, row_summary(layer, attention, context, local).distance,
               block_rows(context.queries, row_block(attention, context)), context.sums,
               static_cast<double>(attention.size(-1) - 1));
  }
};

}  // namespace

std::unique_ptr<HeadClassifier> make_mean_distance_classifier() {
  return std::make_unique<MeanDistanceClassifier>();
}

}  // namespace headscan
