// previous_token: mean A[i, i-1] over content queries i >= 1 (Olsson et al. 2022).
#include <torch/torch.h>

#include "heads/mean_score.h"
#include "heads/registry.h"
#include "heads/row_block.h"

namespace headscan {
namespace {

class PreviousTokenClassifier : public MeanScoreClassifier {
 public:
  PreviousTokenClassifier()
      : MeanScoreClassifier(HeadType{{{"previous_token", "mean A[i,i-1] over queries i ≥ 1"}},
                                     "previous-token",
                                     {{"previous_token", 0.5}},
                                     "Olsson et al. 2022",
                                     "#332288",
                                     "prev",
                                     /*primary_rank=*/4}) {}

  void observe(int layer, const at::Tensor& attention, const BatchContext& context) override {
    // A[i, i-1] for the block's queries i ≥ 1.
    const OffsetWeights previous = weights_at_offset(attention, row_block(attention, context), /*offset=*/-1);
    if (previous.empty()) return;
    means_.add(layer, previous.weights, positions(context.queries, previous.from, previous.to), context.sums);
  }
};

}  // namespace

std::unique_ptr<HeadClassifier> make_previous_token_classifier() {
  return std::make_unique<PreviousTokenClassifier>();
}

}  // namespace headscan
