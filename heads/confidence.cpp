// confidence: mean max_j A[i, j] over all queries (Voita et al. 2019).
#include <torch/torch.h>

#include "heads/mean_score.h"
#include "heads/registry.h"
#include "heads/row_block.h"
#include "heads/row_summary.h"

namespace headscan {
namespace {

class ConfidenceClassifier : public MeanScoreClassifier {
 public:
  ConfidenceClassifier() : MeanScoreClassifier(HeadType{{{"confidence", "mean max_j A[i,j]"}}, "", {}, "Voita et al. 2019"}) {}

  void observe(int layer, const at::Tensor& attention, const BatchContext& context) override {
    RowSummary local;
    means_.add(layer, row_summary(layer, attention, context, local).max,
               block_rows(context.queries, row_block(attention, context)), context.sums);
  }
};

}  // namespace

std::unique_ptr<HeadClassifier> make_confidence_classifier() {
  return std::make_unique<ConfidenceClassifier>();
}

}  // namespace headscan
